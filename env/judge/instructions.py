"""Which instruction families prove each feature a task may require.

A required feature passes only when present in the code AND, on a GPU, executed (``executed``
counts come from Nsight Compute; see ``profile.py``). The families themselves, and counting them in
PTX and SASS, are facts of the instruction sets and live in the toolchain; they are re-exported
here for the judge.
"""

from __future__ import annotations

from warpgym.env.toolchain.disassemble import count_cubin
from warpgym.env.toolchain.families import FAMILIES, Family, count_ptx

__all__ = ["FAMILIES", "FEATURES", "Family", "count_cubin", "count_ptx"]

# Feature names tasks may require, mapped to the families that prove them.
FEATURES: dict[str, tuple[str, ...]] = {
    "wgmma": ("wgmma",), "mma": ("mma.sync", "wgmma", "tcgen05"), "tma": ("tma",),
    "mbarrier": ("mbarrier",), "setmaxnreg": ("setmaxnreg",), "tcgen05": ("tcgen05",),
    "cp.async": ("cp.async",), "ldmatrix": ("ldmatrix",), "stmatrix": ("stmatrix",), "cluster": ("cluster",),
    "bulk-copy": ("bulk-copy",), "elect": ("elect",), "fence.proxy.async": ("fence.proxy.async",),
}

