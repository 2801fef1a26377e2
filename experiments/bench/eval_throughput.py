"""Evaluation throughput and timing fidelity of the harness, against its targets: ``warpgym bench``.

An experiment's cost is dominated by how many candidates the evaluator judges per minute, and its
speedups are only as good as the timings behind them. This measures both on a fixed mix (the five
core tasks' references and plausible wrong candidates for each), so runs on different days and
machines compare:

- cold evaluations (a fresh :class:`Evaluator`, hence fresh worker processes, for each);
- a first pass of the mix with one warm evaluator and a second pass, the steady state of a long
  experiment: evaluations per minute, median and p90 seconds per evaluation, the share of time spent
  timing (the candidate and its baselines, paired in one window), and the harness's own overhead
  (everything but compiling and timing);
- the spread (max/min) of repeated timings of the matmul reference, and on a GPU with Nsight
  Compute, the harness's median against ncu's ``gpu__time_duration`` for the same kernel and shape.

On ``cpu`` everything runs in Triton's interpreter with timing off: the verdicts and the plumbing
are exercised (CI runs it), the timing-derived figures are None and no target is judged.
"""

from __future__ import annotations

import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CORE_TASKS = ("math/add", "normalization/softmax", "normalization/layer-norm", "matmul/matmul",
              "fusion/attention")

# Plausible wrong candidates: (label, text in the reference, its replacement). Each is a bug a model
# writing the kernel could make; the core tests (tests/test_env_core.py) require every one rejected.
WRONG_CANDIDATES: dict[str, list[tuple[str, str, str]]] = {
    "math/add": [
        ("mask off by one", "mask = offsets < n", "mask = offsets < n - 1"),
        ("subtracts", "x + y, mask=mask", "x - y, mask=mask"),
    ],
    "normalization/softmax": [
        ("no max subtraction", "    x = x - tl.max(x, axis=0)\n", ""),
        ("sum over the padded lanes", "out = num / tl.sum(num, axis=0)",
         "out = num / (tl.sum(num, axis=0) + 1.0)"),
    ],
    "normalization/layer-norm": [
        ("unbiased variance", "tl.sum(diff * diff, axis=0) / n_cols + eps",
         "tl.sum(diff * diff, axis=0) / (n_cols - 1) + eps"),
        ("bias dropped", "(diff * rstd * w + b)", "(diff * rstd * w)"),
    ],
    "matmul/matmul": [
        ("K loop drops the last partial tile", "for k in range(0, K, BLOCK_K):",
         "for k in range(0, K - BLOCK_K + 1, BLOCK_K):"),
        ("row mask off by one", "tl.store(c_tile, c, mask=(offs_m[:, None] < M)",
         "tl.store(c_tile, c, mask=(offs_m[:, None] < M - 1)"),
    ],
    "fusion/attention": [
        ("causal mask admits the next key", "keys[None, :] <= offs_m[:, None]",
         "keys[None, :] <= offs_m[:, None] + 1"),
        ("no running-max rescale", "acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])",
         "acc = tl.dot(p.to(v.dtype), v, acc)"),
    ],
}

REFERENCE = "reference"
SPREAD_TASK = "matmul/matmul"
SPREAD_KERNEL = "matmul_kernel"  # the @triton.jit function in tasks/solutions/matmul/matmul.py

# What the harness must reach on a GPU for experiments to be cheap and their speedups quotable:
# (report key, as written, test of the measured value).
TARGETS: tuple[tuple[str, str, Callable[[float], bool]], ...] = (
    ("evaluations_per_minute_warm", ">= 20", lambda v: v >= 20),
    ("overhead_median_s", "< 0.5", lambda v: v < 0.5),
    ("spread_max_over_min", "<= 1.01", lambda v: v <= 1.01),
    ("harness_vs_ncu", "within 3% (0.97 .. 1.03)", lambda v: abs(v - 1.0) <= 0.03),
)

Log = Callable[[str], object]
_say: Log = functools.partial(print, flush=True)  # flushed: a run cut off by a timeout keeps its lines


def check_tasks(tasks: Sequence[str] | None) -> list[str]:
    """The mix's task ids, in the fixed order; an id outside the core five is a ValueError naming them."""
    if tasks is None:
        return list(CORE_TASKS)
    if not tasks:
        raise ValueError(f"no task ids given; the mix has {', '.join(CORE_TASKS)}")
    unknown = [t for t in tasks if t not in CORE_TASKS]
    if unknown:
        raise ValueError(f"unknown task id(s) {', '.join(unknown)}; the mix has {', '.join(CORE_TASKS)}")
    return [t for t in CORE_TASKS if t in set(tasks)]


