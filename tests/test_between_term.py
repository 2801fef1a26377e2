"""scripts/between_term.py: the term taken out of recorded intervals, and the smallest that covers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def between():
    return load_script("between_term")


def _ratio(m: float, raw: float, term: float) -> dict[str, float]:
    side = math.hypot(raw * m, term * m)
    return {"median": m, "low": m - side, "high": m + side}


def test_the_recorded_term_is_taken_out_and_the_smallest_covering_term_found(between):
    m, lo, hi = between.raw_sides(_ratio(2.0, 0.01, 0.016), 0.016)
    assert (m, lo, hi) == pytest.approx((2.0, 0.02, 0.02))
    # Two processes 3% apart with raw half-widths of 1%: covered once the term brings a side to 3%.
    sides = [(1.0, 0.01, 0.01), (1.03, 0.0103, 0.0103)]
    term = between.needed(sides)
    assert math.hypot(0.01, term) >= 0.03 and math.hypot(0.01, term - between.STEP) < 0.03
    assert between.needed([(1.0, 0.01, 0.01), (1.005, 0.01, 0.01)]) == 0.0


def test_rows_read_a_paired_repeat_file(between):
    runs = [[{"task": "math/add", "cases": [{"case": {"n": 1}, "ratio": _ratio(m, 0.005, 0.016)}]}]
            for m in (1.0, 1.002, 1.03)]
    (row,) = between.rows({"runs": runs}, 0.016)
    assert row["processes"] == 3 and row["max_over_min"] == pytest.approx(1.03) and 0.02 < row["term"] < 0.04
