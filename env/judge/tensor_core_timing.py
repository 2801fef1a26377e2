"""Whether the tensor cores did the timed calls' work, from their speed.

The executed instruction counts behind a required tensor-core feature come from one call run under Nsight
Compute, and a candidate can tell that call apart (the profiler's slow kernel replay): a kernel with a
tensor-core path taken only there and a CUDA-core path everywhere else shows the instructions executed
while every other call does without them. The timed calls' own speed is evidence it cannot shape: CUDA
cores alone reach at most ``Ceilings.without_tensor_cores``, so a timed call that ran the task's flops
faster than that, with room for a product done in fewer multiplications (Strassen's: ``MARGIN``), used
the tensor cores. ``EvalResult.arch_verified`` needs it shown on every bench case; a kernel below that
speed keeps its verdict and its reward (``required_features_met`` is the profile's alone), not the mark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from warpgym.env.common.device import ceilings_for
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation
    from warpgym.env.judge.result import Timing

TENSOR_CORE_FEATURES = ("wgmma", "mma", "tcgen05")
MARGIN = 1.5
"""How far above the CUDA cores' ceiling a timed call must run: two levels of Strassen's product do 0.77 of
the flops, three 0.67, so a CUDA-core kernel could read up to 1.5 times its real rate."""


def judge(ev: Evaluation) -> None:
    """After the timing: ``result.timed_tensor_cores`` per bench case, and ``arch_verified`` withdrawn when a
    timed case ran no faster than CUDA cores could have, or when the verdict is not correct (False for a
    wrong answer, None for one no check decided)."""
    task, result = ev.task, ev.result
    required = task.required_features.get(ev.options.target, ())
    if result.arch_verified and result.correct is not True:
        # The mark is of a correct verdict's kernels: none stands on a wrong answer, nor on one never checked.
        result.arch_verified = None if result.correct is None else False
        return
    if not result.arch_verified or result.violations or not any(f in TENSOR_CORE_FEATURES for f in required):
        return  # nothing to show, or a verdict that already fails
    ceilings = ceilings_for(ev.device)
    if not result.timing or ceilings is None:
        why = "no bench case was timed" if not result.timing else "this card's ceilings are unknown"
        result.skipped_checks.append(f"tensor cores in the timed calls: {why}; the required instructions are "
                                     "shown executed in the profiled call only")
        return
    evidence = [_case_evidence(t, ceilings.without_tensor_cores(t.case.get("dtype", task.dtypes[0])))
                for t in result.timing]
    result.timed_tensor_cores = evidence
    if not all(e["shown"] for e in evidence):
        result.arch_verified = False


def _case_evidence(timing: Timing, cuda_cores: float) -> dict[str, object]:
    """The rate of the timed median (``Timing.tflops``, the task's flops over it). Not the device time of the
    traced blocks: a candidate that tells them apart could run less there, and only its untraced calls'
    events are bound to its full work (the timed work rule, the sampled answers)."""
    tflops = timing.tflops or 0.0
    return {"case": case_label(timing.case), "tflops": round(tflops, 1), "cuda_core_tflops": cuda_cores,
            "shown": tflops > MARGIN * cuda_cores}


def feedback_lines(evidence: list[dict[str, object]] | None) -> list[str]:
    """One line per bench case whose timed calls did not show the tensor cores at work."""
    return [f"Tensor cores not shown in the timed calls on {e['case']}: {e['tflops']} TFLOP/s is within "
            f"{MARGIN}x of what CUDA cores reach without them ({e['cuda_core_tflops']:g}), so the required "
            "instructions are shown only in the call run under the profiler: no arch-verified mark"
            for e in evidence or [] if not e["shown"]]