def mix(tasks: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
    """(task id, label, source) for each reference and its wrong candidates, in a fixed order."""
    from warpgym.tasks import get_task

    items = []
    for task_id in check_tasks(tasks):
        source = get_task(task_id).solution_source()
        items.append((task_id, REFERENCE, source))
        for label, old, new in WRONG_CANDIDATES[task_id]:
            # A substitution that no longer matches would silently benchmark the reference again.
            if old not in source:
                raise RuntimeError(f"{task_id}: {label!r} no longer matches the reference; "
                                   "update WRONG_CANDIDATES")
            items.append((task_id, label, source.replace(old, new, 1)))
    return items


def p90(values: Sequence[float]) -> float:
    """The 90th percentile by nearest rank: with a few dozen samples, interpolation adds nothing."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def _run_mix(evaluator: Any, items: list[tuple[str, str, str]], options: Any,
             log: Log) -> list[dict[str, Any]]:
    from warpgym.tasks import get_task

    rows = []
    for task_id, label, source in items:
        started = time.perf_counter()
        result = evaluator.evaluate(get_task(task_id), source, options)
        rows.append({"task": task_id, "candidate": label, "expected": label == REFERENCE,
                     "correct": result.correct, "seconds": time.perf_counter() - started,
                     "stages": dict(result.seconds), "speedup": result.speedup})
        log(f"  {task_id:26s} {label[:34]:34s} correct={result.correct!s:5s} {rows[-1]['seconds']:.2f}s "
            f"{ {k: round(v, 2) for k, v in result.seconds.items()} }")
    return rows


def ncu_matmul(case: dict[str, Any], device: str = "cuda", log: Log = _say, skip: int = 50,
               count: int = 5) -> float | None:
    """Nsight Compute's gpu__time_duration for the matmul reference at one bench case, in ms.

    The reference runs in a fresh process under ncu: ``skip`` launches back to back (the GPU in the
    steady state the harness times it in, after its warm-up), then the median of ``count`` profiled
    ones; ``skip=2, count=1`` is a GPU fresh from idle, at its highest clocks. The figure owes
    nothing to the harness checked against it. None when ncu is missing or fails.
    """
    from warpgym.env.judge.profile import ncu_path

    exe = ncu_path()
    if exe is None:
        log("ncu: not installed (PATH, CUDA_HOME, /usr/local/cuda); no Nsight Compute comparison")
        return None
    script = textwrap.dedent(f"""
        import importlib.util, torch
        from warpgym.tasks import get_task, Sampler
        if torch.device({device!r}).index is not None:
            torch.cuda.set_device(torch.device({device!r}))
        task = get_task({SPREAD_TASK!r})
        spec = importlib.util.spec_from_file_location("ref", task.solution_path)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        inputs = task.make_inputs({case!r}, Sampler(0, "normal", {device!r}))
        for _ in range({skip + count}):
            getattr(mod, task.entrypoint)(**inputs)
        torch.cuda.synchronize()
    """)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    cmd = [exe, "--clock-control", "none", "--kernel-name", f"regex:^{SPREAD_KERNEL}$",
           "--launch-skip", str(skip), "--launch-count", str(count), "--metrics", "gpu__time_duration.sum",
           "--csv", sys.executable, f.name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        log("ncu: no answer within 300 s")
        return None
    finally:
        os.unlink(f.name)
    ms = parse_ncu_ms(proc.stdout)
    if ms is None:
        log(f"ncu output: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return ms


def parse_ncu_ms(csv: str) -> float | None:
    """The last gpu__time_duration.sum in ncu's CSV, in ms; ncu spells units "ns" or "nsecond" by version."""
    match = re.findall(r'"gpu__time_duration.sum","([a-z]+)","([\d.,]+)"', csv)
    scales = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0,
              "s": 1e3, "second": 1e3}
    values = [float(value.replace(",", "")) * scales[unit] for unit, value in match if unit in scales]
    return statistics.median(values) if values else None


