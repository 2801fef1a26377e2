"""The instruction stage and the GPU's tools: instruction families counted in the compiled code, the
executed counts Nsight Compute measures, and compute-sanitizer memcheck on one case."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from warpgym.env.judge import shipped
from warpgym.env.judge.findings import profiled_findings
from warpgym.env.judge.instructions import FAMILIES, FEATURES
from warpgym.env.protocol.violations import violation

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation


log = logging.getLogger(__name__)


def _first_checked_set(ev: Evaluation) -> str:
    return next((s for s in ev.options.shape_sets if s != "bench"), "dev")


def instructions(ev: Evaluation) -> None:
    """Totals per instruction family, and whether the task's required features are compiled in and,
    where it can be measured, executed."""
    task, options, result = ev.task, ev.options, ev.result
    totals: dict[str, dict[str, int | None]] = {fam: {"ptx": 0, "sass": 0, "executed": None}
                                                for fam in FAMILIES}
    for kernel in result.kernels:
        if kernel.target != options.target:
            continue
        for fam, counts in kernel.families.items():
            totals[fam]["ptx"] = (totals[fam]["ptx"] or 0) + counts["ptx"]
            totals[fam]["sass"] = (totals[fam]["sass"] or 0) + counts["sass"]
    result.instructions = totals
    required = list(task.required_features.get(options.target, ()))
    result.required_features = required
    if not required:
        result.required_features_met = None if task.language == "triton" else True
        return
    measured = executed_counts(ev, totals)
    for feature in required:
        families = FEATURES[feature]
        if not any(totals[f]["sass"] or totals[f]["ptx"] for f in families):
            result.missing_features[feature] = f"no {'/'.join(families)} instruction in any compiled kernel"
        elif measured and not any(totals[f]["executed"] for f in families):
            result.missing_features[feature] = (
                f"{'/'.join(families)} instructions are compiled in (sass "
                f"{sum(totals[f]['sass'] or 0 for f in families)}) but none was executed: they are dead code "
                "on this path (a branch never taken, or a size that picks another kernel)")
    result.required_features_met = not result.missing_features
    result.arch_verified = result.required_features_met


def executed_counts(ev: Evaluation, totals: dict[str, dict[str, int | None]]) -> bool:
    """On a GPU, fill ``totals[family]["executed"]`` from Nsight Compute; False when not measured."""
    task, options, result = ev.task, ev.options, ev.result
    required = bool(task.required_features.get(options.target))
    wanted = options.profile if options.profile is not None else required
    if not ev.on_gpu or not wanted:
        if required:
            why = "profiling was turned off" if ev.on_gpu else "they need a GPU"
            result.skipped_checks.append(f"executed instruction counts: {why}; required features were "
                                         "checked in the compiled code only")
        return False
    from warpgym.env.judge.profile import ProfileError, profile_candidate

    names = sorted({k.name for k in result.kernels if k.target == options.target})
    case = max(task.cases(_first_checked_set(ev)), key=task.flops)
    t0 = time.perf_counter()
    log.info("%s: executed instructions under Nsight Compute, case %s, kernels %s", task.id, case, names)
    try:
        with ev.gpu_shared():
            prof = profile_candidate(task.id, ev.candidate.source, case, seed=ev.seeds.seed(task.seeds[0]),
                                     role=task.seeds[0], salt=ev.seeds.salt,
                                     distribution=task.distributions[0], target=options.target,
                                     kernels=names, timeout=options.limits.timing, device=ev.device,
                                     attachments=ev.candidate.attachments,
                                     model=shipped.model_call(ev, case, fresh=True))
    except ProfileError as exc:
        result.skipped_checks.append(f"executed instruction counts: {exc}")
        return False
    finally:
        result.seconds["profile"] = time.perf_counter() - t0
    if not profiled_findings(ev, prof.run):
        return False
    for fam, n in prof.families().items():
        if fam in totals:
            totals[fam]["executed"] = n
    return True


def memcheck(ev: Evaluation) -> bool:
    """compute-sanitizer memcheck on one case; an error is undefined behaviour, and fails."""
    from warpgym.env.judge.profile import ProfileError, memcheck_candidate

    task, options, result = ev.task, ev.options, ev.result
    case = task.cases(_first_checked_set(ev))[0]
    t0 = time.perf_counter()
    log.info("%s: compute-sanitizer memcheck, case %s", task.id, case)
    try:
        with ev.gpu_shared():
            report = memcheck_candidate(task.id, ev.candidate.source, case,
                                        seed=ev.seeds.seed(task.seeds[0]), role=task.seeds[0],
                                        salt=ev.seeds.salt, distribution=task.distributions[0],
                                        target=options.target,
                                        timeout=options.limits.timing, device=ev.device,
                                        attachments=ev.candidate.attachments,
                                        model=shipped.model_call(ev, case, fresh=True))
    except ProfileError as exc:
        result.skipped_checks.append(f"memcheck: {exc}")
        return True
    finally:
        result.seconds["memcheck"] = time.perf_counter() - t0
    if not profiled_findings(ev, report.run):
        return False
    if report.ok:
        return True
    result.correct = False
    result.violations.append(violation("memcheck", errors=report.errors, case=case, report=report.text))
    return False
