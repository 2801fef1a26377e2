"""The loader for CUDA C++ and PTX candidate modules, on cuda-python.

A PTX task's candidate builds its kernels here: ``load_cuda`` compiles CUDA C++ (inline PTX
allowed) with NVRTC to PTX, then ptxas to a cubin; ``load_ptx`` assembles raw PTX with ptxas
(or leaves it to the driver's JIT). Compilation needs no GPU, so a candidate that builds its
modules at import is compiled, reported on and disassembled on any machine. Every module built
is recorded in ``REGISTRY`` with its PTX, cubin, compiler log, warnings and resource report,
so the harness sees each one; kernels are launched with torch tensors on the current PyTorch
stream. Without a GPU a launch is checked (arguments, block, shared memory, cluster) and then
refused with ``NoDeviceError``, which the harness reads as "compiled, not run here".
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from warpgym.env.judge.instructions import count_ptx, count_sass_opcodes, disassemble, sass_opcodes, tool

TARGETS: dict[str, tuple[int, int]] = {"sm_90a": (9, 0), "sm_100a": (10, 0)}
MAX_SHARED_PER_BLOCK = {"sm_90a": 232448, "sm_100a": 232448}
"""Opt-in shared memory per block (static + dynamic), bytes: 227 KB on H100/H200 and B200."""
DEFAULT_SHARED_LIMIT = 48 * 1024
"""Dynamic shared memory a block gets without raising the function's attribute."""
MAX_THREADS_PER_BLOCK = 1024
REGISTERS_PER_SM = 65536
PORTABLE_CLUSTER = 8
MAX_CLUSTER = 16


class LoaderError(RuntimeError):
    """Base of the loader's errors; the message is written for the candidate's author."""


class CompileError(LoaderError):
    """NVRTC or ptxas rejected the module. ``stage`` is ``nvrtc``, ``ptxas`` or ``driver``."""

    def __init__(self, stage: str, name: str, target: str, log: str) -> None:
        self.stage, self.name, self.target, self.log = stage, name, target, log
        super().__init__(f"{stage} failed to compile module {name!r} for {target}:\n{_trim(log, 6000)}")


class LaunchError(LoaderError):
    """A launch that cannot work (arguments, block, shared memory, cluster), or one the driver refused."""


class NoDeviceError(LoaderError):
    """The module compiled, but there is no CUDA GPU here to run it on."""


def _trim(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2 :]


# ---------------------------------------------------------------------------------------- records
@dataclass
class Param:
    """One kernel parameter as the PTX declares it: its type, and its size in bytes."""

    name: str
    type: str
    """PTX scalar type (``u64``, ``f32``, ...) or ``b8`` for a by-value aggregate."""
    size: int
    array: bool = False
    pointer: bool = False


@dataclass
class KernelInfo:
    """What the compiler says about one kernel of a module."""

    name: str
    params: list[Param] = field(default_factory=list)
    registers: int | None = None
    shared: int | None = None
    """Static shared memory, bytes."""
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack: int | None = None
    barriers: int | None = None
    reqntid: tuple[int, ...] | None = None
    maxntid: tuple[int, ...] | None = None
    ptx_counts: dict[str, int] = field(default_factory=dict)
    sass_counts: dict[str, int] = field(default_factory=dict)

    @property
    def spills(self) -> int | None:
        if self.spill_stores is None and self.spill_loads is None:
            return None
        return (self.spill_stores or 0) + (self.spill_loads or 0)


@dataclass
class ModuleRecord:
    """One module a candidate built: sources, binaries, and the compiler's report."""

    name: str
    language: str
    """``cuda`` (NVRTC) or ``ptx``."""
    target: str
    ptx: str
    cubin: bytes | None
    log: str = ""
    warnings: list[str] = field(default_factory=list)
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)
    compiler: str = ""
    seconds: float = 0.0
    sass: str | None = None
    analysis_error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """Plain data for the worker's reply (the cubin stays behind; the SASS counts go along)."""
        return {
            "name": self.name,
            "language": self.language,
            "target": self.target,
            "log": _trim(self.log, 8000),
            "warnings": self.warnings,
            "options": self.options,
            "compiler": self.compiler,
            "seconds": self.seconds,
            "ptx_chars": len(self.ptx),
            "cubin_bytes": len(self.cubin or b""),
            "analysis_error": self.analysis_error,
            "kernels": [
                {
                    "name": k.name,
                    "registers": k.registers,
                    "shared": k.shared,
                    "spill_stores": k.spill_stores,
                    "spill_loads": k.spill_loads,
                    "stack": k.stack,
                    "barriers": k.barriers,
                    "params": [p.type + (f"[{p.size}]" if p.array else "") for p in k.params],
                    "ptx": k.ptx_counts,
                    "sass": k.sass_counts,
                }
                for k in self.kernels.values()
            ],
        }


