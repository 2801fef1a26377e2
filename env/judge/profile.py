"""Executed instruction counts (Nsight Compute) and memory checks (compute-sanitizer) on a GPU.

Static PTX/SASS shows what a kernel *could* run; this shows what it *did* run. The candidate
runs once, in a fresh process under ``ncu --page source --print-source sass``, which prints one
CSV row per SASS instruction with its executed count (warp level) and its predicated-on thread
count; rows are mapped to instruction families (``toolchain.families.FAMILIES``) per kernel. A
required feature whose instructions are compiled in but never executed is dead code, and fails.

The parsing half (``parse_ncu_source_csv``, ``family_counts``, ``parse_memcheck``) needs no GPU.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpgym.env.judge.device_evidence import base_name, demangled_base
from warpgym.env.toolchain.families import FAMILIES

NCU_METRICS = "inst_executed,thread_inst_executed_true"
MAX_PROFILED_LAUNCHES = 16


class ProfileError(RuntimeError):
    """Nsight Compute is missing, failed, or printed nothing we could read."""


class ToolMissing(ProfileError):
    """The tool is not installed on this machine: nothing about the candidate (which a failed run may be)."""


@dataclass
class SassRow:
    address: str
    source: str
    opcode: str
    executed: int | None
    """Warp-level executions (``inst_executed``), whatever the predicate."""
    threads: int | None
    """Thread executions with the predicate true (``thread_inst_executed_true``)."""

    @property
    def ran(self) -> int:
        """Executions that did something: warp count, or 0 when no thread had its predicate on."""
        if self.executed is None:
            return 0
        if self.threads is not None and self.threads == 0:
            return 0
        return self.executed


@dataclass
class KernelProfile:
    name: str
    rows: list[SassRow] = field(default_factory=list)

    def families(self) -> dict[str, int]:
        return family_counts(self.rows)


@dataclass
class Profile:
    kernels: list[KernelProfile]
    command: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""
    run: DriverRun | None = None
    """The confined call behind it: what the policy and the sandbox saw while the profiler watched."""
    reprinted: int = 0
    """Launches the source page printed twice and that count once (``collapse_reprints``)."""

    def families(self) -> dict[str, int]:
        """Executed count per family, summed over every profiled launch."""
        totals = {name: 0 for name in FAMILIES}
        for k in self.kernels:
            for name, n in k.families().items():
                totals[name] += n
        return totals


# ---------------------------------------------------------------------------------------- parsing
_PRED = re.compile(r"^\s*\{?\s*@!?U?P(?:T|\d+)\s+")
_PROFILING = re.compile(r'==PROF==\s+Profiling\s+"([^"]+)"')
_KERNEL_LINE = re.compile(r"^\s*([\w$.:<>~]+)\s*(?:\([^)]*\))?\s*\(\d+,\s*\d+,\s*\d+\)x\(\d+,\s*\d+,\s*\d+\)")


def sass_opcode(source: str) -> str:
    """The opcode of one SASS line as ncu prints it: ``@!P0 HGMMA.64x128x16.F32 R24, ...`` gives
    ``HGMMA.64x128x16.F32``."""
    text = _PRED.sub("", source.strip())
    text = text.lstrip("{ ").strip()
    return text.split(None, 1)[0].rstrip(";") if text else ""


def _number(text: str) -> int | None:
    text = text.strip().replace(",", "").replace("\u202f", "")
    if not text or text in ("-", "n/a", "N/A"):
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


def _columns(header: list[str]) -> dict[str, int] | None:
    """Which column is which, by name (ncu labels them by metric name or by a display name)."""
    names = [h.strip().strip('"').lower() for h in header]
    cols: dict[str, int] = {}
    for i, n in enumerate(names):
        if "address" in n and "address" not in cols:
            cols["address"] = i
        elif n == "source" or (n.startswith("source") and "source" not in cols):
            cols["source"] = i
        elif n in ("inst_executed", "instructions executed", "warp instructions executed") or (
            "inst_executed" in n and "thread" not in n
        ):
            cols["executed"] = i
        elif n in ("thread_inst_executed_true", "predicated-on thread instructions executed") or (
            "thread" in n and ("true" in n or "predicated-on" in n)
        ):
            cols["threads"] = i
    return cols if {"address", "source", "executed"} <= cols.keys() else None


def parse_ncu_source_csv(text: str) -> list[KernelProfile]:
    """Kernels and their SASS rows from ``ncu --page source --csv --print-source sass`` output.

    Each profiled launch prints a header row (``Address``, ``Source``, metric columns) and one
    row per instruction. The launch's name comes from the ``==PROF== Profiling "NAME"`` line
    that precedes it, a ``NAME (grid)x(block)`` line, or a ``Kernel Name`` row, in that order
    of precedence; unknown launches are named ``kernel_<n>``.
    """
    kernels: list[KernelProfile] = []
    announced: list[str] = []
    pending: str | None = None
    cols: dict[str, int] | None = None
    current: KernelProfile | None = None
    used = 0
    for line in text.splitlines():
        if m := _PROFILING.search(line):
            announced.append(m.group(1))
            continue
        if line.startswith("==") or not line.strip():
            continue
        try:
            fields = next(csv.reader(io.StringIO(line)))
        except (csv.Error, StopIteration):
            fields = []
        header = _columns(fields) if len(fields) >= 3 else None
        if header is not None:
            cols = header
            if pending is not None:
                name = pending
            elif used < len(announced):
                name = announced[used]
            else:
                name = f"kernel_{len(kernels)}"
            used += 1
            pending = None
            current = KernelProfile(name)
            kernels.append(current)
            continue
        if len(fields) >= 2 and "kernel" in fields[0].lower() and "name" in fields[0].lower():
            pending = fields[1].strip()
            current = None
            continue
        if cols is not None and current is not None and len(fields) > max(cols.values()):
            source = fields[cols["source"]]
            opcode = sass_opcode(source)
            if not opcode or not opcode[0].isalpha():
                continue
            current.rows.append(
                SassRow(
                    address=fields[cols["address"]].strip(),
                    source=source.strip(),
                    opcode=opcode,
                    executed=_number(fields[cols["executed"]]),
                    threads=_number(fields[cols["threads"]]) if "threads" in cols else None,
                )
            )
            continue
        if m := _KERNEL_LINE.match(line) if not fields or len(fields) < 3 else None:
            pending = m.group(1)
            current = None
    return [k for k in kernels if k.rows]


def collapse_reprints(kernels: list[KernelProfile], launches: int | None,
                      names: list[str] | None = None) -> tuple[list[KernelProfile], int]:
    """The profiled launches with Nsight Compute's reprints taken out, and how many were taken out.

    Under kernel replay, Nsight Compute's source page prints some launches twice in a row, identical to the
    address and the count (on an H100: each of a three-kernel CUDA module's and of torch's, not the attention
    forward's; under application replay, none): counting both doubles every executed count of that kernel.
    Only a block that repeats the block just before it exactly is dropped, and only while more blocks remain
    than the call made launches (the worker's own count). Where the worker also sent the launches' names in
    order, the blocks are matched to them, so that of A, A, B, B from three launches A, A, B the second B goes
    (by position alone the second A would); two real launches of one kernel stay two."""
    if launches is None or len(kernels) <= launches:
        return kernels, 0
    if names is not None and len(names) == launches:
        matched = _matched(kernels, names)
        if matched is not None:
            return matched, len(kernels) - len(matched)
    extra = len(kernels) - launches
    kept: list[KernelProfile] = []
    for k in kernels:
        if extra and kept and _repeats(k, kept[-1]):
            extra -= 1
            continue
        kept.append(k)
    return kept, len(kernels) - len(kept)


def _repeats(block: KernelProfile, before: KernelProfile) -> bool:
    return block.name == before.name and block.rows == before.rows


def _matched(kernels: list[KernelProfile], names: list[str]) -> list[KernelProfile] | None:
    """The blocks that stand for the launches ``names``, in order: a block is kept when its kernel is the
    next launch's, else dropped as a reprint if it repeats the block before it exactly; None when the blocks
    cannot be read that way (a name printed otherwise, a block neither launched nor repeated)."""
    def base(name: str) -> str:
        return base_name(demangled_base(name))

    wanted = [base(n) for n in names]
    kept: list[KernelProfile] = []
    for k in kernels:
        if len(kept) < len(wanted) and base(k.name) == wanted[len(kept)]:
            kept.append(k)
        elif not (kept and _repeats(k, kept[-1])):
            return None
    return kept if len(kept) == len(wanted) else None


def family_counts(rows: Iterable[SassRow]) -> dict[str, int]:
    """Executed (predicated-on) instructions per family."""
    out = {name: 0 for name in FAMILIES}
    for row in rows:
        ran = row.ran
        if not ran:
            continue
        for name, fam in FAMILIES.items():
            if fam.sass.search(row.opcode):
                out[name] += ran
    return out


@dataclass
class MemcheckReport:
    ok: bool
    errors: int
    text: str
    run: DriverRun | None = None


_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")


def parse_memcheck(text: str) -> MemcheckReport:
    """compute-sanitizer's verdict: the error summary count and the first reports, trimmed."""
    m = _ERROR_SUMMARY.search(text)
    errors = int(m.group(1)) if m else -1
    lines = [ln for ln in text.splitlines() if ln.startswith("=========")]
    keep: list[str] = []
    for ln in lines:
        if len("\n".join(keep)) > 3000:
            keep.append("========= [...]")
            break
        if re.search(r"Host Frame|^=========\s+in \S+\.so|libcuda|libtorch|python", ln):
            continue
        keep.append(ln)
    return MemcheckReport(errors == 0, errors, "\n".join(keep))


# ---------------------------------------------------------------------------------------- running
def ncu_path() -> str | None:
    """Nsight Compute's command line: PATH, CUDA_HOME, /usr/local/cuda, /opt/nvidia/nsight-compute."""
    found = shutil.which("ncu")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and Path(home, "bin", "ncu").is_file():
            return str(Path(home, "bin", "ncu"))
    versions = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return versions[-1] if versions else None


def sanitizer_path() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and Path(home, "bin", "compute-sanitizer").is_file():
            return str(Path(home, "bin", "compute-sanitizer"))
    return None


def ncu_source_options(metrics: str = NCU_METRICS) -> list[str]:
    """Nsight Compute's options for the per-instruction counts the judge reads (kernel filter and port aside):
    clocks left alone, every process, mangled names, at most ``MAX_PROFILED_LAUNCHES``, the source page as
    CSV with its SASS."""
    return ["--clock-control", "none", "--target-processes", "all", "--kernel-name-base", "mangled",
            "--launch-count", str(MAX_PROFILED_LAUNCHES), "--metrics", metrics, "--page", "source", "--csv",
            "--print-source", "sass"]


def kernel_filter(names: Iterable[str]) -> str | None:
    """An anchored ``--kernel-name`` regex for exactly these (mangled) kernel names."""
    names = sorted({n for n in names if n})
    if not names:
        return None
    return "regex:^(" + "|".join(re.escape(n) for n in names) + ")$"


@dataclass
class DriverRun:
    """One call of the candidate under a profiler, in a confined worker with the run-time policy on."""

    log: str
    """What the tool wrote to its own log file (never the candidate's output, which it cannot forge)."""
    command: list[str]
    seconds: float
    returned: bool
    """The entrypoint returned normally."""
    error: str = ""
    forbidden_ops: dict[str, int] = field(default_factory=dict)
    tampered: list[str] = field(default_factory=list)
    incidents: list[list[str]] = field(default_factory=list)
    """[code, message] pairs the sandbox refused (env/worker/audit.py)."""
    sandbox: dict[str, Any] | None = None
    reply: Any = None
    """The worker's ``RunReply`` to the profiled call (its outputs and launch counts); None without one."""

    @property
    def launches(self) -> int | None:
        """Kernel launches the candidate made in the call (Triton's and the loader's); None without one."""
        if self.reply is None or not self.reply.ok:
            return None
        return self.reply.launches + self.reply.loader_launches

    @property
    def launch_names(self) -> list[str] | None:
        """Those launches' kernel names in order; None without a reply or where the worker kept too few."""
        if self.launches is None:
            return None
        return self.reply.launch_names

    def findings(self) -> bool:
        """The policy or the sandbox caught something: that is the verdict, whatever the tool printed."""
        return bool(self.forbidden_ops or self.tampered or self.incidents)


def _run_driver(
    tool: list[str],
    task_id: str,
    source: str,
    case: dict[str, Any],
    seed: int,
    distribution: str,
    target: str,
    timeout: float,
    extra_env: dict[str, str] | None = None,
    device: str = "cuda",
    attachments: Mapping[str, str] | None = None,
    model: Any = None,
    role: int | None = None,
    salt: int = 0,
    tcp_ports: tuple[int, int] | None = None,
    network_off: str | None = None,
) -> DriverRun:
    """Start a worker behind ``tool`` (its confinement, audit hook and policy apply to itself inside the
    tool), import the candidate for the target, call it once on inputs the judge drew, and let it exit so
    the tool writes its report to a file of the judge's. ``model`` (a ``messages.ModelCall`` with the
    parameters) builds a module-class candidate for the case. The inputs are ``Sampler(seed, distribution,
    role=role, salt=salt)``'s, drawn here: an evaluation passes a seed it derived (judge/seeds.py)."""
    from warpgym.env.judge.plan import params
    from warpgym.env.judge.pool import Worker, WorkerError
    from warpgym.env.protocol import messages as m
    from warpgym.tasks import Sampler, get_task

    task = get_task(task_id)
    with tempfile.TemporaryDirectory(prefix="warpgym-profile-") as tmp:
        log_path = Path(tmp) / "tool.log"
        worker = Worker(device, "run", sandbox=_sandbox(tcp_ports, network_off),
                        wrapper=[*tool, "--log-file", str(log_path)], extra_env=extra_env)
        started = time.perf_counter()
        returned, error, reply = False, "", None
        forbidden: dict[str, int] = {}
        tampered: list[str] = []
        try:
            load = m.parse_reply("load", worker.request(m.LoadRequest(
                source=source, entrypoint=task.entrypoint, params=params(task), target=target,
                attachments=dict(attachments or {}), model=model is not None).wire(), timeout))
            if not load.ok:
                error = f"importing the candidate failed: {load.error}"
            else:
                inputs = task.make_inputs(case, Sampler(seed, distribution, device, role=role, salt=salt))
                request = m.RunRequest(inputs=inputs, model=model)
                reply = m.parse_reply("run", worker.request(request.wire(), timeout))
                del inputs
                returned, error = reply.ok, reply.error or ""
                forbidden, tampered = dict(reply.forbidden_ops), list(reply.tampered)
        except (WorkerError, m.ProtocolError) as exc:
            error = str(exc)
            if isinstance(exc, WorkerError) and exc.kind == "timeout":
                worker.stop()
                said = _tail(_read_bounded(log_path), 600) or "nothing"
                raise ProfileError(f"{Path(tool[0]).name} ran past {timeout:g} s; it was killed. "
                                   f"It had printed: {said}") from exc
        finally:
            worker.finish(timeout=min(timeout, 300.0))
        return DriverRun(log=_read_bounded(log_path), command=worker.command,
                         seconds=time.perf_counter() - started, returned=returned, error=error,
                         forbidden_ops=forbidden, tampered=tampered, incidents=worker.take_incidents(),
                         sandbox=worker.sandbox_report, reply=reply)


PROFILER_SANDBOX: dict[str, Any] | None = None
"""Overrides of the worker's sandbox settings under a profiler (None: the defaults, as for any worker)."""
NCU_CONNECTIONS = 4
"""Ports from ncu's ``--port`` on that its target may use: it listens there for the profiler."""


SANITIZER_NETWORK = ("no network namespace under compute-sanitizer, which reaches its target over loopback "
                     "TCP on a port of its own choosing; the audit hook still refuses sockets")
"""Why the worker behind compute-sanitizer has no network layer (on the H200 memcheck never finishes in a
network namespace, and finishes without one: scripts/ncu_probe.py --memcheck)."""


def _sandbox(tcp_ports: tuple[int, int] | None, network_off: str | None = None) -> dict[str, Any] | None:
    """The worker's sandbox overrides: ``PROFILER_SANDBOX``, and the TCP ports the tool reaches its target
    on (the worker then has no network namespace, and Landlock allows TCP on those ports only), or, with
    ``network_off`` (the reason), no network layer at all."""
    from warpgym.env.judge.pool import sandbox_turned_off

    if sandbox_turned_off():
        return None
    overrides = dict(PROFILER_SANDBOX or {})
    if tcp_ports is not None:
        overrides["tcp_ports"] = list(tcp_ports)
    if network_off is not None:
        overrides.setdefault("network", False)
        overrides.setdefault("off_reason", network_off)
    return overrides or None


def _free_port() -> int:
    """A TCP port nothing listens on now, with ``NCU_CONNECTIONS - 1`` after it below 65536."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return min(port, 65536 - NCU_CONNECTIONS)


MAX_TOOL_LOG_BYTES = 64 << 20


def _read_bounded(path: Path) -> str:
    """The tool's log, read without following a link and at most ``MAX_TOOL_LOG_BYTES``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        return os.read(fd, MAX_TOOL_LOG_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)


def profile_candidate(
    task_id: str,
    source: str,
    case: dict[str, Any],
    *,
    seed: int = 0,
    distribution: str = "normal",
    target: str = "sm_90a",
    kernels: Iterable[str] = (),
    timeout: float = 600.0,
    device: str = "cuda",
    attachments: Mapping[str, str] | None = None,
    model: Any = None,
    role: int | None = None,
    salt: int = 0,
) -> Profile:
    """Run the candidate once under Nsight Compute and count what each of its kernels executed.

    ``kernels`` (mangled names) restricts profiling to the candidate's own kernels, so input
    construction and library kernels are left out. Clocks are left alone (``--clock-control none``).
    """
    ncu = ncu_path()
    if ncu is None:
        raise ToolMissing("Nsight Compute (ncu) is not installed here")
    tool = [ncu, *ncu_source_options()]
    flt = kernel_filter(kernels)
    if flt:
        tool[1:1] = ["--kernel-name", flt]
    port = _free_port()
    tool[1:1] = ["--port", str(port), "--max-connections", str(NCU_CONNECTIONS)]
    run = _run_driver(tool, task_id, source, case, seed, distribution, target, timeout, device=device,
                      attachments=attachments, model=model, role=role, salt=salt,
                      tcp_ports=(port, port + NCU_CONNECTIONS - 1))
    dump = os.environ.get("WARPGYM_NCU_DUMP")
    if dump:  # a folder: keep ncu's raw output (parser fixtures, debugging)
        Path(dump).mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"\W", "_", task_id)
        Path(dump, f"{stem}.csv").write_text(run.log)
    profiled = parse_ncu_source_csv(run.log)
    if not profiled and not run.findings():
        why = run.error or _tail(run.log)
        names = ", ".join(kernels) or "any"
        raise ProfileError(f"ncu profiled no kernel of the candidate (names: {names}): {why}")
    profiled, reprinted = collapse_reprints(profiled, run.launches, run.launch_names)
    return Profile(profiled, run.command, run.seconds, run.log[-3000:], run, reprinted)


def memcheck_candidate(
    task_id: str,
    source: str,
    case: dict[str, Any],
    *,
    seed: int = 0,
    distribution: str = "normal",
    target: str = "sm_90a",
    timeout: float = 600.0,
    device: str = "cuda",
    attachments: Mapping[str, str] | None = None,
    model: Any = None,
    role: int | None = None,
    salt: int = 0,
) -> MemcheckReport:
    """Run the candidate once under compute-sanitizer memcheck; its findings are the feedback."""
    tool_path = sanitizer_path()
    if tool_path is None:
        raise ToolMissing("compute-sanitizer is not installed here")
    tool = [
        tool_path,
        "--tool",
        "memcheck",
        "--report-api-errors",
        "no",
        "--print-limit",
        "10",
        "--show-backtrace",
        "device",
    ]
    # Without PyTorch's caching allocator each tensor is its own allocation, so a write past the
    # end of an output is out of bounds for memcheck, not a write into a neighbour in a cached block.
    run = _run_driver(
        tool,
        task_id,
        source,
        case,
        seed,
        distribution,
        target,
        timeout,
        extra_env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
        device=device,
        attachments=attachments,
        model=model,
        role=role,
        salt=salt,
        network_off=SANITIZER_NETWORK,
    )
    report = parse_memcheck(run.log)
    report.run = run
    if report.errors < 0 and not run.findings():
        raise ProfileError(f"compute-sanitizer printed no summary: {run.error or _tail(run.log)}")
    return report


def _tail(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "[...]" + text[-limit:]
