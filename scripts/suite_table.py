"""docs/suite.md's table from recorded `suite check --jsonl` rows of several runs.

Files are read in order and each (task, reference) keeps its last row, except that a row that failed
(``ok`` false) never replaces a passing one: a later run that could not judge a reference (a harness
failure, a reference since rewritten) leaves the last good figures standing, and the failure stays in its
own file. The random tasks' speedups are left out: their baselines in those runs were placeholders. The
table is ``suite check``'s own (``markdown_table``).

    python scripts/suite_table.py docs/runs/suite-h200-2026-11-30.jsonl \\
        docs/runs/suite-marked-h200-2026-12-03-21h.jsonl --markdown /tmp/table.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from warpgym.experiments.cli.suite_cmd import label, markdown_table


def merged(paths: list[Path]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows kept, sorted, and for each its source file's name."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    source: dict[str, str] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("category") == "random":
                row["speedup"] = None
            key = (row["task"], row.get("reference") or "")
            if key in kept and kept[key].get("ok") and not row.get("ok"):
                continue
            kept[key] = row
            source[label(row)] = path.name
    rows = sorted(kept.values(), key=lambda r: (r["task"], r.get("reference") or ""))
    return rows, source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", type=Path, help="`suite check --jsonl` files, oldest first")
    parser.add_argument("--markdown", type=Path, required=True)
    args = parser.parse_args(argv)
    rows, source = merged(args.rows)
    args.markdown.write_text(markdown_table(rows))
    for name in sorted({*source.values()}):
        print(f"{sum(1 for s in source.values() if s == name)} rows from {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
