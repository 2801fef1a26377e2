"""The feedback text a model reads: the verdict first, then only what helps fix or speed up."""

from __future__ import annotations

import re
import statistics
from typing import TYPE_CHECKING

from warpgym.env.judge import tensor_core_kind, tensor_core_timing
from warpgym.env.judge.plan import INTERPRETER_LIMITATION
from warpgym.tasks import Task, case_label

if TYPE_CHECKING:
    from warpgym.env.judge.result import EvalResult, Timing

MAX_COMPILE_ERROR_CHARS = 2500
_ABSOLUTE_PATH = re.compile(r"(?<![\w./~-])/(?:[\w.+@~-]+/)+[\w.+@~-]+")
_CANDIDATE_MODULE = re.compile(r"candidate(?:_\d+)?\.py")


def redact_paths(text: str) -> str:
    """Absolute paths of the harness's machine (site-packages in an interpreter warning, a worker's
    private folder in a compiler message) become ``<path>/NAME``: they tell a model nothing it can act
    on and say where things live here. The candidate's own module reads ``candidate.py``, as in its
    tracebacks. Applied to what other programs wrote (compilers, the interpreter, the candidate's
    output); the policy's own sentences keep the path a candidate tried to reach."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(0).rsplit("/", 1)[1]
        return "candidate.py" if _CANDIDATE_MODULE.fullmatch(name) else f"<path>/{name}"

    return _ABSOLUTE_PATH.sub(replace, text)


def _trim(text: str, limit: int) -> str:
    text = redact_paths(text.strip())
    return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2:]


QUOTE = "  | "
"""Begins every line of text the candidate's run wrote (its output, its exceptions, a compiler's report on
its code): no such line can pass for the judge's own, whatever it says."""
RUN_FAILED = ("timed out: ", "crashed: ", "raised an error: ")
"""How the judge begins a failed check's message when the run itself failed; the worker's report follows."""


def quoted(header: str, text: str, limit: int) -> str:
    """``header``, then ``text`` trimmed and quoted line by line."""
    lines = _trim(text, limit).splitlines() or [""]
    return f"{header}\n" + "\n".join(QUOTE + line for line in lines)


def _check_message(message: str) -> str:
    """A failed check's message: the judge's own words as they are, a failed run's report quoted."""
    for prefix in RUN_FAILED:
        if message.startswith(prefix):
            header = f"  The run {prefix.removesuffix(': ')}; its report (quoted):"
            return quoted(header, message[len(prefix):], MAX_COMPILE_ERROR_CHARS)
    return f"  {redact_paths(message.strip())}"


def verdict(result: EvalResult) -> str:
    if result.violations and not result.compiled and result.stage == "static":
        return "REJECTED (static checks)"
    if result.violations and not result.compile_errors:
        return "REJECTED (policy)"  # before compiling too: what the module did as it was imported
    if not result.compiled:
        return "COMPILE FAILED"
    if result.violations:
        return "REJECTED (policy)"
    if result.correct is None:
        if any(c.skipped and c.skipped.startswith(INTERPRETER_LIMITATION) for c in result.cases):
            return "NOT CHECKED on the CPU (Triton interpreter limitation: a GPU decides)"
        return "NOT CHECKED on this device"
    if not result.correct:
        return "INCORRECT"
    if result.required_features_met is False:
        return "CORRECT, but required instructions missing"
    return "CORRECT"


def _timing_line(t: Timing) -> str:
    roof = f", {t.roofline_fraction:.0%} of roofline" if t.roofline_fraction is not None else ""
    base = ", ".join(
        f"{k} {ms:.3f} ms ({t.ratios[k].median:.2f}x [{t.ratios[k].low:.2f}, {t.ratios[k].high:.2f}])"
        if k in t.ratios else f"{k} {ms:.3f} ms" for k, ms in t.baselines_ms.items())
    failed = "".join(f"; {k} not timed ({why})" for k, why in t.baseline_errors.items())
    rounds = f"; {t.rounds} paired rounds of {t.block_calls} calls, ended by {t.ended_by}" if t.rounds else ""
    traced = (f"; {t.traced_calls} further calls traced on the device, not timed ({t.trace_seconds:.2f} s)"
              if t.traced_blocks else "")
    if t.sampled_values:
        traced += (f"; {t.sampled_values['calls']} timed call(s)' answers read back at "
                   f"{t.sampled_values['elements']} positions")
    return (f"Timing {case_label(t.case)}: {t.median_ms:.3f} ms, {t.tflops or 0:.1f} TFLOP/s, "
            f"{t.gbps or 0:.0f} GB/s{roof}; baselines: {base or 'none'}{failed}{rounds}{traced}")


