"""What the device ran in the timed calls that were traced, judged after the timing.

A traced timed block (judge/timed_trace.py) answers to the rules of a checked call (device_evidence.py:
only the candidate's kernels compute, no large host-to-device copy, the trace whole) and to two that only
a comparison with the checked calls can make:
- every kernel a timed call ran ran in a checked call too: a kernel kept for the timing loop was never
  checked, whatever it computes;
- every timed call launches a kernel of the candidate's: a call that runs none returned an answer it did
  not compute (kept from an earlier call on the same inputs, which the timing loop reuses).
And one on the timed calls that were not traced, whose outputs nobody reads: a timed call may not take less
time than the candidate's kernels kept the GPU busy for, per call, in the traced timed blocks (the same
inputs, pace and clock) or in the bench check after the window (a call whose answer was judged), less
``TIMED_WORK_FLOOR``'s margin. A kernel that computes less only when timed (an answer kept from an earlier
call on the recurring timed inputs, returned beside a token launch) is faster than its own work, and a
candidate that behaves only while traced is faster than its traced blocks; either way the events of the
untraced calls, which the candidate cannot shorten without doing less, give it away.
The verdict is given once the timing is over, with the checked calls made after the first device verdict
(the bench check after each window), and it fails the candidate: a speedup measured on work that is not
the candidate's own is no speedup, so none is reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from warpgym.env.common.kernel_names import HARNESS_KERNELS
from warpgym.env.judge.device_evidence import (
    allowed_library,
    base_name,
    base_names,
    device_violations,
    kernels_seen,
    own_kernels,
)
from warpgym.env.protocol.violations import CODES, Violation
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation
    from warpgym.env.judge.result import Timing

TIMED_WORK_FLOOR = 0.7
"""A timed call's median milliseconds must be at least this fraction of the device time its work took when
traced or checked. On an H100, 64 honest references over 143 bench cases read at least 0.908 of their traced
work and 0.853 of their checked work (medians 1.003 and 1.004; docs/benchmarks.md, 2026-12-06); the kept
answers of tests/adversarial/candidates read 0.27 to 0.37 of their checked work. A candidate that skips
work only when timed gains at most 1 / TIMED_WORK_FLOOR."""

Traces = Iterable[tuple[str, Mapping[str, Any]]]


def timed_violations(timed: Traces, checked: Traces, own: Iterable[str], entrypoint: str,
                     allow_torch: bool = False) -> list[Violation]:
    """Violations in traced timed blocks (label, trace with its ``calls``), against the kernels the
    checked calls ran and the candidate's own kernels. With ``allow_torch`` (KernelBench's rule) library
    kernels are the candidate's work too: none is a violation, and each counts as a timed call's launch."""
    timed, own_names = list(timed), base_names(own)
    found = device_violations(timed, [*own, *HARNESS_KERNELS], entrypoint, allow_torch)
    if any(v.code == "device-trace" for v in found):
        return found  # an untrusted trace says nothing more
    ran_checked = {base_name(name) for name in kernels_seen(checked)}
    unchecked: Counter[str] = Counter()
    first: dict[str, str] = {}
    for label, trace in timed:
        calls, launches = max(1, int(trace.get("calls") or 1)), 0
        for activity in trace.get("activities", []):
            name = str(activity.get("name", ""))
            if activity.get("kind") != "kernel":
                continue
            if base_name(name) not in own_names:
                library = not allowed_library(name) and base_name(name) not in HARNESS_KERNELS
                launches += int(activity.get("count") or 1) if allow_torch and library else 0
                continue
            launches += int(activity.get("count") or 1)
            if base_name(name) not in ran_checked:
                unchecked[name] += int(activity.get("count") or 1)
                first.setdefault(name, label)
        if launches < calls and not any(v.code == "device-timed-no-kernel" for v in found):
            found.append(Violation(
                "device-timed-no-kernel",
                f"{calls} timed calls of {entrypoint}() ({label}) launched {launches} of your kernels: a "
                "timed call that runs no kernel returns an answer it did not compute (one kept from an "
                "earlier call on the same inputs?), and every checked call ran one"))
    for name, count in unchecked.most_common(5):
        found.append(Violation(
            "device-timed-unchecked-kernel",
            f"`{name[:200]}` ran in timed calls of {entrypoint}() ({first[name]}, {count} launches) but in "
            "none of its checked calls: a kernel that runs only while it is timed was never checked"))
    return found


def timed_work_violations(timings: Iterable[Timing], entrypoint: str,
                          floor: float = TIMED_WORK_FLOOR) -> list[Violation]:
    """Bench cases whose timed calls took less time than their own work took on the device when traced
    (``Timing.traced_device_ms``) or checked (``Timing.checked_device_ms``)."""
    found: list[Violation] = []
    for timing in timings:
        evidence = {"its traced timed calls": timing.traced_device_ms,
                    "its check after the timing window": timing.checked_device_ms}
        for where, device_ms in evidence.items():
            if device_ms and timing.median_ms < floor * device_ms:
                found.append(Violation(
                    "device-timed-less-work",
                    f"{entrypoint}() took {timing.median_ms:.4f} ms per timed call on "
                    f"{case_label(timing.case)}, while its kernels kept the GPU busy for {device_ms:.4f} ms "
                    f"per call in {where}: the timed calls did less work than that (an answer kept from an "
                    "earlier call on the same inputs?), so their time is not the kernel's"))
                break
    return found


def timed_value_violations(timings: Iterable[Timing], entrypoint: str) -> list[Violation]:
    """Bench cases whose sampled timed calls answered outside the tolerance (``Timing.sampled_values``)."""
    return [Violation("timed-wrong-answer",
                      f"{entrypoint}() answered wrongly in a timed call whose outputs were read back "
                      f"{t.sampled_values['message']}; every checked call was right, so the timed calls "
                      "computed something else, and their time is not the task's")
            for t in timings if t.sampled_values and t.sampled_values.get("message")]


def judge_after_timing(ev: Evaluation) -> bool:
    """The device's evidence on the timed calls traced and the checked calls since the first verdict; False
    (the candidate failed, its speedup withdrawn) when a rule was broken."""
    result, entrypoint = ev.result, ev.task.entrypoint
    later = ev.device_traces[ev.traces_judged:]
    ev.traces_judged = len(ev.device_traces)
    own, found = own_kernels(ev)
    found += device_violations(later, own, entrypoint, ev.options.allow_torch) if later else []
    if ev.timed_traces:
        found += timed_violations(ev.timed_traces, ev.device_traces, own, entrypoint, ev.options.allow_torch)
        _record(ev)
    found += timed_work_violations(result.timing or [], entrypoint)
    found += timed_value_violations(result.timing or [], entrypoint)
    new = [v for v in found if not any((v.code, v.message) == (w.code, w.message) for w in result.violations)]
    if not new:
        return True
    result.violations.extend(new)
    result.correct = False
    if any(CODES[v.code].discredits_timing for v in new):
        result.speedup = result.speedup_low = result.speedup_high = None
    return False


def _record(ev: Evaluation) -> None:
    """The timed sample's size and cost beside the checked calls' in ``EvalResult.device_activity``."""
    result = ev.result
    activity = result.device_activity if result.device_activity is not None else {}
    traces = [t for _, t in ev.timed_traces]
    activity["timed"] = {
        "traced_blocks": len(traces),
        "traced_calls": sum(int(t.get("calls") or 0) for t in traces),
        "timed_calls": sum(t.runs for t in result.timing or []),
        "kernels": {name: n for name, n in kernels_seen(ev.timed_traces).most_common(20)
                    if base_name(name) not in HARNESS_KERNELS},
        "seconds": round(sum(float(t.get("seconds") or 0) for t in traces), 3),
    }
    result.device_activity = activity
