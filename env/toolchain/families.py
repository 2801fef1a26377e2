"""Instruction families: how each Hopper/Blackwell feature shows in PTX and in SASS.

A fact of the instruction sets, so it lives in the toolchain: the loader counts the families of
every module it builds, and the judge (``env/judge/instructions.py``) decides which families prove
a task's required features. Counts are of instructions only (directives, labels, comments, string
literals and declarations never count). The families a feature requires hold the instructions that do
its work (``wgmma``: the multiply-accumulates; ``tma``: tensor copies into shared memory; ``tcgen05``: its
MMAs); what orders, prefetches, stores or moves around them is reported in families of its own
(``wgmma-sync``, ``tma-prefetch``, ``tma-store``, ``tcgen05-tmem``): every instruction is still counted once.
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
    placeholder: bool = False
    """ptxas emits one of this family's SASS opcodes for PTX that holds none of the family's instructions
    (``sass_placeholder``): a SASS count of it stands as the instruction compiled in only beside a PTX one."""


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("wgmma", _re(r"^wgmma\.mma_async\b"), _re(r"^(HGMMA|QGMMA|IGMMA|BGMMA)\b"),
           "warpgroup matrix multiply-accumulates (sm_90a): wgmma.mma_async, HGMMA and its kin in SASS",
           placeholder=True),
    Family("wgmma-sync", _re(r"^wgmma\.(?!mma_async\b)"), _re(r"^WARPGROUP\."),
           "wgmma.fence, commit_group and wait_group (WARPGROUP.ARRIVE/DEPBAR): ordering, no arithmetic"),
    Family("mma.sync", _re(r"^(wmma\.mma|mma(\.sp(::ordered_metadata)?)?)\.sync\."),
           _re(r"^(HMMA|IMMA|DMMA|BMMA)\b"),
           "warp-level matrix multiply-accumulate (sm_80 style: mma.sync, its sparse form, wmma.mma)"),
    Family("tma", _re(r"^cp\.async\.bulk\.tensor\.\w+\.shared::\w+\.global\b"), _re(r"^UTMALDG\b"),
           "tensor memory accelerator bulk tensor copies from global into shared memory"),
    Family("tma-store", _re(r"^cp(\.reduce)?\.async\.bulk\.tensor\.(?!\w+\.shared::\w+\.global\b)"),
           _re(r"^UTMA(STG|REDG)\b"), "bulk tensor copies and reductions from shared memory to global"),
    Family("tma-prefetch", _re(r"^cp\.async\.bulk\.prefetch\.tensor\."), _re(r"^UTMAPF\b"),
           "bulk tensor prefetches into L2 (no copy into shared memory)"),
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
    Family("tcgen05", _re(r"^tcgen05\.mma\b"), _re(r"^UTC\w*MMA\b"),
           "fifth-generation tensor-core matrix multiply-accumulates (sm_100a): tcgen05.mma, UTC*MMA"),
    Family("tcgen05-tmem", _re(r"^tcgen05\.(?!mma\b)"), _re(r"^(UTCATOM\w*|LDTM|STTM|UTCBAR|UTCCP)\b"),
           "tensor memory and its ordering (tcgen05 alloc, ld, st, cp, commit, fence, wait): no arithmetic"),
    Family("cluster", _re(r"^(barrier\.cluster|mapa)\b"), _re(r"^UCGABAR_\w+"),
           "thread-block clusters and distributed shared memory"),
    Family("elect", _re(r"^elect\.sync\b"), _re(r"^ELECT\b"),
           "electing one lane of a warp (issues TMA/MMA once)"),
    Family("fence.proxy.async", _re(r"^fence\.proxy\.async\b"), _re(r"^FENCE\.VIEW\.ASYNC\b"),
           "ordering generic-proxy writes before async-proxy (TMA, wgmma) reads"),
)}

_NOT_CODE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
"""String literals, line comments and block comments (an unclosed one runs to the end), leftmost first: a
``/*`` inside a string or a line comment opens nothing, and ``//`` inside a block comment ends nothing."""
_PTX_STATEMENT = re.compile(r"[;\n]")
_PTX_PREFIX = re.compile(r"^(\s*[{}]|\s*[$%\w]+:)*\s*")
"""Block braces and labels before a statement's mnemonic."""
_PTX_PRED = re.compile(r"^@!?%?\w+\s+")
_PTX_MNEMONIC = re.compile(r"[A-Za-z]\w*(\.[\w:]+)*")
_GMMA_PLACEHOLDER = re.compile(r"^\s*\{?\s*(@!?U?P(T|\d+)\s+)?[HQIB]GMMA\.\S+\s+RZ\s*,")


def code_only(ptx: str) -> str:
    """The PTX without its comments and string literals (each comment keeps its line breaks)."""
    return _NOT_CODE.sub(lambda m: '""' if m.group().startswith('"') else "\n" * m.group().count("\n") or " ",
                         ptx)


def ptx_mnemonics(ptx: str) -> list[str]:
    """The mnemonic of every instruction of a PTX module: of each statement (ended by ``;`` or a line
    break), once comments, string literals, block braces, labels and predicates are gone. Directives
    (``.reg``, ``.loc``, data such as ``.b8``) and the operand lines of a statement written over several
    lines have none."""
    out = []
    for piece in _PTX_STATEMENT.split(code_only(ptx)):
        line = _PTX_PRED.sub("", _PTX_PREFIX.sub("", piece, count=1))
        token = line.split(None, 1)[0] if line.strip() else ""
        if _PTX_MNEMONIC.fullmatch(token):
            out.append(token)
    return out


def sass_placeholder(line: str) -> bool:
    """Whether a SASS instruction line (as cuobjdump or Nsight Compute prints it) is ptxas's placeholder: a
    GMMA that writes RZ, emitted for ``wgmma.fence``/``commit_group``/``wait_group`` with no
    ``wgmma.mma_async`` (``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0``). It multiplies nothing."""
    return bool(_GMMA_PLACEHOLDER.match(line))


def count_ptx(ptx: str) -> dict[str, int]:
    mnemonics = ptx_mnemonics(ptx)
    return {name: sum(1 for m in mnemonics if fam.ptx.search(m)) for name, fam in FAMILIES.items()}


def count_sass_opcodes(opcodes: list[str]) -> dict[str, int]:
    return {name: sum(1 for op in opcodes if fam.sass.search(op)) for name, fam in FAMILIES.items()}
