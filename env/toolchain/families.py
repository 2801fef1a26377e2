"""Instruction families: how each Hopper/Blackwell feature shows in PTX and in SASS.

A fact of the instruction sets, so it lives in the toolchain: the loader counts the families of
every module it builds, and the judge (``env/judge/instructions.py``) decides which families prove
a task's required features. Counts are of instruction lines only (directives, labels, comments and
declarations never count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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
    Family("mma.sync", _re(r"^(wmma\.mma|mma(\.sp(::ordered_metadata)?)?)\.sync\."),
           _re(r"^(HMMA|IMMA|DMMA|BMMA)\b"),
           "warp-level matrix multiply-accumulate (sm_80 style: mma.sync, its sparse form, wmma.mma)"),
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

_PTX_SKIP = re.compile(r"^(\.|//|\}|\{|\$|@?$)")
_PTX_LABEL = re.compile(r"^[$\w]+:")
_PTX_PRED = re.compile(r"^@!?%?\w+\s+")


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


def count_sass_opcodes(opcodes: list[str]) -> dict[str, int]:
    return {name: sum(1 for op in opcodes if fam.sass.search(op)) for name, fam in FAMILIES.items()}
