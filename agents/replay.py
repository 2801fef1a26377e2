"""Recorded answers: play an episode again offline, or test the loops without a model.

A replay file is JSON Lines, one answer per line::

    {"task": "math/add", "sample": 0, "turn": 1, "text": "```python ...```",
     "loop": "fix-retry", "context": "none", "input_tokens": 812, "output_tokens": 400, ...}

``task``, ``sample`` and ``turn`` find the answer; ``loop`` and ``context``, when a line has them,
must match too, so one file can hold the answers of several arms of an experiment (a line without
them answers for any loop and context). When several lines match, the later one wins, so appending
to a file overrides. Any ``Completion`` field on the line (tokens, cost, latency, model) is returned
as recorded, except cost: a replayed answer pays nothing (``cost_usd`` 0, ``origin`` "replayed"), and
the line's ``cost_usd`` becomes the answer's ``recorded_cost_usd``, so a replayed run can say what the
original run cost without calling it spent.

``RecordingProvider`` writes such a file from a live provider (``make_provider(spec, record=PATH)``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .api import Completion, ProviderError

MATCH_KEYS = ("task", "sample", "turn")
OPTIONAL_KEYS = ("loop", "context")


class ReplayMissing(ProviderError):
    """No recorded answer for this (task, sample, turn[, loop, context])."""


def _read(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    rows: list[dict[str, Any]] = []
    for file in files:
        for n, line in enumerate(file.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ProviderError(f"{file}:{n}: not JSON ({exc})") from None
            if "text" not in row and "response" in row:
                row["text"] = row["response"]
            missing = [k for k in (*MATCH_KEYS, "text") if k not in row]
            if missing:
                raise ProviderError(f"{file}:{n}: a replay line needs {', '.join(missing)}")
            rows.append(row)
    return rows


class ReplayProvider:
    """Answers from a replay file (or a directory of them); never touches the network."""

    kind = "replay"

    def __init__(self, path: str | Path, **_params: Any) -> None:
        self.path = Path(path)
        if not self.path.exists():
            from .api import ProviderConfigError

            raise ProviderConfigError(f"replay file {self.path} does not exist")
        self.rows = _read(self.path)
        self.calls: list[dict[str, Any]] = []
        """What was asked, in order (metadata and messages), for tests and debugging."""

    @property
    def name(self) -> str:
        return f"replay:{self.path}"

    def lookup(self, metadata: dict[str, Any]) -> dict[str, Any]:
        want = {k: metadata.get(k, 0 if k == "sample" else None) for k in (*MATCH_KEYS, *OPTIONAL_KEYS)}
        best: dict[str, Any] | None = None
        best_score = -1
        for row in self.rows:
            if any(row[k] != want[k] for k in MATCH_KEYS):
                continue
            if any(k in row and row[k] is not None and row[k] != want[k] for k in OPTIONAL_KEYS):
                continue
            score = sum(1 for k in OPTIONAL_KEYS if row.get(k) is not None)
            if score >= best_score:
                best, best_score = row, score
        if best is None:
            raise ReplayMissing(
                f"{self.name}: no recorded answer for task={want['task']!r} sample={want['sample']} "
                f"turn={want['turn']} loop={want['loop']!r} context={want['context']!r}")
        return best

    def complete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                 **params: Any) -> Completion:
        meta = dict(metadata or {})
        self.calls.append({"metadata": meta, "messages": messages, "params": params})
        row = self.lookup(meta)
        completion = Completion.from_dict({k: v for k, v in row.items() if k not in ("messages", "metadata")})
        completion.provider = completion.provider or self.name
        completion.model = completion.model or "replay"
        recorded = row.get("recorded_cost_usd", row.get("cost_usd"))
        completion.recorded_cost_usd = None if recorded is None else float(recorded)
        completion.cost_usd = 0.0
        completion.origin = "replayed"
        completion.cached = False
        return completion

    async def acomplete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                        **params: Any) -> Completion:
        return self.complete(messages, metadata=metadata, **params)


class RecordingProvider:
    """Wraps a provider and appends each answer, with the metadata that finds it again, to a replay file.
    Cached answers are recorded too, so a file can be built from a cache without spending anything."""

    def __init__(self, inner: Any, path: Path, *, with_messages: bool = True) -> None:
        self.inner = inner
        self.path = Path(path)
        self.with_messages = with_messages
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    def _write(self, completion: Completion, messages: list[dict[str, str]], metadata: dict[str, Any] | None
               ) -> None:
        meta = metadata or {}
        row: dict[str, Any] = {k: meta.get(k) for k in (*MATCH_KEYS, *OPTIONAL_KEYS)}
        row.update(recorded_row(completion.to_dict()))
        if self.with_messages:
            row["messages"] = messages
        line = json.dumps(row, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(line + "\n")

    def complete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                 **params: Any) -> Completion:
        completion = self.inner.complete(messages, metadata=metadata, **params)
        self._write(completion, messages, metadata)
        return completion

    async def acomplete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                        **params: Any) -> Completion:
        completion = await self.inner.acomplete(messages, metadata=metadata, **params)
        self._write(completion, messages, metadata)
        return completion


def recorded_row(completion: dict[str, Any]) -> dict[str, Any]:
    """A completion as a replay line holds it: ``cost_usd`` is what the answer cost when it was paid
    (a cached answer's recorded cost, not its 0), and where this one came from is left out."""
    row = {k: v for k, v in completion.items() if k not in ("origin", "recorded_cost_usd")}
    recorded = completion.get("recorded_cost_usd")
    if recorded is not None:
        row["cost_usd"] = recorded
    return row


def write_replay(path: str | Path, rows: Iterable[dict[str, Any]], *, append: bool = False) -> Path:
    """Write replay lines (each needs task, sample, turn and text) — for tests and hand-made scenarios."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w") as f:
        for row in rows:
            row = {"sample": 0, **row}
            missing = [k for k in (*MATCH_KEYS, "text") if k not in row]
            if missing:
                raise ValueError(f"replay row {row!r} lacks {', '.join(missing)}")
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
