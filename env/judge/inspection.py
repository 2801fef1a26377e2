"""The instruction stage and the GPU's tools: instruction families counted in the compiled code, the
executed counts Nsight Compute measures, and compute-sanitizer memcheck on one case."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from warpgym.env.judge import shipped, tensor_core_kind
from warpgym.env.judge.device_evidence import base_name, base_names
from warpgym.env.judge.findings import profiled_findings
from warpgym.env.judge.instructions import FAMILIES, FEATURES
from warpgym.env.judge.plan import Check
from warpgym.env.judge.work import executed_work
from warpgym.env.judge.work import shortfalls as work_shortfalls
from warpgym.env.protocol.violations import violation
from warpgym.env.toolchain.families import sass_placeholder
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation
    from warpgym.env.judge.profile import DriverRun, Profile
    from warpgym.env.judge.result import EvalResult, KernelReport


log = logging.getLogger(__name__)


def _first_checked_set(ev: Evaluation) -> str:
    return next((s for s in ev.options.shape_sets if s != "bench"), "dev")


def instructions(ev: Evaluation) -> None:
    """Totals per instruction family, and whether the task's required features are compiled in and,
    where it can be measured, executed and doing the task's work (judge/work.py)."""
    task, options, result = ev.task, ev.options, ev.result
    totals: dict[str, dict[str, int | None]] = {fam: {"ptx": 0, "sass": 0, "executed": None}
                                                for fam in FAMILIES}
    kernels = [k for k in result.kernels if k.target == options.target]
    for kernel in kernels:
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
        if why := not_compiled_in(result, kernels, families):
            result.missing_features[feature] = why
        elif measured and measured.unproven:
            result.missing_features[feature] = measured.unproven
        elif measured and not any(totals[f]["executed"] for f in families):
            result.missing_features[feature] = (
                f"{'/'.join(families)} instructions are compiled in (sass "
                f"{sum(totals[f]['sass'] or 0 for f in families)}) but none was executed: they are dead code "
                "on this path (a branch never taken, or a size that picks another kernel)")
        elif measured and feature in measured.shortfalls:
            result.missing_features[feature] = measured.shortfalls[feature]
    result.required_features_met = not result.missing_features
    result.arch_verified = False if result.missing_features else (True if measured else None)
    if result.arch_verified is None:
        result.skipped_checks.append(UNSHOWN_MARK)
    tensor_core_kind.judge(ev)


UNSHOWN_MARK = ("the arch-verified mark: the required instructions were found in the compiled code only; the "
                "mark needs them seen executed and doing the task's work in a GPU run under Nsight Compute, "
                "so it is left undecided")


def sass_unread(kernel: KernelReport) -> str | None:
    """Why no SASS of ``kernel`` could be read (its disassembly failed), or None when its SASS was read. A
    loader kernel's SASS counts as unread only where that of every module defining it was."""
    builds = kernel.builds or [""]
    reasons = [kernel.sass_unread.get(build) for build in builds]
    return reasons[0] if all(reasons) else None


