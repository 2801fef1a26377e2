"""``warpgym bench`` on the CPU: the mix is judged right, the report is complete, bad input is exit 2.

Only math/add's three candidates (reference and two wrong ones) with one cold evaluation: a few
seconds in Triton's interpreter. The timed figures need a GPU (scripts/gpu_session.sh).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warpgym.experiments.bench import eval_throughput as bench
from warpgym.experiments.cli import main

TIMED = ("timing_share", "spread_medians_ms", "spread_max_over_min", "harness_matmul_ms", "ncu_matmul_ms",
         "harness_vs_ncu")


def test_bench_on_cpu_judges_the_mix_and_writes_the_report(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", "--tasks", "math/add", "--cold", "1", "--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and report["timing"] is False
    assert report["phases"] == ["cold", "first_pass", "warm_pass", "done"]

    wrong = [label for label, _, _ in bench.WRONG_CANDIDATES["math/add"]]
    for rows in (report["first_pass_rows"], report["rows"]):
        assert [(r["task"], r["candidate"]) for r in rows] == [("math/add", "reference")] + \
            [("math/add", label) for label in wrong]
        assert [r["correct"] for r in rows] == [True] + [False] * len(wrong)
        assert all(r["speedup"] is None and "timing_window" not in r["stages"] for r in rows)
    assert report["unexpected_verdicts"] == []

    assert report["evaluations_per_minute_warm"] > 0
    assert 0 < report["warm_median_s"] <= report["warm_p90_s"]
    assert len(report["cold_seconds"]) == 1 and report["cold_median_s"] > 0
    assert report["overhead_median_s"] is not None
    # The reference runs every check; the wrong candidates stop at their first failing case.
    reference = next(r for r in report["rows"] if r["candidate"] == "reference")
    assert report["overhead_references_median_s"] == pytest.approx(
        reference["seconds"] - reference["stages"].get("compile", 0.0))
    for key in TIMED:
        assert report[key] is None, key
    # The targets are GPU figures: reported, never judged on the interpreter.
    assert set(report["targets"]) == {"evaluations_per_minute_warm", "overhead_median_s",
                                      "spread_max_over_min", "harness_vs_ncu"}
    assert all(t["met"] is None for t in report["targets"].values())
    assert report["targets"]["evaluations_per_minute_warm"]["value"] == report["evaluations_per_minute_warm"]

    printed = capsys.readouterr().out
    assert "per evaluation (warm):" in printed and "targets (GPU figures; n/a on the CPU):" in printed
    assert printed.count("mask off by one") >= 3  # first pass, warm pass, final table


@pytest.mark.parametrize("tasks", ["math/add,nope/nope", ","])
def test_bench_rejects_task_ids_outside_the_mix(tasks: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--tasks", tasks, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warpgym bench: error: --tasks:")
    assert all(t in err for t in bench.CORE_TASKS)  # names the valid ids
    if "nope" in tasks:
        assert "nope/nope" in err


def test_mix_is_fixed_and_every_wrong_candidate_differs() -> None:
    items = bench.mix(["matmul/matmul", "math/add"])
    # The mix's order, not the caller's.
    assert [t for t, _, _ in items] == ["math/add"] * 3 + ["matmul/matmul"] * 3
    full = bench.mix()
    assert len(full) == sum(1 + len(w) for w in bench.WRONG_CANDIDATES.values())
    references = {t: s for t, label, s in full if label == bench.REFERENCE}
    assert all(s != references[t] for t, label, s in full if label != bench.REFERENCE)


def test_targets_are_judged_on_a_gpu_only() -> None:
    measured = {"evaluations_per_minute_warm": 25.0, "overhead_median_s": 0.7, "spread_max_over_min": 1.005,
                "harness_vs_ncu": None}
    gpu = bench._targets(measured, on_gpu=True)
    assert [gpu[k]["met"] for k in measured] == [True, False, True, None]
    assert all(t["met"] is None for t in bench._targets(measured, on_gpu=False).values())


@pytest.mark.parametrize(("unit", "value", "ms"), [("ns", "1,698,304", 1.698304),
                                                   ("nsecond", "1698304", 1.698304),
                                                   ("usecond", "12.5", 0.0125), ("ms", "2", 2.0)])
def test_ncu_time_in_either_unit_spelling(unit: str, value: str, ms: float) -> None:
    csv = f'"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n' \
          f'"0","matmul_kernel","gpu__time_duration.sum","{unit}","{value}"\n'
    assert bench.parse_ncu_ms(csv) == pytest.approx(ms)
    assert bench.parse_ncu_ms("==ERROR== The application returned an error code (1).") is None
