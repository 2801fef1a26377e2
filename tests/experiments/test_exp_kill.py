"""A run killed with SIGKILL mid-way and resumed loses no finished step and repeats no model call.

The run is a real ``warpgym run`` in a subprocess, judged by the real evaluator on the CPU. A
small launcher wraps ``make_provider`` so that every call reaching the provider is appended to a
log before it is made: that log, across both processes, is what a paid API would have billed.
The kill lands while the third answer is being evaluated: the answer is journaled in the store
but its turn is not, the case where a careless runner would pay for the answer twice.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from exp_helpers import GOOD, NO_CODE, TORCH_OP, fenced, write_experiment, write_replay

LAUNCHER = """
import json, os, sys
import warpgym.agents as agents

real = agents.make_provider
LOG = os.environ["WARPGYM_TEST_CALL_LOG"]


class Logged:
    def __init__(self, inner):
        self.inner, self.name = inner, inner.name

    def complete(self, messages, *, metadata=None, **params):
        with open(LOG, "a") as f:
            row = {"pid": os.getpid(), "sample": metadata["sample"], "turn": metadata["turn"]}
            f.write(json.dumps(row) + "\\n")
        return self.inner.complete(messages, metadata=metadata, **params)

    async def acomplete(self, messages, **kw):
        return self.complete(messages, **kw)


agents.make_provider = lambda spec, **kw: Logged(real(spec, **kw))
from warpgym.experiments.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _count(db: Path, table: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.slow  # two cold evaluation workers: ~15 s on an idle 2-core machine
def test_sigkill_mid_run_then_resume_loses_nothing_and_pays_nothing_twice(tmp_path: Path) -> None:
    replay = write_replay(
        tmp_path / "rec.jsonl",
        [
            (0, 1, NO_CODE),
            (0, 2, fenced(TORCH_OP)),
            (0, 3, fenced(GOOD)),  # fixed at turn 3
            (1, 1, NO_CODE),
            (1, 2, fenced(GOOD)),
            (1, 3, fenced(GOOD)),
            (2, 1, fenced(GOOD)),
            (2, 2, fenced(GOOD)),
            (2, 3, fenced(GOOD)),
        ],
    )
    exp = write_experiment(tmp_path / "exp.toml", replay, samples=3)
    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER)
    log = tmp_path / "calls.jsonl"
    run_dir = tmp_path / "run"
    db = run_dir / "store.sqlite"
    env = {**os.environ, "WARPGYM_TEST_CALL_LOG": str(log)}

    first = subprocess.Popen(
        [sys.executable, str(launcher), "run", str(exp), "--run-dir", str(run_dir), "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.time() + 120
    try:
        while _count(db, "calls") < 3:  # the third answer has arrived and is being evaluated
            assert first.poll() is None, first.stdout.read().decode() if first.stdout else ""
            assert time.time() < deadline, "the run never reached its third call"
            time.sleep(0.01)
        os.killpg(first.pid, signal.SIGKILL)  # kill -9; its workers exit when their sockets close
    finally:
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        before = conn.execute(
            "SELECT episode_id, turn, record, created_at FROM turns ORDER BY episode_id, turn"
        ).fetchall()
    assert [(e, t) for e, t, _, _ in before] == [(1, 1), (1, 2)]  # turn 3 was being judged when killed
    assert _count(db, "calls") == 3

    second = subprocess.run(
        [sys.executable, str(launcher), "run", "--resume", str(run_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Resuming run" in second.stdout and f"Report: {run_dir / 'report.html'}" in second.stdout

    with sqlite3.connect(db) as conn:
        after = conn.execute(
            "SELECT episode_id, turn, record, created_at FROM turns ORDER BY episode_id, turn"
        ).fetchall()
        statuses = [r[0] for r in conn.execute("SELECT status FROM episodes ORDER BY id")]
        correct = conn.execute("SELECT COUNT(DISTINCT episode_id) FROM turns WHERE correct = 1").fetchone()[0]
    assert after[:2] == before  # nothing stored before the kill changed
    assert [(e, t) for e, t, _, _ in after] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    assert statuses == ["finished"] * 3 and correct == 3
    with sqlite3.connect(db) as conn:  # each best kernel was also scored on the heldout shapes
        assert [r[0] for r in conn.execute("SELECT heldout_correct FROM episodes ORDER BY id")] == [1, 1, 1]

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    asked = [(c["sample"], c["turn"]) for c in calls]
    assert sorted(asked) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1)]  # each once: none repeated
    assert len({c["pid"] for c in calls}) == 2  # and the second process did make calls of its own
    assert "| 3 | 100.0% | 100.0% |" in (run_dir / "report.md").read_text()  # episodes, compiled, correct