def _machine_lines(result: EvalResult) -> list[str]:
    """The GPU's state while timing, and a warning when it slowed down for a reason other than its power
    cap (the figures may not repeat)."""
    states = [t.machine for t in result.timing or [] if t.machine is not None]
    lines = []
    sampled = [s for s in states if s.sampled]
    if sampled:
        clocks = [v for s in sampled for v in s.sm_clock_mhz.values()]
        power = [s.power_w["median"] for s in sampled if s.power_w]
        temps = [s.temperature_c["max"] for s in sampled if s.temperature_c]
        reasons = sorted({r for s in sampled for r in s.reasons})
        lines.append("GPU while timing: " + ", ".join(part for part in (
            f"SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz" if clocks else "",
            f"power {statistics.median(power):.0f} W" if power else "",
            f"up to {max(temps):.0f} C" if temps else "",
            f"clock reasons: {', '.join(reasons)}" if reasons else "no clock reasons") if part))
    elif states:
        lines.append(f"GPU state while timing: not sampled ({states[0].reason})")
    if result.throttled:
        lines.append(f"Throttled while timing ({', '.join(result.throttled)}), beyond the power cap: these "
                     "timings may not repeat")
    return lines


def _interval(result: EvalResult, name: str) -> str:
    low, high = (result.speedup_low or {}).get(name), (result.speedup_high or {}).get(name)
    return f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""


def _faster_line(result: EvalResult, name: str) -> str:
    """"Faster than the baseline" twice: by the point estimate and by the interval's lower bound."""
    point, low = (result.speedup or {})[name], result.speedup_by(name, conservative=True)
    said = f"Faster than {name}: {'yes' if point > 1 else 'no'} by the point estimate ({point:.2f}x)"
    if low is None:
        return said
    noise = ": within noise" if point > 1 >= low else ""
    return f"{said}, {'yes' if low > 1 else 'no'} by the interval's lower bound ({low:.2f}x){noise}"


def render(result: EvalResult, task: Task, reveal_shapes: bool = True) -> str:
    lines = [f"Verdict: {verdict(result)} (task {task.id}, target {result.target}, device {result.device})"]
    for v in result.violations:
        where = f" (line {v.line})" if v.line else ""
        lines.append(f"- [{v.code}]{where} {v.message}")
    for err in result.compile_errors[:3]:
        lines.append(quoted("Compiler error (quoted):", err, MAX_COMPILE_ERROR_CHARS))
    failed = [c for c in result.cases if c.passed is False]
    if result.runtime_error and not any(result.runtime_error.strip() in c.message for c in failed):
        lines.append(quoted("Error (quoted):", result.runtime_error, MAX_COMPILE_ERROR_CHARS))
    if failed:
        c = failed[0]
        where = f"case {case_label(c.case)}, seed {c.seed}, {c.distribution} inputs" if reveal_shapes \
            else f"a {c.shape_set} case"
        lines.append(f"First failing check ({c.shape_set}): {where}:\n{_check_message(c.message)}")
        passed = sum(1 for x in result.cases if x.passed)
        lines.append(f"Checks passed: {passed} of {sum(1 for x in result.cases if x.passed is not None)}.")
    elif result.correct:
        lines.append(f"All {sum(1 for x in result.cases if x.passed)} correctness checks passed.")
    for skipped in result.skipped_checks:
        lines.append(f"Not checked: {skipped}")
    for note in result.notes:
        lines.append(f"Note: {note}")
    if result.instructions:
        used = [f"{fam} (ptx {c['ptx']}, sass {c['sass']}"
                + (f", executed {c['executed']}" if c.get("executed") is not None else "") + ")"
                for fam, c in result.instructions.items() if c["ptx"] or c["sass"] or c.get("executed")]
        none = "no tensor-core, TMA, async-copy or barrier instructions"
        lines.append(f"Instructions on {result.target}: " + (", ".join(used) if used else none))
    for k in result.kernels:
        report = [f"{k.registers} registers" if k.registers is not None else "",
                  f"{k.spills} spilled bytes" if k.spills else "",
                  f"{k.shared_bytes} B shared memory" if k.shared_bytes else ""]
        if any(report) or k.warnings:
            lines.append(f"Kernel {k.name} ({k.target}): " + ", ".join(r for r in report if r)
                         + "".join(f"\n  compiler warning: {redact_paths(w)}" for w in k.warnings[:3]))
    for feature, why in result.missing_features.items():
        lines.append(f"Missing required feature {feature}: {why}.")
    lines += tensor_core_kind.feedback_lines(result.other_tensor_cores)
    lines += tensor_core_timing.feedback_lines(result.timed_tensor_cores)
    if result.timing and result.violations:
        # A rejected candidate's figures time work that is not its own (a library's, a cached answer's).
        lines.append(f"Timing withheld: {len(result.timing)} bench case(s) were timed, but the verdict is "
                     "rejected, so the figures do not measure the candidate's own kernels.")
    elif result.timing:
        lines += [_timing_line(t) for t in result.timing]
        lines += _machine_lines(result)
    if result.speedup:
        lines.append("Speedup (geometric mean over bench shapes; 95% interval): "
                     + ", ".join(f"{k} {v:.2f}x{_interval(result, k)}" for k, v in result.speedup.items()))
        lines += [_faster_line(result, name) for name in result.speedup]
    for s in result.suspicious:
        lines.append(f"Suspicious: {s}")
    if result.stdout:
        lines.append(quoted("Candidate output (tail, quoted):", result.stdout, 1200))
    return "\n".join(lines)