@dataclass
class LaunchRecord:
    module: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    cluster: tuple[int, int, int] | None
    ran: bool


@dataclass
class Registry:
    """Every module built and every launch made in this process (the harness reads it)."""

    modules: list[ModuleRecord] = field(default_factory=list)
    launches: list[LaunchRecord] = field(default_factory=list)
    launch_count: int = 0
    keep_launches: int = 256

    def add(self, record: ModuleRecord) -> None:
        self.modules.append(record)

    def launched(self, launch: LaunchRecord) -> None:
        self.launch_count += 1
        if len(self.launches) < self.keep_launches:
            self.launches.append(launch)

    def clear(self) -> None:
        self.modules.clear()
        self.launches.clear()
        self.launch_count = 0


REGISTRY = Registry()
_DEFAULT_TARGET: list[str] = []


def set_default_target(target: str | None) -> None:
    """The target ``load_cuda``/``load_ptx`` use when none is given (the worker sets the task's)."""
    _DEFAULT_TARGET.clear()
    if target is not None:
        _check_target(target)
        _DEFAULT_TARGET.append(target)


def default_target() -> str:
    """The evaluation's target if set, else the GPU's (``sm_90a`` for 9.x, ``sm_100a`` for 10.x),
    else sm_90a."""
    if _DEFAULT_TARGET:
        return _DEFAULT_TARGET[0]
    env = os.environ.get("WARPGYM_TARGET")
    if env:
        return _check_target(env)
    if _gpu_available():
        import torch

        major, _ = torch.cuda.get_device_capability()
        return {9: "sm_90a", 10: "sm_100a"}.get(major, "sm_90a")
    return "sm_90a"


def _check_target(target: str) -> str:
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; the loader builds for {', '.join(TARGETS)}")
    return target


# ---------------------------------------------------------------------------------------- tools
@cache
def _tool_version(path: str) -> tuple[int, int]:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@cache
def ptxas_candidates() -> tuple[str, ...]:
    """Every ptxas found (Triton's wheel, its Blackwell build, CUDA_HOME, /usr/local/cuda, PATH)."""
    found: list[str] = []
    wheel = tool("ptxas")
    names = [wheel] if wheel else []
    if wheel:
        names.append(str(Path(wheel).with_name("ptxas-blackwell")))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            names.append(str(Path(home) / "bin" / "ptxas"))
    for name in names:
        if name and Path(name).is_file() and os.access(name, os.X_OK) and name not in found:
            found.append(name)
    return tuple(found)


def ptxas_path() -> str | None:
    """The newest ptxas available: it accepts the newest PTX and every target we build for."""
    candidates = ptxas_candidates()
    return max(candidates, key=_tool_version) if candidates else None


def ptxas_version() -> tuple[int, int]:
    path = ptxas_path()
    return _tool_version(path) if path else (0, 0)


@cache
def include_dirs() -> tuple[str, ...]:
    """Header folders for NVRTC (cuda_bf16.h, cuda_fp8.h, ...): the CUDA install, then Triton's wheel."""
    dirs = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda_runtime.h").is_file():
            dirs.append(str(Path(home) / "include"))
    wheel = tool("ptxas")
    if wheel:
        inc = Path(wheel).parent.parent / "include"
        if (inc / "cuda_bf16.h").is_file():
            dirs.append(str(inc))
    return tuple(dict.fromkeys(dirs))


