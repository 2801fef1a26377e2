"""Which kind of tensor core did the timed work: the one the task requires, unless another is compiled in.

The timed rate (tensor_core_timing.py) shows that tensor cores did the timed calls' work, not which ones.
A kernel with a wgmma path taken under the profiler and an mma.sync path taken everywhere else shows wgmma
executed in the profiled call, and its timed calls run faster than CUDA cores could: both rules pass while
the timed work never touched the architecture's instructions. The compiled code is evidence no call can
reshape: when the task requires one kind (wgmma on sm_90a, tcgen05 on sm_100a) and a kernel the candidate
built holds instructions of another kind, nothing shows which kind the timed calls ran, and the mark is
withdrawn. The verdict and the reward stay (``required_features_met`` is the profile's alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from warpgym.env.judge.instructions import FEATURES

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

KINDS = ("wgmma", "mma.sync", "tcgen05")
"""The instruction families that run on tensor cores."""


def other_kinds(ev: Evaluation) -> dict[str, list[str]]:
    """Each tensor-core family the task's required features do not name, with the candidate's kernels
    (for the evaluation's target) that hold it in their PTX or SASS; empty when no kind is required."""
    required = ev.task.required_features.get(ev.options.target, ())
    named = {fam for feature in required for fam in FEATURES[feature] if fam in KINDS}
    if not named:
        return {}
    found: dict[str, list[str]] = {}
    for kernel in ev.result.kernels:
        if kernel.target != ev.options.target:
            continue
        for fam in KINDS:
            counts = kernel.families.get(fam, {})
            if fam not in named and (counts.get("ptx") or counts.get("sass")):
                found.setdefault(fam, []).append(kernel.name)
    return found


def judge(ev: Evaluation) -> None:
    """Record the other kinds compiled in and withdraw the mark when there are any. Run once the kernels are
    counted, and again after the timing (modules built during it are counted then)."""
    found = other_kinds(ev)
    if found:
        ev.result.other_tensor_cores = found
        if ev.result.arch_verified:
            ev.result.arch_verified = False


def feedback_lines(found: dict[str, list[str]] | None) -> list[str]:
    return [f"Tensor cores of another kind compiled in: {fam} in {', '.join(sorted(set(kernels)))}. The task "
            "requires its architecture's own, and nothing shows which kind the timed calls ran: no "
            "arch-verified mark" for fam, kernels in sorted((found or {}).items())]
