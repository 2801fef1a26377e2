"""Instruction families: how each Hopper/Blackwell feature shows in PTX and in SASS.

Counts are of instruction lines only (directives, labels, comments and declarations never
count), per kernel. A required feature passes only when present in the code AND, on a GPU,
executed (``executed`` counts come from Nsight Compute; see ``profile.py``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Family:
    name: str
    ptx: re.Pattern[str]
    """Matched against the mnemonic of each PTX instruction line."""
    sass: re.Pattern[str]
    """Matched against the opcode of each SASS instruction line."""
    description: str


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("wgmma", _re(r"^wgmma\."), _re(r"^(HGMMA|QGMMA|IGMMA|BGMMA)\b"),
           "warpgroup matrix multiply-accumulate (sm_90a)"),
    Family("mma.sync", _re(r"^mma\.sync\."), _re(r"^(HMMA|IMMA|DMMA|BMMA)\b"),
           "warp-level matrix multiply-accumulate (sm_80 style)"),
    Family("tma", _re(r"^cp(\.reduce)?\.async\.bulk\.(prefetch\.)?tensor\."),
           _re(r"^UTMA(LDG|STG|PF|REDG)\b"), "tensor memory accelerator bulk tensor copies"),
    Family("bulk-copy", _re(r"^cp(\.reduce)?\.async\.bulk\.(prefetch\.)?(?!tensor)(global|shared|L2)"),
           _re(r"^UBLK(CP|RED|PF)\b"), "non-tensor bulk copies (cp.async.bulk without a tensor map)"),
    Family("tma-flush", _re(r"^cp\.async\.bulk\.(commit|wait)_group\b"), _re(r"^UTMACMDFLUSH\b"),
           "bulk-copy group commit/wait (TMA stores flush their command queue)"),
    Family("cp.async", _re(r"^cp\.async\.(ca|cg)\."), _re(r"^LDGSTS\b"),
           "asynchronous global-to-shared copies (sm_80 style)"),
    Family("mbarrier", _re(r"^mbarrier\."), _re(r"^SYNCS\."),
           "shared-memory transaction barriers"),
    Family("setmaxnreg", _re(r"^setmaxnreg\."), _re(r"^USETMAXREG\b"),
           "per-warpgroup register reallocation"),
    Family("ldmatrix", _re(r"^ldmatrix\."), _re(r"^LDSM\b"), "shared-memory matrix loads"),
    Family("stmatrix", _re(r"^stmatrix\."), _re(r"^STSM\b"), "shared-memory matrix stores"),
    Family("tcgen05", _re(r"^tcgen05\."), _re(r"^(UTC\w*MMA|UTCATOM\w*|LDTM|STTM|UTCBAR|UTCCP)\b"),
           "fifth-generation tensor cores and tensor memory (sm_100a)"),
    Family("cluster", _re(r"^(barrier\.cluster|mapa)\b"), _re(r"^UCGABAR_\w+"),
           "thread-block clusters and distributed shared memory"),
    Family("elect", _re(r"^elect\.sync\b"), _re(r"^ELECT\b"),
           "electing one lane of a warp (issues TMA/MMA once)"),
    Family("fence.proxy.async", _re(r"^fence\.proxy\.async\b"), _re(r"^FENCE\.VIEW\.ASYNC\b"),
           "ordering generic-proxy writes before async-proxy (TMA, wgmma) reads"),
)}

# Feature names tasks may require, mapped to the families that prove them.
FEATURES: dict[str, tuple[str, ...]] = {
    "wgmma": ("wgmma",), "mma": ("mma.sync", "wgmma", "tcgen05"), "tma": ("tma",),
    "mbarrier": ("mbarrier",), "setmaxnreg": ("setmaxnreg",), "tcgen05": ("tcgen05",),
    "cp.async": ("cp.async",), "ldmatrix": ("ldmatrix",), "stmatrix": ("stmatrix",), "cluster": ("cluster",),
    "bulk-copy": ("bulk-copy",), "elect": ("elect",), "fence.proxy.async": ("fence.proxy.async",),
}

_PTX_SKIP = re.compile(r"^(\.|//|\}|\{|\$|@?$)")
_PTX_LABEL = re.compile(r"^[$\w]+:")
_PTX_PRED = re.compile(r"^@!?%?\w+\s+")
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?"
                        r"([A-Z][A-Z0-9_]*(?:\.[\w.]+)?)")
_SASS_FUNC = re.compile(r"Function\s*:\s*(\S+)")


def ptx_mnemonics(ptx: str) -> list[str]:
    """The mnemonic of every instruction line of a PTX module."""
    out = []
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or _PTX_SKIP.match(line) or _PTX_LABEL.match(line):
            continue
        line = _PTX_PRED.sub("", line)
        mnemonic = line.split(None, 1)[0].rstrip(";")
        if mnemonic and mnemonic[0].isalpha():
            out.append(mnemonic)
    return out


def count_ptx(ptx: str) -> dict[str, int]:
    mnemonics = ptx_mnemonics(ptx)
    return {name: sum(1 for m in mnemonics if fam.ptx.search(m)) for name, fam in FAMILIES.items()}


def sass_opcodes(sass: str) -> dict[str, list[str]]:
    """Opcodes of the instruction lines of a ``cuobjdump -sass`` listing, per function."""
    functions: dict[str, list[str]] = {}
    current = functions.setdefault("", [])
    for line in sass.splitlines():
        if m := _SASS_FUNC.search(line):
            current = functions.setdefault(m.group(1), [])
        elif m := _SASS_LINE.match(line):
            current.append(m.group(1))
    return {k: v for k, v in functions.items() if v}


def count_sass_opcodes(opcodes: list[str]) -> dict[str, int]:
    return {name: sum(1 for op in opcodes if fam.sass.search(op)) for name, fam in FAMILIES.items()}


@functools.cache
def tool(name: str) -> str | None:
    """A CUDA binary tool: Triton's wheel first (it ships them), then CUDA_HOME, then PATH."""
    candidates = []
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)
    except ImportError:  # pragma: no cover - triton is a dependency
        pass
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            candidates.append(Path(home) / "bin" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which(name)


def disassemble(cubin: bytes) -> str:
    """SASS of a cubin through cuobjdump (raises RuntimeError with the tool's message)."""
    cuobjdump = tool("cuobjdump")
    if cuobjdump is None:
        raise RuntimeError("cuobjdump not found (looked in Triton's wheel, CUDA_HOME and PATH)")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        proc = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


def count_cubin(cubin: bytes) -> dict[str, dict[str, int]]:
    """Family counts per kernel function in a cubin."""
    return {fn: count_sass_opcodes(ops) for fn, ops in sass_opcodes(disassemble(cubin)).items()}


def features_present(counts: dict[str, int], feature: str) -> bool:
    return any(counts.get(fam, 0) > 0 for fam in FEATURES[feature])
