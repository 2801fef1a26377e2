"""scripts/interval_study.py: coverage across processes, batch means, off rounds by index, dropped rounds."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[1]
TIGHT = [1.0, 1.004, 0.998, 1.002, 0.999, 1.0]
"""Six rounds with median 1.0, min 0.998 and max 1.004; block means 1.000667 and 1.000333."""


@pytest.fixture(scope="module")
def study():
    return load_script("interval_study")


def _shifted(values: list[float], factor: float) -> list[float]:
    return [v * factor for v in values]


def test_identical_processes_are_covered_by_every_construction(study):
    rounds = [[1.0, 1.25, 0.75, 1.0, 1.5, 1.0]] * 5
    result = study.study_case(rounds, study.builders(0.016))
    assert result["max_over_min"] == 1.0
    assert result["medians"] == [1.0] * 5
    assert len(result["constructions"]) == 5
    for part in result["constructions"].values():
        assert part["covers"] is True and part["missed"] == 0 and part["checked"] == 20


def test_a_tight_process_shifted_by_five_percent_is_missed_until_the_widening_reaches_it(study):
    rounds = [TIGHT] * 4 + [_shifted(TIGHT, 1.05)]
    named = study.builders(0.016)
    result = study.study_case(rounds, named)
    assert result["max_over_min"] == pytest.approx(1.05)
    order = result["constructions"]["order"]
    # each of the four misses the shifted median, and the shifted one misses all four
    assert (order["covers"], order["missed"], order["checked"]) == (False, 8, 20)
    assert order["half_width"] == pytest.approx(0.003)
    assert result["constructions"]["order+0.016 (default)"]["missed"] == 8
    wide = study.study_case(rounds, {"wide": partial(study.order_interval, widening=0.06)})["constructions"]
    assert wide["wide"]["covers"] is True
    assert wide["wide"]["half_width"] == pytest.approx(math.hypot(0.003, 0.06), rel=1e-3)


def test_misses_checks_each_interval_against_the_other_medians_only(study):
    from warpgym.env.judge.ratios import Interval

    intervals = [Interval(1.0, 0.99, 1.01, 0.95, 6), None, Interval(1.1, 1.09, 1.11, 0.95, 6)]
    # the first holds 1.0 (its own, not checked) and 1.005, misses 1.1; the third misses both others
    assert study.misses(intervals, [1.0, 1.005, 1.1]) == (3, 4)


def test_batch_means_interval_matches_the_hand_computed_value(study):
    values = [1.0, 1.0, 1.0, 1.03, 1.03, 1.03]
    # block means 1.0 and 1.03: centre 1.015, standard error (0.03 / sqrt 2) / sqrt 2 = 0.015, t(1) = 12.706
    interval = study.batch_means_interval(values, table_only=True)
    assert interval.median == pytest.approx(1.015)
    assert interval.low == pytest.approx(1.015 - 12.706 * 0.015)
    assert interval.high == pytest.approx(1.015 + 12.706 * 0.015)
    assert interval.n == 2
    # a trailing partial block is left out; under two blocks there is no interval
    assert study.batch_means_interval([*values, 5.0], table_only=True) == interval
    assert study.batch_means_interval(values[:5]) is None


def test_t_table_stands_in_for_scipy(study):
    assert study.t_quantile(1, table_only=True) == 12.706
    assert study.t_quantile(30, table_only=True) == 2.042
    assert study.t_quantile(31, table_only=True) == 1.96
    with pytest.raises(ValueError):
        study.t_quantile(0)
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 31):
        assert study.t_quantile(df, table_only=True) == pytest.approx(stats.t.ppf(0.975, df), abs=6e-4)


def test_a_planted_low_episode_at_round_zero_is_counted_once(study):
    planted = [0.95, 0.95, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    calm = [1.0] * 6
    late = [1.0] * 14
    late[4] = 1.05  # one round high: counted as a round, no episode
    late[11:14] = [1.05, 1.05, 1.05]  # three rounds high from index 11: one episode, in the last slot
    counts = study.round_index_counts([planted, calm, late])
    assert counts["rounds"] == [3, 3, 3, 3, 3, 3, 2, 2, 1, 1]
    assert counts["low"] == [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert counts["high"] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert counts["low_episodes"] == [1] + [0] * 10
    assert counts["high_episodes"] == [0] * 10 + [1]


def test_episodes_split_where_the_direction_turns(study):
    assert study.episodes([-1, -1, 1, 1, 0, 1, 0, 0]) == [(0, 2, -1), (2, 2, 1)]
    assert study.off_signs([1.0, 1.0101, 0.9899, 1.0, 1.0]) == [0, 1, -1, 0, 0]


def test_dropping_the_first_rounds_removes_planted_high_ones(study):
    high_start = [1.1] * 5 + [1.0] * 4  # median 1.1; from round 3 on, 1.0
    rounds = [high_start, [1.0] * 9, [1.0] * 6]
    first = study.drop_first(rounds, 0)
    assert first["kept"] == [0, 1, 2] and first["max_over_min"] == pytest.approx(1.1)
    third = study.drop_first(rounds, 3)
    # the six-round process keeps three: left out under the floor of six
    assert third["kept"] == [0, 1] and third["max_over_min"] == 1.0
    assert third["full_max_over_min"] == pytest.approx(1.1)
    assert study.drop_first(rounds, 1, min_kept=9)["max_over_min"] is None
    sums = study.drop_totals([{k: study.drop_first(rounds, k) for k in study.DROPS}])
    assert sums[0] == {"cases": 1, "within": 0, "within_all_rounds": 0}
    assert sums[3] == {"cases": 1, "within": 1, "within_all_rounds": 0}


def test_order_effect_and_the_term_a_recorded_interval_carries(study):
    assert study.order_effect([1.1, 1.0] * 3) == pytest.approx(0.1)
    assert study.order_effect([1.1, 1.0, 1.1]) is None
    assert study.largest_order_effect([[1.0] * 6, [0.9, 1.0] * 3]) == pytest.approx(-0.1)
    widened = study.order_interval(TIGHT, 0.016)
    terms = study.implied_terms([(widened.median, widened.low, widened.high), None], [TIGHT, TIGHT])
    assert terms == pytest.approx([0.016, 0.016])


def _record(task: str, baseline: str, round_ratios: dict[str, list[float]] | None) -> dict:
    detail = {"case": {"n": 4096}, "settled": True}
    if round_ratios is not None:
        detail["round_ratios"] = round_ratios
    return {"task": task, "baseline": baseline, "timing_detail": [detail]}


def test_collect_uses_the_record_baseline_and_says_what_it_leaves_out(study):
    runs = [[_record("math/add", "eager", {"vendor": [9.0] * 6, "eager": TIGHT}),
             _record("matmul/matmul", "vendor", None if p else {"vendor": TIGHT})] for p in range(3)]
    cases, skipped = study.collect({"runs": runs}, "run")
    assert [(c.task, c.baseline, c.rounds) for c in cases] == [("math/add", "eager", [TIGHT] * 3)]
    assert skipped == ["run: matmul/matmul:vendor 4096: 1 processes hold round ratios"]
    assert study.collect({"runs": [[_record("math/add", "eager", None)]] * 5}, "old") == (
        [], ["old: no case holds per-round ratios for its record's baseline (older format)"])
    assert study.collect({"summary": []}, "odd")[1] == ["odd: no 'runs' list of processes"]


def test_main_prints_the_totals_of_a_small_run_file(study, tmp_path, capsys):
    from warpgym.env.judge.options import PairedTiming

    rounds = [TIGHT, TIGHT, _shifted(TIGHT, 1.05)]
    path = tmp_path / "paired-repeat-tiny.json"
    path.write_text(json.dumps({"runs": [[_record("math/add", "eager", {"eager": r})] for r in rounds]}))
    out_json = tmp_path / "numbers.json"
    assert study.main([str(path), "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    default = f"order+{PairedTiming().between_evaluations:.3f} (default)"
    assert "1 cases from 1 files; 0 with an order effect over 3%" in printed
    assert "| order | 0/1 | 4/6 | 0.30% |" in printed
    assert f"| {default} | 0/1 | 4/6 |" in printed
    assert "| batch-means t (3) | 0/1 | 4/6 |" in printed
    numbers = json.loads(out_json.read_text())
    assert numbers["totals"]["order"]["covered"] == 0
    assert numbers["cases"][0]["max_over_min"] == pytest.approx(1.05)
