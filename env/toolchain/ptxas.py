"""ptxas: PTX to a cubin for a target, with the resource report (registers, spills, shared memory)
and the warnings (C7515 "wgmma serialized" and kin) kept for the candidate's author."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from warpgym.env.toolchain.errors import CompileError
from warpgym.env.toolchain.ptx import launch_bounds, parse_entries, parse_ptxas_report
from warpgym.env.toolchain.registry import KernelInfo, ModuleRecord
from warpgym.env.toolchain.tools import ptxas_path, tool_version

_UNSUPPORTED_ISA = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")


def assemble(
    ptx: str, *, name: str, target: str, language: str, flags: list[str], nvrtc_log: str, options: list[str]
) -> ModuleRecord:
    """PTX to a cubin with ``ptxas -v``: the module's record, with each kernel's parameters and resources."""
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
    v = tool_version(ptxas)
    record.compiler = f"ptxas {v[0]}.{v[1]}"
    entries = parse_entries(ptx)
    for kname, params in entries.items():
        info = KernelInfo(kname, params, **resources.get(kname, {}))
        info.reqntid, info.maxntid = launch_bounds(ptx, kname)
        record.kernels[kname] = info
    return record


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)[:64] or "module"
