"""The loader for CUDA C++ and PTX candidate modules, on cuda-python: build a module, analyse it and
record it.

A PTX task's candidate builds its kernels here: ``load_cuda`` compiles CUDA C++ (inline PTX
allowed) with NVRTC to PTX, then ptxas to a cubin; ``load_ptx`` assembles raw PTX with ptxas
(or leaves it to the driver's JIT). Compilation needs no GPU, so a candidate that builds its
modules at import is compiled, reported on and disassembled on any machine. Every module built
is recorded in ``REGISTRY`` with its PTX, cubin, compiler log, warnings and resource report,
so the harness sees each one. Without a GPU a launch is checked (arguments, block, shared memory,
cluster) and then refused with ``NoDeviceError``, which the harness reads as "compiled, not run here".

The candidate's public face is ``warpgym.loader``; the worker and the tests read the names
re-exported here from the toolchain's modules of one job each.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from warpgym.env.toolchain import driver
from warpgym.env.toolchain.disassemble import disassemble, sass_opcodes
from warpgym.env.toolchain.errors import CompileError, LaunchError, LoaderError, NoDeviceError
from warpgym.env.toolchain.families import count_ptx, count_sass_opcodes
from warpgym.env.toolchain.nvrtc import compile_cuda
from warpgym.env.toolchain.ptx import parse_entries, parse_ptxas_report, split_ptx_functions
from warpgym.env.toolchain.ptxas import assemble
from warpgym.env.toolchain.registry import REGISTRY, KernelInfo, ModuleRecord, modules_report
from warpgym.env.toolchain.runtime import Kernel, Module
from warpgym.env.toolchain.targets import DEFAULT, TARGETS, for_capability
from warpgym.env.toolchain.targets import check as check_target
from warpgym.env.toolchain.tensormap import TensorMap, tensor_map
from warpgym.env.toolchain.tools import include_dirs, nvrtc_version, ptxas_path

__all__ = [
    "REGISTRY", "CompileError", "Kernel", "LaunchError", "LoaderError", "Module", "NoDeviceError",
    "TensorMap", "default_target", "load_cuda", "load_ptx", "modules_report", "nvrtc_version",
    "parse_entries", "parse_ptxas_report", "ptxas_path", "sass_opcodes", "set_default_target", "tensor_map",
]

_DEFAULT_TARGET: list[str] = []


def set_default_target(target: str | None) -> None:
    """The target ``load_cuda``/``load_ptx`` use when none is given (the worker sets the task's)."""
    _DEFAULT_TARGET.clear()
    if target is not None:
        check_target(target)
        _DEFAULT_TARGET.append(target)


def default_target() -> str:
    """The evaluation's target if set, else the GPU's (``sm_90a`` for 9.x, ``sm_100a`` for 10.x),
    else sm_90a."""
    if _DEFAULT_TARGET:
        return _DEFAULT_TARGET[0]
    env = os.environ.get("WARPGYM_TARGET")
    if env:
        return check_target(env)
    if driver.gpu_available():
        import torch

        major, _ = torch.cuda.get_device_capability()
        return for_capability(major) or DEFAULT
    return DEFAULT


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
    target = check_target(target or default_target())
    started = time.perf_counter()
    flags = [f"--gpu-architecture={TARGETS[target].virtual_architecture}", f"-std={std}"]
    flags += [f"-I{d}" for d in include_dirs()]
    flags += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
    user = [o for o in options if o not in ("-lineinfo", "--generate-line-info")]
    flags += user
    lineinfo = any(o in ("-lineinfo", "--generate-line-info") for o in options)
    if lineinfo:
        flags.append("-lineinfo")
    ptx, log, lowered = compile_cuda(source, name, target, flags, list(name_expressions))
    ptxas_flags = ["-lineinfo"] if lineinfo else []
    if max_registers is not None:
        ptxas_flags.append(f"--maxrregcount={int(max_registers)}")
    record = assemble(
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
    analyse(record)
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
    target = check_target(target or default_target())
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
        record = assemble(
            ptx, name=name, target=target, language="ptx", flags=flags, nvrtc_log="", options=flags
        )
    record.seconds = time.perf_counter() - started
    analyse(record)
    REGISTRY.add(record)
    return Module(record, {}, jit=assembler == "driver")


def analyse(record: ModuleRecord) -> None:
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