def not_compiled_in(result: EvalResult, kernels: list[KernelReport], families: tuple[str, ...]) -> str:
    """Why no kernel holds the instructions of ``families`` that do the feature's work, or "" when one does.

    The SASS is what runs, so where it was read it decides: an instruction in the PTX only (commented out,
    unreachable, removed by ptxas as dead) never reaches the GPU. A family whose SASS opcode ptxas also
    emits as a placeholder (``Family.placeholder``: a GMMA writing RZ for a lone ``wgmma.fence``) counts in
    the SASS only beside its PTX instruction in the same kernel. Where no SASS could be read, the PTX
    counts alone, and the skipped checks say so."""
    ptx_only: list[str] = []
    placeholders: list[str] = []
    unread: list[tuple[str, str]] = []
    for kernel in kernels:
        missing_sass = sass_unread(kernel)
        for fam in families:
            counts = kernel.families.get(fam, {})
            ptx, sass = counts.get("ptx") or 0, counts.get("sass") or 0
            if missing_sass is not None:
                if ptx:
                    unread.append((kernel.name, missing_sass))
            elif sass and (ptx or not FAMILIES[fam].placeholder):
                return ""
            elif sass:
                placeholders.append(f"{kernel.name} ({fam} sass {sass}, ptx 0)")
            elif ptx:
                ptx_only.append(f"{kernel.name} ({fam} ptx {ptx}, sass 0)")
    names = "/".join(families)
    if unread:
        kernel, why = unread[0]
        result.skipped_checks.append(f"the SASS of {kernel} could not be read ({why}), so its {names} "
                                     "instructions were counted in its PTX only")
        return ""
    if ptx_only:
        return (f"{names} instructions are in the PTX but not in the SASS ptxas made of it "
                f"({', '.join(ptx_only)}): code that never reaches the GPU (commented out, unreachable, or "
                "removed as dead) does not count")
    if placeholders:
        return (f"the SASS holds {names} opcodes but the PTX none of their instructions "
                f"({', '.join(placeholders)}): ptxas emits a GMMA that writes RZ for wgmma.fence, "
                "commit_group and wait_group with no wgmma.mma_async, and it multiplies nothing")
    found = [f"{sib} (ptx {c['ptx']}, sass {c['sass']})" for sib, c in result.instructions.items()
             if any(sib.startswith(f"{fam}-") for fam in families) and (c["ptx"] or c["sass"])]
    beside = (f"; found only {', '.join(found)}, which do not do the feature's work" if found else "")
    return (f"no {names} instruction in any compiled kernel (counted: "
            f"{'; '.join(FAMILIES[f].description for f in families)}){beside}")


@dataclass
class Measured:
    """What Nsight Compute showed of the profiled call, beyond the executed counts."""

    shortfalls: dict[str, str] = field(default_factory=dict)
    """Required features whose instructions did not do the task's work (judge/work.py), with why."""
    unproven: str = ""
    """Why the profile cannot stand for the whole call (launches it did not see, a call that failed)."""


def executed_counts(ev: Evaluation, totals: dict[str, dict[str, int | None]]) -> Measured | None:
    """On a GPU, fill ``totals[family]["executed"]`` from Nsight Compute and weigh the work the
    instructions did against the task's; None when not measured."""
    task, options, result = ev.task, ev.options, ev.result
    required = bool(task.required_features.get(options.target))
    wanted = options.profile if options.profile is not None else required
    if not ev.on_gpu or not wanted:
        if required:
            why = "profiling was turned off" if ev.on_gpu else "they need a GPU"
            result.skipped_checks.append(f"executed instruction counts: {why}; required features were "
                                         "checked in the compiled code only")
        return None
    from warpgym.env.judge.profile import ProfileError, ToolMissing, family_counts, profile_candidate

    names = sorted({k.name for k in result.kernels if k.target == options.target})
    first = _first_checked_set(ev)
    case = max(task.cases(first), key=task.flops)
    profiled = Check(first, case, task.seeds[0], task.distributions[0])  # its answer is judged as this call's
    t0 = time.perf_counter()
    log.info("%s: executed instructions under Nsight Compute, case %s, kernels %s", task.id, case, names)
    try:
        with ev.gpu_shared():
            prof = profile_candidate(task.id, ev.candidate.source, case, seed=ev.seeds.seed(profiled.seed),
                                     role=profiled.seed, salt=ev.seeds.salt,
                                     distribution=profiled.distribution, target=options.target,
                                     kernels=names, timeout=options.limits.timing, device=ev.device,
                                     attachments=ev.candidate.attachments,
                                     model=shipped.model_call(ev, case, fresh=True))
    except ToolMissing as exc:
        result.skipped_checks.append(f"executed instruction counts: {exc}; required features were checked in "
                                     "the compiled code only")
        return None
    except ProfileError as exc:  # the candidate's run under the tool failed, hung or launched nothing seen
        result.skipped_checks.append(f"executed instruction counts: {exc}")
        return Measured(unproven=f"Nsight Compute could not show what the profiled call executed "
                        f"({str(exc)[:200]}); a required feature counts only where it is seen to run")
    finally:
        result.seconds["profile"] = time.perf_counter() - t0
    if not profiled_findings(ev, prof.run) or not profiled_answer(ev, prof.run, profiled):
        return Measured(unproven="the profiled call broke the rules or answered wrong, so what it executed "
                        "does not stand for the checked calls")
    if prof.reprinted:
        result.notes.append(f"Nsight Compute printed {prof.reprinted} of the profiled call's launches twice; "
                            "each was counted once")
    rows = [[r for r in k.rows if not sass_placeholder(r.source)] for k in prof.kernels]
    for fam, n in family_counts(r for launch in rows for r in launch).items():
        if fam in totals:
            totals[fam]["executed"] = n
    work = executed_work(rows)
    flops, nbytes = task.flops(case), task.bytes(case)
    result.executed_work = work.as_dict(flops, nbytes)
    shortfalls, unmeasured = work_shortfalls(task.required_features.get(options.target, ()), FEATURES, work,
                                             flops, nbytes)
    result.skipped_checks.extend(unmeasured)
    return Measured(shortfalls, unproven(ev, prof, case))


