"""The correctness stage: every planned check run and compared with the judge's own reference, then the
checks a single comparison cannot make (stale outputs, random ops' seeds, a late re-check on fresh
inputs, kernels that were never launched)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import torch
from warpgym.env.common.bits import same_bits
from warpgym.env.judge.channel import call_inputs
from warpgym.env.judge.compare import compare_outputs
from warpgym.env.judge.plan import (
    INTERPRETER_LIMITATION,
    NO_GPU_CUDA,
    Check,
    interpreter_limitation,
    runnable_here,
)
from warpgym.env.judge.references import digest, itemsize
from warpgym.env.judge.result import CaseResult
from warpgym.env.protocol.messages import RunReply
from warpgym.env.protocol.violations import violation

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

LATE_CALLS = 16
"""Extra calls before the late re-check (``late_recheck``)."""
LATE_SEED = 7919
"""The late re-check's first role (its inputs' seeds are derived from it: judge/seeds.py)."""
NO_REPLY = RunReply(ok=False, error="no reply")


log = logging.getLogger(__name__)


def _case(check: Check, passed: bool | None, **fields: Any) -> CaseResult:
    return CaseResult(check.shape_set, check.case, check.seed, check.distribution, passed, **fields)


def check_all(ev: Evaluation, checks: list[Check], probe: Check | None, probe_reply: RunReply | None) -> None:
    """Run every check (the probe's reply is reused), stopping a shape set at its first failure."""
    from warpgym.env.judge import bench

    task, result = ev.task, ev.result
    failed_sets: set[str] = set()
    seen_outputs: dict[tuple[Any, ...], list[Any]] = {}
    digests: dict[tuple[Any, ...], list[tuple[str, str, int]]] = {}
    launched = loader_launched = 0
    for check in checks:
        if check.shape_set in failed_sets:
            continue
        if not runnable_here(task, check, ev.device):
            why = NO_GPU_CUDA if task.language == "cuda" else check.fault
            result.cases.append(_case(check, None, skipped=why))
            continue
        log.info("%s: %s check %s, seed %s, %s inputs", task.id, check.shape_set, check.case, check.seed,
                 check.distribution)
        if check.shape_set == "bench" and check is not probe:
            reply, case_result = bench.bench_check(ev, check)
        else:
            reply = probe_reply if check is probe else ev.run(check)
            case_result = ev.judge(check, reply) if reply is not None else None
        if reply is None or case_result is None:
            return
        if task.check is not None and case_result.passed:
            case_result = check_randomness(ev, check, reply, seen_outputs) or case_result
        case_result = stale(ev, check, reply, digests) or case_result
        result.cases.append(case_result)
        ev.release_memory()
        launched += reply.launches if reply.ok else 0
        loader_launched += reply.loader_launches if reply.ok else 0
        for note in reply.interpreter_notes:
            if note not in result.notes:
                result.notes.append(note)
        if case_result.passed is False:
            failed_sets.add(check.shape_set)
            if reply.kind in ("timeout", "crash"):
                break
    if not failed_sets and not (ev.on_gpu and ev.options.timing):
        late_recheck(ev, checks)  # on a GPU the timing loop and the check after it do this
    skipped = sorted({c.skipped for c in result.cases if c.skipped})
    result.skipped_checks.extend(skipped)
    ran = [c for c in result.cases if c.passed is not None]
    if ran and result.runtime_error is None:
        # a CUDA extension's launches are not Triton's: the device trace shows them (device_evidence)
        if task.language == "triton" and launched == 0 and not ev.extensions:
            result.violations.append(violation("no-kernel-launched", kernel="any Triton kernel",
                                               task="a Triton task"))
        if task.language == "cuda" and loader_launched == 0:
            result.violations.append(violation(
                "no-kernel-launched", kernel="a kernel built through warpgym.loader",
                task="a CUDA/PTX task"))
    result.correct = bool(ran) and all(c.passed for c in ran) and not result.violations
    if result.correct and interpreter_limited(result.cases):
        result.correct = None  # the candidate's own kernels chose what ran: a case left out is never passed
    if not ran:
        result.correct = None
        result.skipped_checks.append("no correctness check could run on this device")


def interpreter_limited(cases: list[CaseResult]) -> bool:
    """Whether some case was left to a GPU because the interpreter could not run the candidate's kernel.

    Unlike a bf16 case (left out by the plan, whatever the candidate), this follows from what the
    candidate's code did, so it could be provoked on purpose: such a verdict is never "correct"."""
    return any(c.skipped and c.skipped.startswith(INTERPRETER_LIMITATION) for c in cases)


def judge(ev: Evaluation, check: Check, reply: RunReply) -> CaseResult:
    """The verdict on one run's outputs, against the judge's reference (or the task's own check)."""
    task, result = ev.task, ev.result
    if not reply.ok and reply.kind == "interpreter" and ev.device == "cpu" and task.language == "triton":
        return _case(check, None, skipped=interpreter_limitation(reply.error or "", ev.options.target))
    if not reply.ok:
        kind = reply.kind or "runtime"
        prefix = {"timeout": "timed out: ", "crash": "crashed: "}.get(kind, "raised an error: ")
        if result.runtime_error is None:
            result.runtime_error = reply.error
        return _case(check, False, message=prefix + (reply.error or ""))
    outputs: list[Any] = list(reply.outputs or [])
    if task.check is not None:
        # The worker's very inputs: drawn on this evaluation's device (a CUDA generator's numbers are
        # not the CPU's), and checked there too, with the outputs moved to it.
        inputs = call_inputs(ev, check.case, check.seed, check.distribution, purpose=check.purpose)
        outputs = [o.to(ev.device) if isinstance(o, torch.Tensor) else o for o in outputs]
        with torch.no_grad(), ev.gpu_shared():
            problem = task.check(outputs[0] if len(outputs) == 1 else outputs, inputs, check.case)
        return _case(check, problem is None, message=problem or "")
    expected, meta = ev.reference(check)
    return _case(check, **compare_outputs(outputs, expected, meta, task))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_bits(a, b)
    return a == b


def check_randomness(ev: Evaluation, check: Check, reply: RunReply,
                     seen: dict[tuple[Any, ...], list[Any]]) -> CaseResult | None:
    """For random ops: the same seed must give the same output, and other seeds other outputs."""
    again = ev.run(check)
    if not again or not again.ok:
        return _case(check, False, message="a second run with the same seed failed")
    outputs = reply.outputs or []
    if not all(_same(a, b) for a, b in zip(outputs, again.outputs or [], strict=True)):
        return _case(check, False, message="two runs with the same inputs and seed gave different outputs")
    for other_seed, other in seen.get(check.key, []):
        if other_seed != check.seed and all(_same(a, b) for a, b in zip(outputs, other, strict=True)):
            return _case(check, False, message=f"seeds {other_seed} and {check.seed} gave identical outputs")
    seen.setdefault(check.key, []).append((check.seed, outputs))
    return None


def stale(ev: Evaluation, check: Check, reply: RunReply,
          digests: dict[tuple[Any, ...], list[tuple[str, str, int]]]) -> CaseResult | None:
    """The same outputs for inputs whose answers differ: results cached by pointer, shape or count. Outputs
    that are right for both inputs are not stale: a loss rounded to float16 takes the same value for
    two draws now and then."""
    if not reply.ok or ev.task.check is not None:
        return None
    expected, meta = ev.reference(check)
    mine = (digest(reply.outputs or []), digest(expected), check.seed)
    for out_digest, ref_digest, other_seed in digests.get(check.key, []):
        if out_digest == mine[0] and ref_digest != mine[1] \
                and not compare_outputs(list(reply.outputs or []), expected, meta, ev.task)["passed"]:
            found = violation("stale-output", seed=other_seed)
            ev.flag("stale-output", seed=other_seed)
            return _case(check, False, message=found.message)
    digests.setdefault(check.key, []).append(mine)
    return None


def late_recheck(ev: Evaluation, checks: list[Check]) -> None:
    """Call the candidate many more times, then check again on fresh inputs.

    The correctness runs are a candidate's first calls; on a GPU the timing loop comes next and the
    outputs are checked again after it. Where no timing runs (a CPU), this stands in for it, so a
    kernel that is right only while it is being watched, early on, fails here too.
    """
    result = ev.result
    runnable = [c for c in checks if runnable_here(ev.task, c, ev.device)]
    if not runnable:
        return
    # Sized by their reference answers: a bench case's is gigabytes, and never the smallest anyway.
    sized = [c for c in runnable if c.shape_set != "bench"] or runnable
    smallest = min(sized, key=lambda c: sum(itemsize(t) for t in ev.reference(c)[1]))
    dists = ev.task.distributions
    calls = [smallest.again(LATE_SEED + i, dists[i % len(dists)]) for i in range(LATE_CALLS)]
    calls.append(runnable[0].again(LATE_SEED - 1, dists[-1]))
    for n, check in enumerate(calls):
        verdict = ev.judge(check, ev.run(check) or NO_REPLY)
        if verdict.passed is None:  # the interpreter could not run it: the verdict cannot be "correct" now
            result.cases.append(verdict)
            return
        if not verdict.passed:
            verdict.message = f"call {n + 1} after the correctness runs, on fresh inputs: " + verdict.message
            result.cases.append(verdict)
            ev.flag("inconsistent", earlier="on the first calls",
                    later=f"on a later one (call {n + 1} after them)")
            return
    result.cases.append(verdict)
