"""One best turn: the agent loops, the metrics and the runner pick the same turn of an episode.

The episode is crafted where a rule by reward and a rule by speedup part ways: two correct kernels
slower than the baseline (equal rewards, different speedups), two past the reward's cap (equal
rewards again), and a tie at the top, which goes to the earlier turn.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from warpgym.agents import EpisodeSettings, make_provider, run_episode
from warpgym.agents.best import best_index
from warpgym.agents.loops import best_attempt
from warpgym.agents.replay import write_replay
from warpgym.env import EvalOptions, EvalResult, KernelEnv
from warpgym.env.candidate import Candidate
from warpgym.experiments import runner
from warpgym.experiments.metrics import EpisodeView, TurnView
from warpgym.experiments.store import turn_columns
from warpgym.tasks import Task, get_task

TASK = "math/add"
GOOD = get_task(TASK).solution_source()
VERDICTS: list[tuple[bool, float | None]] = [  # (correct, speedup over eager), turn by turn
    (True, 0.5),
    (True, 0.8),
    (False, None),
    (True, 12.0),
    (True, 20.0),
    (True, 20.0),
]
BEST = 5


class Scripted:
    """Verdicts fixed by turn (each candidate carries its turn in a comment), no worker process."""

    def evaluate(self, task: Task, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult:
        source = candidate if isinstance(candidate, str) else candidate.source
        match = re.search(r"# turn (\d+)", source)
        assert match is not None
        correct, speedup = VERDICTS[int(match.group(1)) - 1]
        return EvalResult(
            task=task.id,
            target=options.target,
            device="cpu",
            stage="done",
            compiled=True,
            correct=correct,
            speedup={"eager": speedup} if speedup is not None else None,
        )

    def close(self) -> None:
        pass


def _played(tmp_path: Path) -> tuple[list[dict[str, Any]], int]:
    """The episode's turn records, and the turn the loop calls best."""
    rows = [
        {"task": TASK, "turn": t, "text": f"```python\n{GOOD}\n# turn {t}\n```\n"}
        for t in range(1, len(VERDICTS) + 1)
    ]
    provider = make_provider(f"replay:{write_replay(tmp_path / 'replay.jsonl', rows)}")
    env = KernelEnv(TASK, device="cpu", max_turns=len(VERDICTS), evaluator=Scripted(), target_speedup=100.0)
    settings = EpisodeSettings(TASK, loop="fix-retry", max_turns=len(VERDICTS))
    result = run_episode(settings, provider=provider, env=env)
    records = [r.to_dict() for r in result.turns]
    assert [(r.correct, (r.result or {}).get("speedup")) for r in result.turns][:3] == [
        (True, {"eager": 0.5}),
        (True, {"eager": 0.8}),
        (False, None),
    ]
    rewards = [r["reward"] for r in records]
    assert rewards[0] == rewards[1] and rewards[3] == rewards[4]  # the crafted ties of the reward
    assert result.best is not None
    assert best_attempt(records, "eager") == records[result.best.turn - 1]
    return records, result.best.turn


def test_loops_metrics_and_runner_agree_on_the_best_turn(tmp_path: Path) -> None:
    records, loop_best = _played(tmp_path)
    columns = [turn_columns(r, "eager") for r in records]
    view = EpisodeView(
        id=1, task=TASK, category="math", agent="fix-retry", model="m", context="none", sample=0,
        turns=[
            TurnView(turn=r["turn"], compiled=bool(c["compiled"]), correct=bool(c["correct"]),
                     speedup=c["speedup"])
            for r, c in zip(records, columns, strict=True)
        ],
    )
    metrics_best = view.best()
    assert metrics_best is not None
    assert (loop_best, metrics_best.turn, runner.best_turn(records, "eager")) == (BEST, BEST, BEST)
    assert view.speedup() == 20.0


def test_the_rule() -> None:
    assert best_index([]) is None and best_index([], else_last=True) is None
    assert best_index([(False, None), (False, 3.0)]) is None
    assert best_index([(False, None), (False, 3.0)], else_last=True) == 1
    assert best_index([(True, None), (True, 0.1), (True, None)]) == 1  # untimed ranks below timed
    assert best_index([(True, None), (True, None)]) == 0  # no timing anywhere: the earliest correct
    assert best_index([(False, 9.0), (True, 2.0), (True, 2.0)]) == 1  # a wrong kernel's speedup is no help