def unproven(ev: Evaluation, prof: Profile, case: dict[str, Any]) -> str:
    """Why the profiled launches cannot stand for the call: a call that did not return, launches Nsight
    Compute did not profile (past its launch count, or kernels named in no compiled code) whose
    instructions nobody counted, or other kernels than the checked calls of the same case ran on the GPU."""
    from warpgym.env.judge.profile import MAX_PROFILED_LAUNCHES

    run = prof.run
    if run is None:
        return ""
    if not run.returned:
        return (f"the call under Nsight Compute did not return normally ({run.error[:200] or 'no reply'}): "
                "what it executed is no evidence of a finished call")
    made, seen = run.launches, len(prof.kernels)
    if made is not None and made > seen:
        return (f"the call launched {made} kernels and Nsight Compute profiled {seen} of them (the first "
                f"{MAX_PROFILED_LAUNCHES} of the kernels named in the compiled code): what the others ran "
                "is not known, so the work done by the required instructions cannot be shown")
    checked = checked_kernels(ev, case)
    profiled = base_names(k.name for k in prof.kernels)
    if checked is not None and checked != profiled:
        return (f"the profiled call ran the kernels {sorted(profiled)}, the checked calls of the same case "
                f"{sorted(checked)}: the profile is not of the code that computed the checked answers")
    return ""


def checked_kernels(ev: Evaluation, case: dict[str, Any]) -> set[str] | None:
    """The candidate's own kernels that the GPU ran in the checked calls of ``case`` (device traces), by
    base name; None where no such call was traced."""
    label = case_label(case)
    own = base_names(k.name for k in ev.result.kernels)
    traces = [t for c, t in ev.device_traces if c == label and not t.get("error")]
    if not traces:
        return None
    return {name for t in traces for a in t.get("activities", []) if a.get("kind") == "kernel"
            and (name := base_name(str(a.get("name", "")))) in own}


def profiled_answer(ev: Evaluation, run: DriverRun | None, check: Check) -> bool:
    """The profiled call's outputs, judged as ``check``'s (the call whose inputs it was given): a candidate
    that computes another way under the profiler is caught by its answer. False, with the verdict failed,
    when it is wrong."""
    reply = run.reply if run is not None else None
    if reply is None or not reply.ok:
        return True
    verdict = ev.judge(check, reply)
    if verdict.passed:
        return True
    ev.flag("profiled-call-wrong", case=check.case, detail=(verdict.message or "outputs differ")[:300])
    ev.result.correct = False
    return False


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
