"""scripts/timed_work_table.py: each bench case's timed median over the device time of its own work, from
the rows `warpgym suite check --jsonl` writes; missing evidence is shown as missing, not as a ratio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from script_module import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "timed_work_table.py"
timed_work_table = load_script("timed_work_table")


def test_ratios_per_bench_case_with_missing_evidence_left_out():
    rows = [{"task": "math/add", "candidate_ms": [1.0, 2.0], "work_ms": [[0.8, 1.25], [None, 4.0]]},
            {"task": "math/exp", "reference": "fast", "candidate_ms": None, "work_ms": None}]
    assert timed_work_table.ratios(rows) == [("math/add", 0, 1.0, 1.25, 0.8), ("math/add", 1, 2.0, None, 0.5)]


def test_the_summary_counts_cases_below_the_floor(tmp_path):
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps({"task": "math/add", "candidate_ms": [1.0, 2.0],
                                "work_ms": [[0.8, 1.25], [None, 4.0]]}) + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(path), "--floor", "0.7"], capture_output=True,
                         text=True, check=True).stdout
    assert "| math/add | 1 | 2 | - | 0.500 |" in out
    assert "timed / checked work: 2 bench cases, smallest 0.500, median 0.800, 1 below 0.7" in out


def test_suite_rows_carry_each_bench_cases_sampled_mismatches():
    """What a GPU suite check shows of the sampled timed answers: per bench case, outside the tolerance
    of read, and nothing for a case none was sampled in."""
    from warpgym.env.judge.result import Timing
    from warpgym.experiments.cli.suite_cmd import sampled_mismatches

    read = Timing(case={"n": 1}, median_ms=1.0, min_ms=1.0, max_ms=1.0, runs=3,
                  sampled_values={"calls": 2, "elements": 2048, "mismatches": 1, "message": ""})
    unread = Timing(case={"n": 2}, median_ms=1.0, min_ms=1.0, max_ms=1.0, runs=3)
    assert sampled_mismatches([read, unread]) == [[1, 2048], None]
    assert sampled_mismatches([]) is None