def nvrtc_version() -> tuple[int, int] | None:
    """NVRTC's version, or None when its library cannot be loaded here."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001 - a missing library shows as any of several errors
        return None
    return (major, minor) if int(err) == 0 else None


# ---------------------------------------------------------------------------------------- compiling
_LOCK = threading.Lock()


def load_cuda(
    source: str,
    *,
    name: str = "module",
    target: str | None = None,
    options: Sequence[str] = ("-lineinfo",),
    defines: Mapping[str, Any] | None = None,
    max_registers: int | None = None,
    name_expressions: Iterable[str] = (),
    std: str = "c++17",
) -> Module:
    """Compile CUDA C++ (inline PTX allowed) for ``target`` and return the module.

    NVRTC makes PTX for the virtual architecture (``compute_90a``), ptxas makes the cubin with
    ``-v`` so the registers, spills and shared memory of every kernel are reported. Kernels are
    found by name: declare them ``extern "C"``, or list C++ names in ``name_expressions``.
    """
    target = _check_target(target or default_target())
    started = time.perf_counter()
    flags = [f"--gpu-architecture=compute_{target[3:]}", f"-std={std}"]
    flags += [f"-I{d}" for d in include_dirs()]
    flags += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
    user = [o for o in options if o not in ("-lineinfo", "--generate-line-info")]
    flags += user
    lineinfo = any(o in ("-lineinfo", "--generate-line-info") for o in options)
    if lineinfo:
        flags.append("-lineinfo")
    ptx, log, lowered = _nvrtc(source, name, target, flags, list(name_expressions))
    ptxas_flags = ["-lineinfo"] if lineinfo else []
    if max_registers is not None:
        ptxas_flags.append(f"--maxrregcount={int(max_registers)}")
    record = _assemble(
        ptx,
        name=name,
        target=target,
        language="cuda",
        flags=ptxas_flags,
        nvrtc_log=log,
        options=flags + ptxas_flags,
    )
    record.seconds = time.perf_counter() - started
    nv = nvrtc_version()
    record.compiler = (f"nvrtc {nv[0]}.{nv[1]}" if nv else "nvrtc") + " + " + record.compiler
    _analyse(record)
    REGISTRY.add(record)
    return Module(record, lowered)


def load_ptx(
    ptx: str,
    *,
    name: str = "module",
    target: str | None = None,
    max_registers: int | None = None,
    options: Sequence[str] = (),
    assembler: str = "ptxas",
) -> Module:
    """Assemble raw PTX for ``target``: with ptxas (reported, disassembled), or ``assembler="driver"``
    to leave it to the driver's JIT at the first launch (needs a GPU; ptxas still reports if present)."""
    target = _check_target(target or default_target())
    if assembler not in ("ptxas", "driver"):
        raise ValueError("assembler must be 'ptxas' or 'driver'")
    started = time.perf_counter()
    m = re.search(r"^\s*\.target\s+([\w,\s]+)$", ptx, re.M)
    declared = m.group(1).split(",")[0].strip() if m else None
    if declared is not None and declared != target:
        raise CompileError(
            "ptxas",
            name,
            target,
            f"the PTX declares `.target {declared}` but the module is built "
            f"for {target}; write `.target {target}` (architecture-specific features need the "
            "'a' suffix, e.g. sm_90a for wgmma)",
        )
    flags = list(options)
    if max_registers is not None:
        flags.append(f"--maxrregcount={int(max_registers)}")
    if assembler == "driver" and ptxas_path() is None:
        record = ModuleRecord(name, "ptx", target, ptx, None, compiler="driver JIT", options=flags)
        record.kernels = {n: KernelInfo(n, params) for n, params in parse_entries(ptx).items()}
    else:
        record = _assemble(
            ptx, name=name, target=target, language="ptx", flags=flags, nvrtc_log="", options=flags
        )
    record.seconds = time.perf_counter() - started
    _analyse(record)
    REGISTRY.add(record)
    return Module(record, {}, jit=assembler == "driver")


