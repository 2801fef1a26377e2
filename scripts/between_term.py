"""The smallest between-evaluations term under which every process's interval covers every other's median.

Reads `scripts/paired_repeat.py` results (five or more processes timing the same pairs). Their intervals
were widened by the term the evaluator ran with (``--term``, options.PairedTiming.between_evaluations);
this takes it back out of each side (in quadrature, as judge/ratios.Interval.widened adds it), then
widens them again with that same method, finding per bench case the smallest term, in steps of 0.0005,
that makes every interval cover every median.

    python scripts/between_term.py docs/runs/paired-repeat-*.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

STEP = 0.0005
LIMIT = 0.1


def raw_sides(ratio: dict[str, float], term: float) -> tuple[float, float, float]:
    """(median, low side, high side) of an interval before ``term`` was added to it."""
    m = ratio["median"]
    extra = term * m
    return (m, math.sqrt(max(0.0, (m - ratio["low"]) ** 2 - extra ** 2)),
            math.sqrt(max(0.0, (ratio["high"] - m) ** 2 - extra ** 2)))


def needed(sides: list[tuple[float, float, float]]) -> float:
    """The smallest term (a multiple of STEP, at most LIMIT) under which every interval covers every
    median."""
    from warpgym.env.judge.ratios import Interval

    medians = [m for m, _, _ in sides]
    raw = [Interval(m, m - lo, m + hi, 0.95, 0) for m, lo, hi in sides]
    steps = 0
    while steps * STEP < LIMIT:
        term = steps * STEP
        widened = [interval.widened(term) for interval in raw]
        if all(w.low <= x <= w.high for w in widened for x in medians):
            return round(term, 4)
        steps += 1
    return LIMIT


def rows(results: dict[str, Any], term: float) -> list[dict[str, Any]]:
    runs = results["runs"]
    found = []
    for i, first in enumerate(runs[0]):
        for c, case in enumerate(first["cases"]):
            ratios = [run[i]["cases"][c]["ratio"] for run in runs
                      if len(run) > i and len(run[i]["cases"]) > c and run[i]["cases"][c]["ratio"]]
            if len(ratios) < 2:
                continue
            sides = [raw_sides(r, term) for r in ratios]
            medians = [m for m, _, _ in sides]
            found.append({"task": first["task"], "case": case["case"], "processes": len(ratios),
                          "max_over_min": round(max(medians) / min(medians), 4), "term": needed(sides)})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--term", type=float, default=0.016, help="the term the runs' intervals carry")
    args = parser.parse_args(argv)
    for path in args.results:
        print(path)
        for row in rows(json.loads(path.read_text()), args.term):
            print(f"  {row['task']} {row['case']}: {row['processes']} processes, "
                  f"max/min {row['max_over_min']}, term needed {row['term']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
