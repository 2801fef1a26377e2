"""Reading what the GPU ran inside the entrypoint: only the candidate's own kernels may compute.

The worker's trace (env/worker/device_trace.py) lists every kernel, copy and memset of a checked
call. A kernel passes when its name is one of the kernels the candidate built (its Triton kernels, the
entries of the modules it built through the loader), as named in the code the judge inspected itself.
Anything else (ATen, cuBLAS, cuDNN, CUTLASS, a torch.compile graph) did arithmetic that is not the
candidate's, however it was reached. Two device activities are allowed besides: memsets and ATen's fill
kernel (initialising an accumulator with ``torch.zeros`` is not computing the answer), and small
host-to-device copies (a table of offsets). A host-to-device copy of more than ``HOST_TO_DEVICE_BYTES``
carried data the host computed; a device-to-host copy of as much gave the host data to compute on (the
run-time policy bounds what Python reads, but a CUDA extension's C++ copies past it).

Own kernels may not take a library's name: a Triton function called like a cuBLAS kernel would
otherwise make every cuBLAS launch look like the candidate's.

A sample of timed calls is traced too (judge/timed_trace.py), and answers to the same rules and two more
(``timed_violations``): every kernel a timed call ran must have run in a checked call, and every timed call
must launch a kernel of the candidate's. Their verdict is given after the timing (``judge_after_timing``),
with the checked calls made since the first verdict (the bench check after each timing window).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from warpgym.env.common.kernel_names import is_fill
from warpgym.env.protocol.violations import Violation, violation

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

HOST_TO_DEVICE_BYTES = 64 << 10
"""Host-to-device bytes a call may copy (small index tables); a larger copy carries a host-side answer."""

RESERVED_NAMES = re.compile(
    r"^((at|c10|cutlass|cub|thrust|std|pytorch_flash|cudnn|cublas|cublasLt|gemvx|flash|fmha|"
    r"anonymous_namespace)::|void$|nvjet|sm\d+_|"
    r"cutlass|cudnn|cublas|cutensor|cusparse|cufft|curand|xmma|fmha_|gemv2|gemvx|splitKreduce|"
    r"triton_(poi|red|per|tem)_|nccl|ampere_|volta_|turing_|spin_kernel|scrub_kernel$)")
"""Names of library and compiler-generated kernels (PyTorch's namespaces, NVIDIA's libraries, Inductor's
Triton kernels, NCCL, the worker's own sentinel and scrub) that a candidate's own kernel may not take: a
trace names a kernel only by its qualified name, so an own kernel with a library's name would hide that
library."""

_QUALIFIED = re.compile(r"^(?:void\s+)?([\w:$.~]+)")


def base_name(name: str) -> str:
    """The kernel's qualified name without its template arguments and parameter list, as a trace shows
    it (``void ns::kernel<int>(float*)`` -> ``ns::kernel``) or as PTX declares it."""
    name = name.strip().replace("(anonymous namespace)", "anonymous_namespace")
    match = _QUALIFIED.match(name)
    return match.group(1) if match else name


def demangled_base(symbol: str) -> str:
    """The qualified name of an Itanium-mangled symbol's function (``_ZN2ns6kernelEv`` -> ``ns::kernel``,
    ``_Z6kernelPf`` -> ``kernel``); an unmangled symbol (``extern "C"``, Triton) as it is."""
    if not symbol.startswith("_Z"):
        return symbol
    rest, parts = symbol[2:], []
    nested = rest.startswith("N")
    if nested:
        rest = rest[1:]
    while rest and rest[0].isdigit():
        digits = re.match(r"\d+", rest)
        assert digits is not None
        length = int(digits.group())
        start = len(digits.group())
        parts.append(rest[start:start + length])
        rest = rest[start + length:]
        if not nested:
            break
    return "::".join(parts) if parts else symbol


def base_names(symbols: Iterable[str]) -> set[str]:
    """The base names (``base_name``) of kernel symbols, mangled or not: what a trace's names are matched
    against."""
    return {base_name(demangled_base(s)) for s in symbols}


def reserved(names: Iterable[str]) -> list[str]:
    """The candidate's kernel names that take a library's name."""
    return sorted({n for n in names if RESERVED_NAMES.match(base_name(demangled_base(n)))})


def allowed_library(name: str) -> bool:
    """Library kernels that only initialise memory: ATen's fill (torch.zeros / full / fill_)."""
    return is_fill(name)