def _nvrtc(
    source: str, name: str, target: str, flags: list[str], expressions: list[str]
) -> tuple[str, str, dict[str, str]]:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - cuda-python is a dependency
        raise CompileError("nvrtc", name, target, f"cuda-python is not installed: {exc}") from exc
    if nvrtc_version() is None:
        raise CompileError(
            "nvrtc",
            name,
            target,
            "the NVRTC library (libnvrtc.so) cannot be loaded here; "
            "install it with `pip install nvidia-cuda-nvrtc` (CUDA 13) or set CUDA_HOME",
        )
    with _LOCK:
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
        _nvrtc_check(err, "nvrtcCreateProgram", name, target)
        try:
            for expr in expressions:
                nvrtc.nvrtcAddNameExpression(prog, expr.encode())
            opts = [f.encode() for f in flags]
            (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            buf = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.rstrip(b"\x00").decode(errors="replace").strip()
            if int(err) != 0:
                raise CompileError("nvrtc", name, target, log or f"NVRTC error {err!r}")
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            buf = b" " * size
            nvrtc.nvrtcGetPTX(prog, buf)
            ptx = buf.rstrip(b"\x00").decode()
            lowered = {}
            for expr in expressions:
                err, low = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
                if int(err) == 0:
                    lowered[expr] = low.decode() if isinstance(low, bytes) else str(low)
        finally:
            nvrtc.nvrtcDestroyProgram(prog)
    return ptx, log, lowered


def _nvrtc_check(err: Any, what: str, name: str, target: str) -> None:
    if int(err) != 0:
        raise CompileError("nvrtc", name, target, f"{what} failed: {err!r}")


_PTXAS_INFO = {
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
}


def parse_ptxas_report(text: str) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per-kernel resources and the warnings from ``ptxas -v`` output."""
    kernels: dict[str, dict[str, int]] = {}
    warnings: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        if "warning" in line.lower():
            warnings.append(re.sub(r"^ptxas\s+(/\S+?/)?", "ptxas ", line.strip()))
            continue
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?", line)
        if m:
            current = m.group(1)
            kernels.setdefault(current, {})
            continue
        if current is None:
            continue
        for key, pattern in _PTXAS_INFO.items():
            if mm := pattern.search(line):
                kernels[current][key] = int(mm.group(1))
    return kernels, list(dict.fromkeys(warnings))


_UNSUPPORTED_ISA = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")


def _assemble(
    ptx: str, *, name: str, target: str, language: str, flags: list[str], nvrtc_log: str, options: list[str]
) -> ModuleRecord:
    ptxas = ptxas_path()
    if ptxas is None:
        raise CompileError(
            "ptxas", name, target, "no ptxas found (Triton's wheel ships one; or set CUDA_HOME)"
        )
    lowered: list[str] = []
    with tempfile.TemporaryDirectory(prefix="warpgym-ptx-") as tmp:
        src, out = Path(tmp) / f"{_safe(name)}.ptx", Path(tmp) / f"{_safe(name)}.cubin"
        for attempt in range(2):
            src.write_text(ptx)
            cmd = [ptxas, f"-arch={target}", "-v", *flags, str(src), "-o", str(out)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired as exc:
                raise CompileError("ptxas", name, target, "ptxas ran for more than 300 s") from exc
            report = (proc.stdout + proc.stderr).replace(str(src), f"{name}.ptx")
            if proc.returncode == 0 and out.is_file():
                break
            newer = _UNSUPPORTED_ISA.search(report)
            if attempt == 0 and newer and language == "cuda":
                # NVRTC newer than this ptxas: its PTX carries an ISA version the assembler does not know,
                # though the code rarely needs it. Assemble it as the older ISA; a real need still fails.
                ptx = re.sub(r"^\.version \S+", f".version {newer.group(2)}", ptx, count=1, flags=re.M)
                lowered.append(f"NVRTC's PTX ISA {newer.group(1)} is newer than this ptxas accepts; "
                               f"assembled as ISA {newer.group(2)}")
                continue
            errors = [ln for ln in report.splitlines() if re.search(r"error|fatal", ln, re.I)]
            errors = errors or report.splitlines()
            raise CompileError("ptxas", name, target, "\n".join(errors[:40]))
        cubin = out.read_bytes()
    resources, warnings = parse_ptxas_report(report)
    warnings = lowered + warnings
    nvrtc_warnings = [ln.strip() for ln in nvrtc_log.splitlines() if "warning" in ln.lower()]
    record = ModuleRecord(
        name,
        language,
        target,
        ptx,
        cubin,
        log=(nvrtc_log + "\n" + report).strip(),
        warnings=nvrtc_warnings + warnings,
        options=options,
    )
    v = _tool_version(ptxas)
    record.compiler = f"ptxas {v[0]}.{v[1]}"
    entries = parse_entries(ptx)
    for kname, params in entries.items():
        info = KernelInfo(kname, params, **resources.get(kname, {}))
        info.reqntid, info.maxntid = _launch_bounds(ptx, kname)
        record.kernels[kname] = info
    return record


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)[:64] or "module"


def _analyse(record: ModuleRecord) -> None:
    """Per kernel, per family: PTX mnemonics and SASS opcodes (instruction lines only)."""
    for kname, body in split_ptx_functions(record.ptx).items():
        if kname in record.kernels:
            record.kernels[kname].ptx_counts = count_ptx(body)
    if record.cubin is None:
        return
    try:
        record.sass = disassemble(record.cubin)
    except RuntimeError as exc:
        record.analysis_error = str(exc)
        return
    for fn, ops in sass_opcodes(record.sass).items():
        if fn in record.kernels:
            record.kernels[fn].sass_counts = count_sass_opcodes(ops)


# ---------------------------------------------------------------------------------------- PTX parsing
_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+((?:\.ptr\s+)?(?:\.\w+\s+)*)"
    r"(?:\.align\s+\d+\s+)?([\w$]+)(?:\s*\[(\d+)\])?"
)
_SIZES = {
    "u8": 1,
    "s8": 1,
    "b8": 1,
    "u16": 2,
    "s16": 2,
    "b16": 2,
    "f16": 2,
    "bf16": 2,
    "u32": 4,
    "s32": 4,
    "b32": 4,
    "f32": 4,
    "u64": 8,
    "s64": 8,
    "b64": 8,
    "f64": 8,
}


def parse_entries(ptx: str) -> dict[str, list[Param]]:
    """The kernels (``.entry``) of a PTX module and their parameters."""
    out: dict[str, list[Param]] = {}
    for m in _ENTRY.finditer(ptx):
        params = []
        for p in _PARAM.finditer(m.group(2)):
            _, ty, quals, pname, count = p.groups()
            size = _SIZES.get(ty, 8) * (int(count) if count else 1)
            params.append(Param(pname, ty, size, array=count is not None, pointer=".ptr" in (quals or "")))
        out[m.group(1)] = params
    return out


def _launch_bounds(ptx: str, kernel: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\([^)]*\)(.*?)\{", ptx, re.S)
    if not m:
        return None, None
    head = m.group(1)
    req = re.search(r"\.reqntid\s+([\d,\s]+)", head)
    mx = re.search(r"\.maxntid\s+([\d,\s]+)", head)
    conv = lambda g: tuple(int(x) for x in g.group(1).replace(" ", "").split(",") if x) if g else None
    return conv(req), conv(mx)


_FUNC_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)


def split_ptx_functions(ptx: str) -> dict[str, str]:
    """The body of each function (``.entry`` or ``.func``) of a PTX module, by name."""
    out: dict[str, str] = {}
    starts = [(m.start(), m.group(1)) for m in _FUNC_START.finditer(ptx)]
    for i, (pos, fname) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(ptx)
        out[fname] = ptx[pos:end]
    return out


# ---------------------------------------------------------------------------------------- tensor maps
_TMA_DTYPES = {
    "uint8": 0,
    "float8_e4m3fn": 0,
    "float8_e5m2": 0,
    "int8": 0,
    "uint16": 1,
    "int16": 1,
    "int32": 3,
    "uint32": 2,
    "int64": 5,
    "uint64": 4,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}


@dataclass
class TensorMap:
    """A TMA descriptor (CUtensorMap, 128 bytes) passed by value as a ``__grid_constant__`` parameter.

    ``placeholder`` is True where no GPU driver could encode it (it was checked, not encoded).
    """

    data: bytes
    shape: tuple[int, ...]
    box: tuple[int, ...]
    dtype: str
    swizzle: int
    placeholder: bool = False


def tensor_map(
    tensor: Any,
    box: Sequence[int],
    *,
    swizzle: int = 128,
    oob_nan: bool = False,
    l2_promotion: int = 256,
    element_strides: Sequence[int] | None = None,
) -> TensorMap:
    """The TMA descriptor for a tiled view of ``tensor`` (dims outermost first, as torch orders them).

    Checked here, so a bad descriptor is a clear error rather than a fault at run time: the base
    is 16-byte aligned, the innermost dim contiguous, other strides multiples of 16 bytes, each box
    dim 1..256, and the inner box row at most the swizzle span.
    """
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor_map needs a torch.Tensor, got {type(tensor).__name__}")
    # Encoding costs tens of microseconds of host time per call, paid again on every launch of a
    # kernel that builds its descriptors per call; the descriptor depends only on this key.
    key = (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype, tuple(box), swizzle,
           oob_nan, l2_promotion, tuple(element_strides or ()))
    cached = _TENSOR_MAPS.get(key)
    if cached is not None:
        return cached
    made = _tensor_map(tensor, box, swizzle, oob_nan, l2_promotion, element_strides)
    if len(_TENSOR_MAPS) >= _TENSOR_MAP_CACHE_SIZE:
        _TENSOR_MAPS.clear()
    _TENSOR_MAPS[key] = made
    return made


_TENSOR_MAPS: dict[tuple, TensorMap] = {}
_TENSOR_MAP_CACHE_SIZE = 4096


def _tensor_map(tensor: Any, box: Sequence[int], swizzle: int, oob_nan: bool, l2_promotion: int,
                element_strides: Sequence[int] | None) -> TensorMap:
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in _TMA_DTYPES:
        raise LaunchError(f"tensor_map: dtype {dtype} has no TMA element type")
    rank, elem = tensor.dim(), tensor.element_size()
    box = tuple(int(b) for b in box)
    problems = []
    if not 1 <= rank <= 5:
        problems.append(f"rank {rank} (TMA handles 1 to 5 dims)")
    if len(box) != rank:
        problems.append(f"box has {len(box)} dims, the tensor {rank}")
    if swizzle not in _SWIZZLES:
        problems.append(f"swizzle {swizzle} (use 0, 32, 64 or 128 bytes)")
    if tensor.data_ptr() % 16:
        problems.append("the base address is not 16-byte aligned")
    if rank and tensor.stride(-1) != 1:
        problems.append("the innermost dim is not contiguous (stride 1)")
    for d in range(rank - 1):
        if (tensor.stride(d) * elem) % 16:
            problems.append(f"dim {d} stride {tensor.stride(d) * elem} bytes is not a multiple of 16")
    for d, b in enumerate(box):
        if not 1 <= b <= 256:
            problems.append(f"box dim {d} = {b} (must be 1..256)")
    if box and (box[-1] * elem) % 16:
        problems.append(f"the inner box row is {box[-1] * elem} bytes, not a multiple of 16")
    if box and swizzle and box[-1] * elem > swizzle:
        problems.append(
            f"the inner box row is {box[-1] * elem} bytes, more than the {swizzle}-byte swizzle span"
        )
    if problems:
        raise LaunchError("tensor_map: " + "; ".join(problems))
    shape = tuple(int(s) for s in tensor.shape)
    if not _gpu_available():
        return TensorMap(b"\0" * 128, shape, box, dtype, swizzle, placeholder=True)
    from cuda.bindings import driver as cu

    _driver_init()
    dims = [cu.cuuint64_t(s) for s in reversed(shape)]
    strides = [cu.cuuint64_t(tensor.stride(d) * elem) for d in reversed(range(rank - 1))]
    boxes = [cu.cuuint32_t(b) for b in reversed(box)]
    estr = [cu.cuuint32_t(e) for e in reversed(element_strides or [1] * rank)]
    promo = {
        0: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        64: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        128: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        256: cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }[l2_promotion]
    fill = (
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        if oob_nan
        else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    )
    err, tmap = cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType(_TMA_DTYPES[dtype]),
        rank,
        tensor.data_ptr(),
        dims,
        strides,
        boxes,
        estr,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle(_SWIZZLES[swizzle]),
        promo,
        fill,
    )
    if int(err) != 0:
        raise LaunchError(
            f"cuTensorMapEncodeTiled refused shape {shape}, box {box}, swizzle {swizzle}: {err!r}"
        )
    return TensorMap(ctypes.string_at(tmap.getPtr(), 128), shape, box, dtype, swizzle)


# ---------------------------------------------------------------------------------------- launching
@cache
def _gpu_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _cu_check(result: Any, what: str) -> Any:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        from cuda.bindings import driver as cu

        _, name = cu.cuGetErrorName(err)
        _, text = cu.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else name
        text = text.decode() if isinstance(text, bytes) else text
        raise LaunchError(f"{what} failed: {name}: {text}")
    if isinstance(result, tuple):
        return result[1] if len(result) == 2 else result[1:]
    return None


_initialised: list[bool] = []


def _driver_init() -> None:
    if _initialised:
        return
    from cuda.bindings import driver as cu

    _cu_check(cu.cuInit(0), "cuInit")
    _initialised.append(True)


def _current_context() -> Any:
    """The context PyTorch uses for its current device (the device's primary context)."""
    import torch
    from cuda.bindings import driver as cu

    _driver_init()
    torch.cuda.init()
    dev_index = torch.cuda.current_device()
    ctx = _cu_check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        dev = _cu_check(cu.cuDeviceGet(dev_index), "cuDeviceGet")
        ctx = _cu_check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _cu_check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def _dims(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    items = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(items) <= 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise LaunchError(f"{what} must be an int or 1 to 3 ints, got {value!r}")
    items = tuple(items) + (1,) * (3 - len(items))
    if any(v < 1 for v in items):
        raise LaunchError(f"{what} {items} has a dimension below 1")
    return items  # type: ignore[return-value]


class Module:
    """A compiled module; ``kernel(name)`` gives a launchable kernel."""

    def __init__(self, record: ModuleRecord, lowered: dict[str, str], jit: bool = False) -> None:
        self.record = record
        self._lowered = lowered
        self._jit = jit
        self._handles: dict[Any, Any] = {}

    @property
    def names(self) -> list[str]:
        return list(self.record.kernels)

    def kernel(self, name: str) -> Kernel:
        symbol = self._lowered.get(name, name)
        if symbol not in self.record.kernels:
            raise LookupError(
                f"module {self.record.name!r} has no kernel {name!r}; it has "
                f'{", ".join(self.record.kernels) or "none"} (declare kernels extern "C" '
                "or pass their C++ names in name_expressions)"
            )
        return Kernel(self, symbol)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_") or name in ("record",):
            raise AttributeError(name)
        return self.kernel(name)

    def _function(self, symbol: str) -> Any:
        from cuda.bindings import driver as cu

        ctx = _current_context()
        key = (int(ctx), symbol)
        if key in self._handles:
            return self._handles[key]
        mod_key = (int(ctx), None)
        if mod_key not in self._handles:
            if self._jit or self.record.cubin is None:
                image = self.record.ptx.encode() + b"\0"
            else:
                image = self.record.cubin
            try:
                self._handles[mod_key] = _cu_check(cu.cuModuleLoadData(image), "cuModuleLoadData")
            except LaunchError as exc:
                raise LaunchError(
                    f"loading module {self.record.name!r} ({self.record.target}) on this GPU: {exc}"
                ) from exc
        fn = _cu_check(cu.cuModuleGetFunction(self._handles[mod_key], symbol.encode()), "cuModuleGetFunction")
        self._handles[key] = fn
        return fn


class Kernel:
    """One kernel: ``kernel(*args, grid=..., block=..., shared_mem=0, cluster=None)``."""

    def __init__(self, module: Module, symbol: str) -> None:
        self.module = module
        self.name = symbol
        self.info = module.record.kernels[symbol]
        self._smem_set = 0
        self._cluster_set = False

    def __repr__(self) -> str:
        return f"<kernel {self.name} of module {self.module.record.name} ({self.module.record.target})>"

    def check(
        self, grid: Any, block: Any, shared_mem: int = 0, cluster: Any = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int] | None]:
        """Refuse a launch that cannot work, with a reason, before anything reaches the GPU."""
        target = self.module.record.target
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        if grid3[0] >= 2**31 or grid3[1] >= 65536 or grid3[2] >= 65536:
            raise LaunchError(f"grid {grid3} is too large (x < 2^31, y and z < 65536)")
        threads = block3[0] * block3[1] * block3[2]
        if threads > MAX_THREADS_PER_BLOCK or block3[2] > 64:
            raise LaunchError(
                f"block {block3} has {threads} threads; at most {MAX_THREADS_PER_BLOCK} per block "
                "(and z <= 64)"
            )
        info = self.info
        if info.reqntid is not None:
            want = tuple(info.reqntid) + (1,) * (3 - len(info.reqntid))
            if want[0] * want[1] * want[2] != threads:
                raise LaunchError(
                    f"{self.name} was compiled for exactly {want} threads per block (.reqntid), "
                    f"launched with {block3}"
                )
        if info.maxntid is not None:
            cap = (
                info.maxntid[0]
                * (info.maxntid[1] if len(info.maxntid) > 1 else 1)
                * (info.maxntid[2] if len(info.maxntid) > 2 else 1)
            )
            if threads > cap:
                raise LaunchError(
                    f"{self.name} was compiled for at most {cap} threads per block "
                    f"(__launch_bounds__ / .maxntid), launched with {threads}"
                )
        if info.registers is not None and info.registers * threads > REGISTERS_PER_SM:
            raise LaunchError(
                f"{self.name} uses {info.registers} registers per thread; {threads} threads need "
                f"{info.registers * threads}, more than the {REGISTERS_PER_SM} a multiprocessor has"
            )
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise LaunchError(f"shared_mem must be a non-negative int of bytes, got {shared_mem!r}")
        static = info.shared or 0
        limit = MAX_SHARED_PER_BLOCK[target]
        if static + shared_mem > limit:
            raise LaunchError(
                f"{self.name} asks for {static + shared_mem} bytes of shared memory per block "
                f"({shared_mem} dynamic + {static} static); {target} allows at most {limit} "
                f"({limit // 1024} KB): use fewer pipeline stages or smaller tiles"
            )
        cluster3 = None
        if cluster is not None:
            cluster3 = _dims(cluster, "cluster")
            size = cluster3[0] * cluster3[1] * cluster3[2]
            if size > MAX_CLUSTER:
                raise LaunchError(f"cluster {cluster3} has {size} blocks; at most {MAX_CLUSTER} (8 portable)")
            for g, c, axis in zip(grid3, cluster3, "xyz", strict=True):
                if g % c:
                    raise LaunchError(f"grid {axis}={g} is not a multiple of cluster {axis}={c}")
        return grid3, block3, cluster3

    def pack(self, args: Sequence[Any]) -> list[bytes]:
        """Each argument as the bytes of its PTX parameter; wrong counts and types are errors."""
        import torch

        params = self.info.params
        if len(args) != len(params):
            raise LaunchError(
                f"{self.name} takes {len(params)} parameters "
                f"({', '.join(p.type + ('[' + str(p.size) + ']' if p.array else '') for p in params)}"
                f"), got {len(args)} arguments"
            )
        out = []
        for i, (arg, p) in enumerate(zip(args, params, strict=True)):
            where = f"{self.name} argument {i} ({p.type}{'[' + str(p.size) + ']' if p.array else ''})"
            if isinstance(arg, TensorMap):
                if not p.array or p.size != 128:
                    raise LaunchError(
                        f"{where}: a TensorMap goes to a 128-byte by-value parameter "
                        "(`const __grid_constant__ CUtensorMap` / `.param .align 64 .b8 p[128]`)"
                    )
                out.append(arg.data)
            elif isinstance(arg, torch.Tensor):
                if p.size != 8 or p.array:
                    raise LaunchError(
                        f"{where}: a tensor is passed as its 8-byte address; this parameter is not"
                    )
                if _gpu_available() and not arg.is_cuda:
                    raise LaunchError(f"{where}: the tensor is on {arg.device}; kernels read CUDA tensors")
                out.append(struct.pack("<Q", arg.data_ptr()))
            elif isinstance(arg, bytes | bytearray):
                if len(arg) != p.size:
                    raise LaunchError(f"{where}: {len(arg)} bytes given for a {p.size}-byte parameter")
                out.append(bytes(arg))
            elif isinstance(arg, bool | int) and not p.type.startswith("f"):
                if p.array:
                    raise LaunchError(f"{where}: an int was given for a {p.size}-byte aggregate parameter")
                bits = p.size * 8
                value = int(arg)
                if not -(1 << (bits - 1)) <= value < (1 << bits):
                    raise LaunchError(f"{where}: {value} does not fit in {bits} bits")
                out.append((value & ((1 << bits) - 1)).to_bytes(p.size, "little"))
            elif isinstance(arg, float) or (isinstance(arg, int) and p.type in ("f32", "f64")):
                if p.type == "f32":
                    out.append(struct.pack("<f", arg))
                elif p.type == "f64":
                    out.append(struct.pack("<d", arg))
                else:
                    raise LaunchError(f"{where}: a float was given for a {p.type} parameter")
            else:
                raise LaunchError(
                    f"{where}: cannot pass a {type(arg).__name__} (use tensors, ints, floats, "
                    "TensorMap or bytes)"
                )
        return out

    def __call__(
        self, *args: Any, grid: Any, block: Any, shared_mem: int = 0, cluster: Any = None, stream: Any = None
    ) -> None:
        grid3, block3, cluster3 = self.check(grid, block, shared_mem, cluster)
        if cluster3 is not None and TARGETS[self.module.record.target][0] < 9:  # pragma: no cover
            raise LaunchError("thread-block clusters need sm_90 or newer")
        packed = self.pack(args)
        record = LaunchRecord(self.module.record.name, self.name, grid3, block3, shared_mem, cluster3, False)
        if not _gpu_available():
            REGISTRY.launched(record)
            raise NoDeviceError(
                f"{self.name}: no CUDA GPU on this machine; the module compiled for "
                f"{self.module.record.target} and the launch was checked, but it cannot run here"
            )
        self._launch(packed, grid3, block3, shared_mem, cluster3, stream)
        record.ran = True
        REGISTRY.launched(record)

    launch = __call__

    def _launch(
        self,
        packed: list[bytes],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        cluster: tuple[int, int, int] | None,
        stream: Any,
    ) -> None:
        import torch
        from cuda.bindings import driver as cu

        major, minor = torch.cuda.get_device_capability()
        want = TARGETS[self.module.record.target]
        if (major, minor) != want:
            raise LaunchError(
                f"module {self.module.record.name!r} was built for {self.module.record.target}; "
                f"this GPU is sm_{major}{minor}"
            )
        fn = self.module._function(self.name)
        attr = cu.CUfunction_attribute
        if shared_mem > DEFAULT_SHARED_LIMIT and shared_mem > self._smem_set:
            _cu_check(
                cu.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_mem),
                f"raising {self.name}'s dynamic shared memory to {shared_mem} bytes",
            )
            self._smem_set = shared_mem
        buffers = [ctypes.create_string_buffer(b, max(len(b), 1)) for b in packed]
        pointers = (ctypes.c_void_p * max(len(buffers), 1))(*[ctypes.addressof(b) for b in buffers])
        handle = stream if stream is not None else torch.cuda.current_stream().cuda_stream
        hstream = cu.CUstream(int(handle))
        if cluster is None:
            _cu_check(
                cu.cuLaunchKernel(fn, *grid, *block, shared_mem, hstream, ctypes.addressof(pointers), 0),
                f"launching {self.name}",
            )
            return
        size = cluster[0] * cluster[1] * cluster[2]
        if size > PORTABLE_CLUSTER and not self._cluster_set:
            _cu_check(
                cu.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "allowing a non-portable cluster size",
            )
            self._cluster_set = True
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared_mem
        config.hStream = hstream
        attribute = cu.CUlaunchAttribute()
        attribute.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster
        config.attrs = [attribute]
        config.numAttrs = 1
        _cu_check(cu.cuLaunchKernelEx(config, fn, ctypes.addressof(pointers), 0), f"launching {self.name}")


def modules_report() -> list[dict[str, Any]]:
    """What the worker sends the harness: every module built in this process."""
    return [m.to_wire() for m in REGISTRY.modules]