def _write(out: Path | None, report: dict[str, Any]) -> None:
    """Replace ``out`` whole (write, then rename): a run killed mid-write leaves the last complete report."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    tmp.replace(out)


def _targets(report: dict[str, Any], on_gpu: bool) -> dict[str, dict[str, Any]]:
    """Each target with its measured value; met is None where unmeasured, and always on a CPU."""
    targets = {}
    for key, wanted, test in TARGETS:
        value = report.get(key)
        met = bool(test(value)) if (on_gpu and value is not None) else None
        targets[key] = {"target": wanted, "value": value, "met": met}
    return targets


def _unexpected(rows: list[dict[str, Any]]) -> list[str]:
    """Rows whose verdict is not the expected one: a harness that judges wrongly is fast for nothing."""
    return [f"{r['task']} {r['candidate']}: correct={r['correct']}"
            for r in rows if r["correct"] is not r["expected"]]


def _warm_figures(warm: list[dict[str, Any]], wall: float, on_gpu: bool) -> dict[str, Any]:
    seconds = [r["seconds"] for r in warm]
    timing = [r["stages"].get("timing_window", 0.0) for r in warm]  # candidate and baselines, paired
    compile_s = [r["stages"].get("compile", 0.0) for r in warm]
    overhead = [s - t - c for s, t, c in zip(seconds, timing, compile_s, strict=True)]
    # The wrong candidates stop at their first failing case; the references go through every check
    # (bench case included), so their overhead is the figure a refinement loop's solved tasks pay.
    references = [o for o, r in zip(overhead, warm, strict=True) if r["candidate"] == REFERENCE]
    return {
        "evaluations_per_minute_warm": 60 * len(warm) / wall,
        "warm_median_s": statistics.median(seconds), "warm_p90_s": p90(seconds),
        "timing_share": sum(timing) / sum(seconds) if on_gpu else None,
        "overhead_median_s": statistics.median(overhead), "overhead_p90_s": p90(overhead),
        "overhead_references_median_s": statistics.median(references) if references else None,
    }


def run_benchmark(device: str, reps: int = 30, warmup: int = 5, cold: int = 3, spread: int = 5,
                  ncu: bool = True, tasks: list[str] | None = None, out: Path | None = None,
                  log: Log = _say) -> dict[str, Any]:
    """Measure the mix on ``device`` (``cpu``, ``cuda`` or ``cuda:N``, already resolved); returns the report.

    The report is written to ``out`` after each phase, so a run cut off by a time limit keeps every
    phase it finished; ``phases`` lists them.
    """
    from warpgym.env import EvalOptions, Evaluator
    from warpgym.tasks import get_task

    on_gpu = device.startswith("cuda")
    items = mix(tasks)
    if on_gpu:
        options = EvalOptions(device=device, shape_sets=("dev",), reps=reps, warmup=warmup)
    else:
        options = EvalOptions(device="cpu", shape_sets=("dev",), reps=reps, warmup=warmup, timing=False)
    report: dict[str, Any] = {
        "device": device, "device_name": None, "timing": on_gpu, "mix": len(items),
        "config": {"reps": reps, "warmup": warmup, "cold": cold, "spread": spread, "ncu": ncu,
                   "tasks": check_tasks(tasks)},
        "phases": [], "skipped": [],
        "evaluations_per_minute_warm": None, "first_pass_seconds_total": None,
        "warm_median_s": None, "warm_p90_s": None,
        "cold_seconds": [], "cold_median_s": None, "cold_p90_s": None,
        "timing_share": None, "overhead_median_s": None, "overhead_p90_s": None,
        "overhead_references_median_s": None,
        "spread_medians_ms": None, "spread_max_over_min": None,
        "harness_matmul_ms": None, "ncu_matmul_ms": None, "ncu_matmul_idle_gpu_ms": None,
        "harness_vs_ncu": None,
        "unexpected_verdicts": [], "targets": {}, "rows": [], "first_pass_rows": [],
    }
    if not on_gpu:
        report["skipped"].append("timing: a CPU runs Triton's interpreter; timing-derived figures are None "
                                 "and no target is judged")

    def phase(name: str) -> None:
        report["phases"].append(name)
        report["targets"] = _targets(report, on_gpu)
        _write(out, report)

    # Cold: a fresh evaluator (new worker processes) for each evaluation.
    for i in range(cold):
        task_id, label, source = items[i % len(items)]
        with Evaluator(device) as evaluator:
            started = time.perf_counter()
            result = evaluator.evaluate(get_task(task_id), source, options)
            report["cold_seconds"].append(time.perf_counter() - started)
        log(f"cold evaluation of {task_id} ({label}): correct={result.correct} "
            f"{report['cold_seconds'][-1]:.2f} s")
    if report["cold_seconds"]:
        report["cold_median_s"] = statistics.median(report["cold_seconds"])
        report["cold_p90_s"] = p90(report["cold_seconds"])
    phase("cold")

    with Evaluator(device) as evaluator:
        # One untimed evaluation starts the workers, so the first pass measures baselines, not start-up.
        add = get_task("math/add")
        report["device_name"] = evaluator.evaluate(add, add.solution_source(),
                                                   EvalOptions(device=options.device, timing=False)).device
        log(f"first pass ({len(items)} evaluations; baselines measured, then cached):")
        first = _run_mix(evaluator, items, options, log)
        report["first_pass_rows"] = first
        report["first_pass_seconds_total"] = sum(r["seconds"] for r in first)
        report["unexpected_verdicts"] = _unexpected(first)
        phase("first_pass")

        log("warm pass (the steady state of a long experiment):")
        started = time.perf_counter()
        warm = _run_mix(evaluator, items, options, log)
        wall = time.perf_counter() - started
        report.update(_warm_figures(warm, wall, on_gpu))
        report["rows"] = warm
        report["unexpected_verdicts"] = _unexpected(first + warm)
        phase("warm_pass")

        medians: list[float] = []
        if not on_gpu:
            report["skipped"].append("spread: nothing is timed on a CPU")
        elif spread <= 0:
            report["skipped"].append("spread: turned off (0 repetitions)")
        else:
            task = get_task(SPREAD_TASK)
            for i in range(spread):
                r = evaluator.evaluate(task, task.solution_source(), options)
                if r.timing:
                    medians.append(r.timing[0].median_ms)
                    log(f"spread {i + 1}/{spread}: {SPREAD_TASK} reference median {medians[-1]:.4f} ms "
                        f"(host issues a call in {r.timing[0].host_issue_ms:.4f} ms)")
                else:
                    log(f"spread {i + 1}/{spread}: {SPREAD_TASK} reference not timed: {r.feedback[:300]}")
            report["spread_medians_ms"] = medians
            if len(medians) >= 2:
                report["spread_max_over_min"] = max(medians) / min(medians)
            if medians:
                report["harness_matmul_ms"] = statistics.median(medians)
            phase("spread")

    if on_gpu and ncu and report["harness_matmul_ms"] is not None:
        case = get_task(SPREAD_TASK).cases("bench")[0]
        report["ncu_matmul_ms"] = ncu_matmul(case, device, log)
        report["ncu_matmul_idle_gpu_ms"] = ncu_matmul(case, device, log, skip=2, count=1)
        if report["ncu_matmul_ms"]:
            report["harness_vs_ncu"] = report["harness_matmul_ms"] / report["ncu_matmul_ms"]
        else:
            report["skipped"].append("ncu: no figure (missing, failed or timed out; the log says which)")
        phase("ncu")
    elif on_gpu:
        report["skipped"].append("ncu: turned off" if not ncu else "ncu: no harness median of the matmul "
                                 "reference to compare with (spread 0 or its timing failed)")
    else:
        report["skipped"].append("ncu: needs a GPU")
    phase("done")
    print_report(report, log)
    return report


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_report(report: dict[str, Any], log: Log = _say) -> None:
    """The summary, the targets and one line per warm evaluation."""
    log(f"\nevaluation throughput on {report['device_name'] or report['device']} "
        f"({report['mix']} candidates; phases: {', '.join(report['phases'])})")
    for key in ("evaluations_per_minute_warm", "first_pass_seconds_total", "warm_median_s", "warm_p90_s",
                "cold_median_s", "cold_p90_s", "timing_share", "overhead_median_s", "overhead_p90_s",
                "overhead_references_median_s",
                "spread_max_over_min", "harness_matmul_ms", "ncu_matmul_ms", "harness_vs_ncu"):
        log(f"  {key:28s} {_fmt(report.get(key))}")
    for note in report["skipped"]:
        log(f"  skipped: {note}")
    log("\ntargets (GPU figures; n/a on the CPU):")
    for key, t in report["targets"].items():
        met = {True: "met", False: "NOT MET", None: "n/a"}[t["met"]]
        log(f"  {key:28s} {t['target']:26s} {_fmt(t['value']):>10s}  {met}")
    log("\nper evaluation (warm):")
    for r in report["rows"]:
        flag = "" if r["correct"] is r["expected"] else "  UNEXPECTED"
        log(f"  {r['task']:26s} {r['candidate'][:34]:34s} correct={r['correct']!s:5s} "
            f"{r['seconds']:.2f}s{flag}")
    if report["unexpected_verdicts"]:
        log(f"\n{len(report['unexpected_verdicts'])} unexpected verdict(s): "
            + "; ".join(report["unexpected_verdicts"]))