def device_violations(traces: Iterable[tuple[str, Mapping[str, Any]]], own_kernels: Iterable[str],
                      entrypoint: str, allow_library: bool = False) -> list[Violation]:
    """Violations in the traced calls (case, trace) of one candidate; ``own_kernels`` are the symbols of
    every kernel it built. A foreign kernel is named once, with the first case it ran in and how often it
    ran over all of them (none is, with ``allow_library``: KernelBench's rule, PyTorch allowed); a large
    host copy by the first call that made one."""
    own = base_names(own_kernels)
    foreign: Counter[str] = Counter()
    first_case: dict[str, str] = {}
    violations = []
    for case, trace in traces:
        if trace.get("error"):
            return [Violation("device-trace", f"{trace['error']} while running {entrypoint}() on {case}: "
                              "what ran on the GPU could not be checked")]
        if trace.get("sentinels", 0) < 2:
            return [Violation("device-trace", f"the CUDA activity trace of {entrypoint}() on {case} was "
                              "interrupted (the profiler was stopped or replaced during the call)")]
        unordered = [str(n) for n in trace.get("unordered") or []]
        if unordered and not any(v.code == "device-unordered-kernel" for v in violations):
            violations.append(Violation(
                "device-unordered-kernel",
                f"`{unordered[0][:200]}` ran on the GPU at the same time as the harness's own kernel that "
                f"opens or closes {entrypoint}()'s window on {case}: work on a stream the caller's stream "
                "does not wait for is neither timed nor checked in order (launch on the current stream, or "
                "make the streams wait for each other with events)"))
        host_bytes, read_bytes = 0, 0
        limit = HOST_TO_DEVICE_BYTES * max(1, int(trace.get("calls") or 1))
        for activity in trace.get("activities", []):
            kind, name = activity.get("kind"), str(activity.get("name", ""))
            mine = allow_library or base_name(name) in own or allowed_library(name)
            if kind == "kernel" and not mine:
                foreign[name] += int(activity.get("count") or 1)
                first_case.setdefault(name, case)
            elif kind == "memcpy" and activity.get("copy") == "HtoD":
                host_bytes += int(activity.get("nbytes") or 0)
            elif kind == "memcpy" and activity.get("copy") == "DtoH":
                read_bytes += int(activity.get("nbytes") or 0)
        if host_bytes > limit and not any(v.code == "device-host-copy" for v in violations):
            violations.append(Violation(
                "device-host-copy",
                f"{host_bytes} bytes were copied from the host to the GPU inside {entrypoint}() on {case}: "
                f"data computed on the host is not a kernel's work (at most {HOST_TO_DEVICE_BYTES} bytes, "
                "for small tables)"))
        if read_bytes > limit and not any(v.code == "device-host-read" for v in violations):
            violations.append(Violation(
                "device-host-read",
                f"{read_bytes} bytes were copied from the GPU to the host inside {entrypoint}() on {case}: "
                "data the host reads is data the host can compute on (at most "
                f"{HOST_TO_DEVICE_BYTES} bytes, for sizes and flags)"))
    named = []
    for name, count in foreign.most_common(5):
        times = f" ({count} launches)" if count > 1 else ""
        named.append(Violation(
            "device-library-kernel",
            f"`{name[:200]}` ran on the GPU inside {entrypoint}() on {first_case[name]}{times}: only your "
            "own kernels may compute (no PyTorch, cuBLAS, cuDNN or other library kernels, however they are "
            "reached)"))
    if len(foreign) > 5:
        named.append(Violation("device-library-kernel", f"... and {len(foreign) - 5} other kernels that "
                               "are not yours"))
    return named + violations


def idle_calls(traces: Iterable[tuple[str, Mapping[str, Any]]],
               own_kernels: Iterable[str]) -> list[Violation]:
    """A traced call that ran none of the candidate's kernels (for a CUDA extension, whose launches only the
    device sees): the first such case, as a violation."""
    own = base_names(own_kernels)
    for case, trace in traces:
        if trace.get("error"):
            continue
        if not any(a.get("kind") == "kernel" and base_name(str(a.get("name", ""))) in own
                   for a in trace.get("activities", [])):
            return [violation("no-kernel-launched", kernel=f"a kernel of its CUDA extension (on {case})",
                              task="a CUDA extension candidate")]
    return []


def kernels_seen(traces: Iterable[tuple[str, Mapping[str, Any]]]) -> Counter[str]:
    """How often each kernel ran over the traced calls."""
    seen: Counter[str] = Counter()
    for _, trace in traces:
        for activity in trace.get("activities", []):
            if activity.get("kind") == "kernel":
                seen[str(activity.get("name", ""))[:200]] += int(activity.get("count") or 1)
    return seen


def own_kernels(ev: Evaluation) -> tuple[list[str], list[Violation]]:
    """The kernels the candidate built that may stand for its own work, and a violation for those that
    took a reserved name."""
    own = [k.name for k in ev.result.kernels]
    taken = reserved(own)
    found = [violation("reserved-kernel-name", names=", ".join(taken))] if taken else []
    return [k for k in own if k not in taken], found


def own_share(traces: Iterable[tuple[str, Mapping[str, Any]]], own_kernels: Iterable[str]) -> float | None:
    """The share of kernel time on the device spent in the candidate's own kernels; None without times."""
    own = base_names(own_kernels)
    mine = total = 0.0
    for _, trace in traces:
        for activity in trace.get("activities", []):
            if activity.get("kind") == "kernel":
                us = float(activity.get("us") or 0)
                total += us
                mine += us if base_name(str(activity.get("name", ""))) in own else 0.0
    return mine / total if total > 0 else None


def judge(ev: Evaluation) -> bool:
    """The device's evidence on every traced call of an evaluation, once its kernels are known; False
    (and the candidate not accepted) when something that is not the candidate's computed."""
    ev.traces_judged = len(ev.device_traces)
    result = ev.result
    if ev.options.allow_torch and ev.task.model is not None and not ev.device_traces:
        result.skipped_checks.append("the share of GPU time in the candidate's own kernels cannot be "
                                     "measured here: there is no device trace without a GPU")
    if not ev.device_traces:
        return True
    own, found = own_kernels(ev)
    if ev.options.allow_torch:
        result.own_gpu_share = own_share(ev.device_traces, own)
    found += device_violations(ev.device_traces, own, ev.task.entrypoint, ev.options.allow_torch)
    if ev.extensions:
        found += idle_calls(ev.device_traces, own)
    result.device_activity = {"traced_calls": sum(1 for _, t in ev.device_traces if not t.get("error")),
                              "kernels": dict(kernels_seen(ev.device_traces).most_common(20)),
                              "seconds": round(sum(float(t.get("seconds") or 0) for _, t in ev.device_traces),
                                               3)}
    if not found:
        return True
    result.violations.extend(found)
    result.correct = False
    return False
