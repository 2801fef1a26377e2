"""Reading PTX and ptxas's report: the kernels and their parameters, launch bounds, function bodies,
and the registers, spills and shared memory ``ptxas -v`` prints for each kernel."""

from __future__ import annotations

import re
from dataclasses import dataclass

from warpgym.env.toolchain.families import code_only


@dataclass
class Param:
    """One kernel parameter as the PTX declares it: its type, and its size in bytes."""

    name: str
    type: str
    """PTX scalar type (``u64``, ``f32``, ...) or ``b8`` for a by-value aggregate."""
    size: int
    array: bool = False
    pointer: bool = False


_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+((?:\.ptr\s+)?(?:\.\w+\s+)*)"
    r"(?:\.align\s+\d+\s+)?([\w$]+)(?:\s*\[(\d+)\])?"
)
_SIZES = {
    **dict.fromkeys(("u8", "s8", "b8"), 1),
    **dict.fromkeys(("u16", "s16", "b16", "f16", "bf16"), 2),
    **dict.fromkeys(("u32", "s32", "b32", "f32"), 4),
    **dict.fromkeys(("u64", "s64", "b64", "f64"), 8),
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


def launch_bounds(ptx: str, kernel: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """A kernel's ``.reqntid`` and ``.maxntid`` (threads per block it was compiled for), when declared."""
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
    """The body of each function (``.entry`` or ``.func``) of a PTX module, by name, without comments and
    string literals: a commented-out copy of a function is none of the module's."""
    ptx = code_only(ptx)
    out: dict[str, str] = {}
    starts = [(m.start(), m.group(1)) for m in _FUNC_START.finditer(ptx)]
    for i, (pos, fname) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(ptx)
        out[fname] = ptx[pos:end]
    return out


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
