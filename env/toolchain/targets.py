"""The targets warpgym builds for, and every per-target fact the code relies on, in one table.

The loader's launch checks, Triton's offline compilation, the task suite's required instructions,
the hardware prompts and the experiment configuration all read this table, so adding a target or
correcting a limit is one edit here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    """The ptxas architecture, with the 'a' suffix that unlocks the architecture-specific instructions."""
    capability: tuple[int, int]
    architecture: str
    tensor_cores: str
    """The instruction family of the target's own matrix-multiply instructions."""
    max_shared_per_block: int = 232448
    """Opt-in shared memory per block (static + dynamic), bytes: 227 KB on H100/H200 and B200."""
    default_shared_limit: int = 48 * 1024
    """Dynamic shared memory a block gets without raising the function's attribute."""
    max_threads_per_block: int = 1024
    registers_per_sm: int = 65536
    portable_cluster: int = 8
    max_cluster: int = 16
    """Blocks per cluster with the non-portable opt-in."""

    @property
    def virtual_architecture(self) -> str:
        """NVRTC's ``--gpu-architecture`` for this target (``compute_90a``)."""
        return "compute_" + self.name.removeprefix("sm_")

    @property
    def triton_capability(self) -> int:
        """The capability as Triton's ``GPUTarget`` takes it (90 for 9.0)."""
        return self.capability[0] * 10 + self.capability[1]


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("sm_90a", (9, 0), "Hopper", tensor_cores="wgmma"),
    Target("sm_100a", (10, 0), "Blackwell", tensor_cores="tcgen05"),
)}
NAMES: tuple[str, ...] = tuple(TARGETS)
DEFAULT = "sm_90a"


def check(target: str) -> str:
    """The target itself when it is one of ours; a ValueError naming the known ones otherwise."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; the loader builds for {', '.join(TARGETS)}")
    return target


def for_capability(major: int, minor: int | None = None) -> str | None:
    """The target a GPU of this capability runs (by major version alone when ``minor`` is None)."""
    for t in TARGETS.values():
        if t.capability[0] == major and minor in (None, t.capability[1]):
            return t.name
    return None
