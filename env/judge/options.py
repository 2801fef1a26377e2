"""What one evaluation is asked to do: target, device, shape sets, timing, limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from warpgym.env.toolchain.targets import TARGETS


@dataclass
class Limits:
    """Seconds allowed for each kind of request before the worker is killed."""

    load: float = 60.0
    run: float = 120.0
    compile: float = 300.0
    timing: float = 300.0


@dataclass
class EvalOptions:
    target: str = "sm_90a"
    device: str = "auto"
    shape_sets: tuple[str, ...] = ("dev",)
    timing: bool = True
    warmup: int = 5
    reps: int = 30
    limits: Limits = field(default_factory=Limits)
    reveal_shapes: bool = True
    """Whether feedback may name the failing case (False for heldout scoring shown to a model)."""
    profile: bool | None = None
    """On a GPU, count executed instructions with Nsight Compute. None (the default) profiles exactly
    when the task requires instruction features on the target, since those must be shown executed;
    an Nsight Compute run costs tens of seconds, too much to pay for information alone."""
    allow_torch: bool = False
    """KernelBench's rule: the candidate may call PyTorch besides its own kernels (the result says so, and
    on a GPU reports the share of GPU time in its own kernels). The default, strict, refuses any PyTorch
    compute op in the candidate's code."""
    memcheck: bool = False
    """On a GPU, run compute-sanitizer memcheck on one case before timing; any error fails the candidate."""

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"unknown target {self.target!r}; use one of {', '.join(sorted(TARGETS))}")
        for name in self.shape_sets:
            if name not in ("dev", "heldout", "bench"):
                raise ValueError(f"unknown shape set {name!r}; use dev, heldout or bench")
