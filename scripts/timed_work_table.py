"""How far each timed call sits above the device time of its own work: the margin the timed work rule
(env/judge/timed_evidence.py, ``TIMED_WORK_FLOOR``) leaves honest references.

Reads the rows ``warpgym suite check --device cuda --jsonl PATH`` wrote (``candidate_ms`` and ``work_ms``
per bench case) and prints, per bench case, the timed median over the device time of the traced timed calls
and over that of the check after the window, then the smallest of each and how many fall below a floor.

    python scripts/timed_work_table.py docs/runs/suite-*.jsonl [--floor 0.7]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def ratios(rows: list[dict]) -> list[tuple[str, int, float, float | None, float | None]]:
    """(task, bench case index, timed ms, timed / traced work, timed / checked work) per bench case."""
    out = []
    for row in rows:
        for i, (timed, work) in enumerate(zip(row.get("candidate_ms") or [], row.get("work_ms") or [],
                                              strict=False)):
            traced, checked = work
            label = row["task"] + (f" ({row['reference']})" if row.get("reference") else "")
            out.append((label, i, timed, timed / traced if traced else None,
                        timed / checked if checked else None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", nargs="+", type=Path)
    parser.add_argument("--floor", type=float, default=0.7)
    args = parser.parse_args()
    rows = [json.loads(line) for path in args.jsonl for line in path.read_text().splitlines() if line.strip()]
    table = ratios(rows)
    print("| task | bench case | timed ms | timed / traced work | timed / checked work |")
    print("|---|---:|---:|---:|---:|")
    def margin(row: tuple) -> float:
        return min((x for x in row[3:] if x), default=9.0)

    for task, i, timed, traced, checked in sorted(table, key=margin):
        show = [f"{x:.3f}" if x else "-" for x in (traced, checked)]
        print(f"| {task} | {i} | {timed:.4g} | {show[0]} | {show[1]} |")
    for name, col in (("traced", 3), ("checked", 4)):
        values = [r[col] for r in table if r[col]]
        if values:
            low = sum(v < args.floor for v in values)
            print(f"timed / {name} work: {len(values)} bench cases, smallest {min(values):.3f}, "
                  f"median {sorted(values)[len(values) // 2]:.3f}, {low} below {args.floor}")


if __name__ == "__main__":
    main()
