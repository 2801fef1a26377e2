"""Attempts read from run stores, and the (wrong, fixed) pairs found in them.

A run's store is opened read-only through ``Store(readonly=True)`` and read through its public
methods (``episodes``, ``turn_records``, ``get_meta``); nothing here writes to a run.

Two sources of pairs:
- *in-episode*: a wrong candidate and the first later turn of the same episode that fixes it
  (with ``adjacent_only``, only the failure just before that fix, whose feedback the fix saw);
- *cross-model* (optional): a failure its own episode never fixed, paired with the most similar
  correct kernel another model wrote for the same task, in any of the runs given.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .kinds import classify, fixes, solves, speedup_of


@dataclass
class Attempt:
    """One judged turn of one episode, with what a training example needs from it."""

    run: str
    episode_id: int
    task: str
    model: str
    agent: str
    context: str
    sample: int
    turn: int
    candidate: str | None
    response: str
    feedback: str
    result: dict[str, Any] | None
    messages: list[dict[str, Any]]
    """The system and task messages the model was sent (the first two of the turn's prompt)."""
    target: str
    max_turns: int
    baseline: str
    kind: str | None = None

    @property
    def key(self) -> str:
        return f"{self.run}:{self.episode_id}:{self.turn}"

    @property
    def solved(self) -> bool:
        return solves(self.result)

    @property
    def speedup(self) -> float | None:
        return speedup_of(self.result, self.baseline)


@dataclass
class Pair:
    """A wrong candidate and a candidate that fixed it."""

    wrong: Attempt
    fixed: Attempt
    kind: str
    source: str
    """``episode`` (the same episode, later turn) or ``cross-model``."""
    id: str = ""
    similarity: float | None = None
    """For cross-model pairs: how alike the two sources are (normalised token shingles)."""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.id:
            blob = f"{self.wrong.key}|{self.fixed.key}|{self.source}"
            self.id = hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def task(self) -> str:
        return self.wrong.task

    @property
    def gap(self) -> int:
        """Turns between the failure and its fix (0 for cross-model pairs)."""
        return self.fixed.turn - self.wrong.turn if self.source == "episode" else 0


def load_attempts(run_dir: Path, *, slow_below: float = 1.0) -> list[Attempt]:
    """Every stored turn of a run, classified, in episode and turn order."""
    from warpgym.experiments.rundir import STORE_NAME
    from warpgym.experiments.store import Store

    store = Store(run_dir / STORE_NAME, readonly=True)
    try:
        config = store.get_meta("config") or {}
        target = str(config.get("target") or "sm_90a")
        max_turns = int(config.get("max_turns") or 4)
        baseline = str((config.get("metrics") or {}).get("baseline") or "eager")
        out: list[Attempt] = []
        for episode in store.episodes():
            for record in store.turn_records(episode["id"]):
                messages = [m for m in (record.get("messages") or [])[:2] if isinstance(m, dict)]
                attempt = Attempt(
                    run=run_dir.name,
                    episode_id=int(episode["id"]),
                    task=episode["task"],
                    model=episode["model"],
                    agent=episode["agent"],
                    context=episode["context"],
                    sample=int(episode["sample"]),
                    turn=int(record["turn"]),
                    candidate=record.get("candidate"),
                    response=str(record.get("response") or ""),
                    feedback=str(
                        record.get("feedback") or (record.get("result") or {}).get("feedback") or ""
                    ),
                    result=record.get("result"),
                    messages=messages,
                    target=target,
                    max_turns=max_turns,
                    baseline=baseline,
                )
                if attempt.candidate:
                    attempt.kind = classify(attempt.result, baseline=baseline, slow_below=slow_below)
                out.append(attempt)
        return out
    finally:
        store.close()


@dataclass
class Found:
    """What the search found: the pairs, and the failures that got none (with why)."""

    pairs: list[Pair]
    unpaired: list[tuple[Attempt, str]]


def find_pairs(
    attempts: list[Attempt],
    *,
    adjacent_only: bool = False,
    cross_model: bool = False,
    slow_below: float = 1.0,
    similarity: Any = None,
) -> Found:
    """Pairs within episodes, then (optionally) cross-model pairs for the failures left unfixed.

    ``similarity(a, b)`` scores two sources for choosing the cross-model partner (the most similar
    correct kernel is the most direct repair of the failure)."""
    episodes: dict[tuple[str, int], list[Attempt]] = defaultdict(list)
    for a in attempts:
        episodes[(a.run, a.episode_id)].append(a)
    pairs: list[Pair] = []
    unpaired: list[tuple[Attempt, str]] = []
    for turns in episodes.values():
        turns.sort(key=lambda a: a.turn)
        for i, wrong in enumerate(turns):
            if not wrong.candidate or wrong.kind is None:
                continue
            fix = next(
                (
                    later
                    for later in turns[i + 1 :]
                    if later.candidate
                    and fixes(
                        wrong.kind, wrong.result, later.result, baseline=wrong.baseline, slow_below=slow_below
                    )
                ),
                None,
            )
            if fix is None:
                unpaired.append((wrong, "never fixed in its episode"))
                continue
            if adjacent_only:
                between = [
                    t for t in turns[i + 1 :] if t.turn < fix.turn and t.candidate and t.kind is not None
                ]
                if between:
                    unpaired.append(
                        (
                            wrong,
                            f"a later failure (turn {between[-1].turn}) is the one paired with "
                            f"the fix at turn {fix.turn} (--adjacent-only)",
                        )
                    )
                    continue
            if fix.candidate == wrong.candidate:
                unpaired.append((wrong, "the fix has the same source (judged differently)"))
                continue
            pairs.append(Pair(wrong, fix, wrong.kind, "episode"))
    if cross_model:
        pairs += _cross_model(attempts, unpaired, slow_below=slow_below, similarity=similarity)
        paired = {p.wrong.key for p in pairs}
        unpaired = [(a, why) for a, why in unpaired if a.key not in paired]
    return Found(pairs, unpaired)


def _cross_model(
    attempts: list[Attempt], unpaired: list[tuple[Attempt, str]], *, slow_below: float, similarity: Any
) -> list[Pair]:
    solutions: dict[str, list[Attempt]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for a in attempts:
        if a.candidate and a.solved and (a.task, a.candidate) not in seen:
            seen.add((a.task, a.candidate))
            solutions[a.task].append(a)
    out = []
    for wrong, why in unpaired:
        if why != "never fixed in its episode" or wrong.kind is None or not wrong.candidate:
            continue
        partners = [
            s
            for s in solutions.get(wrong.task, [])
            if s.model != wrong.model
            and s.candidate
            and fixes(wrong.kind, wrong.result, s.result, baseline=wrong.baseline, slow_below=slow_below)
        ]
        if not partners:
            continue
        if similarity is not None:
            scored = [(similarity(wrong.candidate, s.candidate), s) for s in partners]
            score, best = max(scored, key=lambda x: x[0])
        else:
            score, best = None, partners[0]
        out.append(Pair(wrong, best, wrong.kind, "cross-model", similarity=score))
    return out


__all__ = ["Attempt", "Found", "Pair", "find_pairs", "load_attempts"]
