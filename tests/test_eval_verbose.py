"""``warpgym eval --verbose``: each stage and check logged as it starts, so a run that stalls shows where."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def _eval(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "warpgym.experiments.cli", "eval", *args, "--device", "cpu"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    return [ln for ln in proc.stderr.splitlines() if STAMP.match(ln)]


def test_verbose_logs_every_stage_in_order_and_each_check_before_it_runs() -> None:
    lines = _eval("math/add", str(ROOT / "tasks" / "solutions" / "math" / "add.py"), "--verbose")
    stages = [ln.rsplit(": ", 1)[1] for ln in lines
              if re.search(r": (compile|correctness|instructions)$", ln)]
    assert stages == ["compile", "correctness", "instructions"], lines
    checks = [ln for ln in lines if "math/add: dev check" in ln or "math/add: heldout check" in ln]
    started = lines.index(next(ln for ln in lines if ln.endswith(": correctness")))
    assert len(checks) >= 2 and lines.index(checks[0]) > started
    # A CUDA candidate on a machine without a GPU: its stages still show, its checks are not run.
    cuda = _eval("ptx/gemm-fp8", str(ROOT / "tasks" / "solutions" / "ptx" / "gemm-fp8-cuda"), "--verbose")
    assert [ln.rsplit(": ", 1)[1] for ln in cuda] == ["compile", "correctness", "instructions"], cuda


def test_without_verbose_nothing_is_logged() -> None:
    assert _eval("math/add", str(ROOT / "tasks" / "solutions" / "math" / "add.py")) == []
