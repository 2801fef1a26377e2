"""scripts/suite_table.py: a later run's passing row replaces an earlier one; its failure does not."""

from __future__ import annotations

import json

from script_module import load_script

suite_table = load_script("suite_table")


def _row(task: str, ok: bool, eager: float | None) -> dict:
    return {"task": task, "category": task.split("/")[0], "ok": ok, "correct": ok,
            "speedup": {"eager": eager} if eager else None}


def test_later_passing_rows_replace_and_failures_do_not(tmp_path):
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text("\n".join(json.dumps(r) for r in [_row("math/a", True, 0.5), _row("math/b", True, 2.0),
                                                     _row("math/c", False, None)]) + "\n")
    new.write_text("\n".join(json.dumps(r) for r in [_row("math/a", True, 0.9), _row("math/b", False, None),
                                                     _row("math/c", True, 1.5)]) + "\n")
    rows, source = suite_table.merged([old, new])
    assert [(r["task"], r["speedup"]["eager"]) for r in rows] == [("math/a", 0.9), ("math/b", 2.0),
                                                                 ("math/c", 1.5)]
    assert source == {"math/a": "new.jsonl", "math/b": "old.jsonl", "math/c": "new.jsonl"}
    out = tmp_path / "t.md"
    assert suite_table.main([str(old), str(new), "--markdown", str(out)]) == 0
    assert "| math/a | yes | 0.90x |" in out.read_text()
