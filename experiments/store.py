"""The run store: one SQLite file per run, every step committed the moment it finishes.

WAL mode with one connection guarded by a lock (one writer): readers (``warpgym report``
on a live run, a test polling progress) never block the runner, and a ``kill -9`` loses at
most the step that was being written, never a committed one.

Tables:
- ``meta``: the resolved config, versions, when the run started;
- ``episodes``: one row per grid point (task, agent, model, context, sample) with its status,
  best turn and heldout verdict;
- ``turns``: one row per finished turn: the full ``TurnRecord`` as JSON plus the columns the
  metrics read (compiled, correct, speedup, tokens, cost);
- ``calls``: the journal of model calls, written as each answer arrives (before it is
  evaluated), so a resumed run re-uses an answer that was paid for but not yet stored as a turn;
  each call's ``origin`` (paid, cached or replayed), what it paid (``cost_usd``) and what the answer
  cost when it was first paid (``recorded_cost_usd``);
- ``events``: started, resumed, stopped (and why), finished.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from warpgym.agents.best import speedup_over

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL, category TEXT NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL,
    context TEXT NOT NULL, sample INTEGER NOT NULL,
    requires_features INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending',
    n_turns INTEGER NOT NULL DEFAULT 0,
    solved INTEGER,
    best_turn INTEGER,
    heldout TEXT,
    heldout_correct INTEGER,
    error TEXT,
    started_at REAL, finished_at REAL,
    UNIQUE (task, agent, model, context, sample)
);
CREATE TABLE IF NOT EXISTS turns (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    turn INTEGER NOT NULL,
    phase TEXT, stage TEXT,
    compiled INTEGER, correct INTEGER, arch_verified INTEGER,
    speedup REAL, speedup_low REAL, roofline REAL, reward REAL,
    input_tokens INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER,
    cost_usd REAL, latency_s REAL, eval_s REAL, cached INTEGER, origin TEXT,
    record TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (episode_id, turn)
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_id INTEGER NOT NULL, key TEXT NOT NULL, turn INTEGER,
    metadata TEXT, completion TEXT NOT NULL,
    cached INTEGER NOT NULL, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL,
    created_at REAL NOT NULL, origin TEXT, recorded_cost_usd REAL
);
CREATE INDEX IF NOT EXISTS calls_by_key ON calls (episode_id, key);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT
);
"""


EPISODE_KEY = ("task", "agent", "model", "context", "sample")
ADDED_COLUMNS = {"turns": {"origin": "TEXT", "speedup_low": "REAL"},
                 "calls": {"origin": "TEXT", "recorded_cost_usd": "REAL"}}
"""Columns a store written by an earlier version lacks; a writable open adds them (NULL in old rows); read
only, their values read as absent (None)."""


def origin_of(completion: dict[str, Any]) -> str:
    """Where an answer came from; for a record written before origins were kept, from its other fields."""
    origin = completion.get("origin")
    if origin:
        return str(origin)
    if completion.get("cached"):
        return "cached"
    return "replayed" if str(completion.get("provider") or "").startswith("replay:") else "paid"


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None


def turn_columns(record: dict[str, Any], baseline: str) -> dict[str, Any]:
    """The columns metrics read, derived from a ``TurnRecord`` dict (its ``result`` is an EvalResult dict)."""
    result = record.get("result") or {}
    speedup = speedup_over(result, baseline)
    roofs = [_finite(t.get("roofline_fraction")) for t in result.get("timing") or []]
    roofs = [r for r in roofs if r is not None]
    arch = result.get("arch_verified")
    return {
        "phase": record.get("phase"),
        "stage": result.get("stage")
        if result
        else ("extraction" if record.get("extraction_problem") else None),
        "compiled": int(bool(result.get("compiled"))),
        "correct": int(bool(result.get("correct"))),
        "arch_verified": None if arch is None else int(bool(arch)),
        "speedup": speedup,
        "speedup_low": _finite((result.get("speedup_low") or {}).get(baseline)),
        "roofline": sum(roofs) / len(roofs) if roofs else None,
        "reward": _finite(record.get("reward")),
        "input_tokens": int(record.get("input_tokens") or 0),
        "output_tokens": int(record.get("output_tokens") or 0),
        "reasoning_tokens": int(record.get("reasoning_tokens") or 0),
        "cost_usd": float(record.get("cost_usd") or 0.0),
        "latency_s": float(record.get("latency_s") or 0.0),
        "eval_s": float(record.get("eval_s") or 0.0),
        "cached": int(bool(record.get("cached"))),
        "origin": origin_of(record),
    }


class Store:
    """The SQLite store of one run. Thread-safe: every method takes the one lock."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            if not self.path.is_file():
                raise FileNotFoundError(f"no run store at {self.path}")
            uri = f"file:{self.path.resolve()}?mode=ro"
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a process kill
            self.conn.executescript(SCHEMA)
            self._add_columns()
            if (self.get_meta("schema_version") or 0) < SCHEMA_VERSION:
                self.set_meta("schema_version", SCHEMA_VERSION)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.lock = threading.Lock()

    def _add_columns(self) -> None:
        for table, columns in ADDED_COLUMNS.items():
            have = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            for name, kind in columns.items():
                if name not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def columns(self, table: str) -> set[str]:
        with self.lock:
            return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ meta and events
    def set_meta(self, key: str, value: Any) -> None:
        with self.lock_if_ready():
            self.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
            )

    def get_meta(self, key: str, default: Any = None) -> Any:
        with self.lock_if_ready():
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def lock_if_ready(self) -> Any:
        """The lock, or a no-op while ``__init__`` runs (before the lock exists)."""
        lock = getattr(self, "lock", None)
        return lock if lock is not None else _Null()

    def event(self, kind: str, detail: Any = None) -> None:
        with self.lock:
            self.conn.execute(
                "INSERT INTO events (time, kind, detail) VALUES (?, ?, ?)",
                (time.time(), kind, json.dumps(detail) if detail is not None else None),
            )

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute("SELECT time, kind, detail FROM events ORDER BY id").fetchall()
        return [
            {"time": r["time"], "kind": r["kind"], "detail": json.loads(r["detail"]) if r["detail"] else None}
            for r in rows
        ]

    # ------------------------------------------------------------------ episodes
    def add_episodes(self, rows: Iterable[dict[str, Any]]) -> None:
        """Insert grid points not yet in the store (a resumed run keeps its ids)."""
        with self.lock:
            self.conn.execute("BEGIN")
            for r in rows:
                self.conn.execute(
                    "INSERT OR IGNORE INTO episodes (task, category, agent, model, context, sample, "
                    "requires_features) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        r["task"],
                        r["category"],
                        r["agent"],
                        r["model"],
                        r["context"],
                        r["sample"],
                        int(bool(r.get("requires_features"))),
                    ),
                )
            self.conn.execute("COMMIT")

    def episodes(self) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute("SELECT * FROM episodes ORDER BY id").fetchall()
        out = []
        for r in rows:
            d = dict(r)
            d["heldout"] = json.loads(d["heldout"]) if d["heldout"] else None
            out.append(d)
        return out

    def start_episode(self, episode_id: int) -> None:
        with self.lock:
            self.conn.execute(
                "UPDATE episodes SET status = 'running', error = NULL, "
                "started_at = COALESCE(started_at, ?) WHERE id = ?",
                (time.time(), episode_id),
            )

    def finish_episode(
        self, episode_id: int, *, solved: bool, best_turn: int | None, heldout: dict[str, Any] | None
    ) -> None:
        heldout_correct = None if heldout is None else int(bool(heldout.get("correct")))
        with self.lock:
            self.conn.execute(
                "UPDATE episodes SET status = 'finished', solved = ?, best_turn = ?, heldout = ?, "
                "heldout_correct = ?, error = NULL, finished_at = ?, "
                "n_turns = (SELECT COUNT(*) FROM turns WHERE episode_id = ?) WHERE id = ?",
                (
                    int(solved),
                    best_turn,
                    json.dumps(heldout) if heldout is not None else None,
                    heldout_correct,
                    time.time(),
                    episode_id,
                    episode_id,
                ),
            )

    def set_status(self, episode_id: int, status: str, error: str | None = None) -> None:
        with self.lock:
            self.conn.execute(
                "UPDATE episodes SET status = ?, error = ? WHERE id = ?", (status, error, episode_id)
            )

    # ------------------------------------------------------------------ turns
    def add_turn(self, episode_id: int, record: dict[str, Any], baseline: str) -> bool:
        """Store a finished turn (committed on return). False when that turn was already stored."""
        cols = turn_columns(record, baseline)
        names = ", ".join(cols)
        marks = ", ".join("?" for _ in cols)
        with self.lock:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO turns (episode_id, turn, {names}, record, created_at) "
                f"VALUES (?, ?, {marks}, ?, ?)",
                (
                    episode_id,
                    int(record["turn"]),
                    *cols.values(),
                    json.dumps(record, default=str),
                    time.time(),
                ),
            )
            if cur.rowcount:
                self.conn.execute("UPDATE episodes SET n_turns = n_turns + 1 WHERE id = ?", (episode_id,))
        return bool(cur.rowcount)

    def turn_records(self, episode_id: int) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT record FROM turns WHERE episode_id = ? ORDER BY turn", (episode_id,)
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def turns(self) -> list[dict[str, Any]]:
        """Every turn's metric columns (not the records), in episode and turn order."""
        with self.lock:
            rows = self.conn.execute("SELECT * FROM turns ORDER BY episode_id, turn").fetchall()
        return [{k: r[k] for k in r.keys() if k != "record"} for r in rows]

    def all_turn_records(self) -> list[tuple[int, dict[str, Any]]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT episode_id, record FROM turns ORDER BY episode_id, turn"
            ).fetchall()
        return [(r[0], json.loads(r[1])) for r in rows]

    # ------------------------------------------------------------------ model calls
    def add_call(
        self,
        episode_id: int,
        key: str,
        turn: int | None,
        metadata: dict[str, Any] | None,
        completion: dict[str, Any],
    ) -> None:
        recorded = completion.get("recorded_cost_usd")
        with self.lock:
            self.conn.execute(
                "INSERT INTO calls (episode_id, key, turn, metadata, completion, cached, input_tokens, "
                "output_tokens, cost_usd, created_at, origin, recorded_cost_usd) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    episode_id,
                    key,
                    turn,
                    json.dumps(metadata, default=str),
                    json.dumps(completion, default=str),
                    int(bool(completion.get("cached"))),
                    int(completion.get("input_tokens") or 0),
                    int(completion.get("output_tokens") or 0),
                    float(completion.get("cost_usd") or 0.0),
                    time.time(),
                    origin_of(completion),
                    None if recorded is None else float(recorded),
                ),
            )

    def find_call(self, episode_id: int, key: str) -> dict[str, Any] | None:
        """The answer already received for exactly this request in this episode, if any."""
        with self.lock:
            row = self.conn.execute(
                "SELECT completion FROM calls WHERE episode_id = ? AND key = ? ORDER BY id LIMIT 1",
                (episode_id, key),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def calls(self) -> list[dict[str, Any]]:
        """Every model call, each with its ``origin`` and ``recorded_cost_usd`` (inferred for a store
        written before they were kept)."""
        with self.lock:
            rows = self.conn.execute("SELECT * FROM calls ORDER BY id").fetchall()
        out = []
        for r in rows:
            d = {k: r[k] for k in r.keys() if k != "completion"}
            if not d.get("origin"):
                d["origin"] = origin_of(json.loads(r["completion"]))
                d["recorded_cost_usd"] = d["cost_usd"] if d["origin"] != "cached" else None
                if d["origin"] == "replayed":  # stored when a replay's recorded cost counted as paid
                    d["cost_usd"] = 0.0
            out.append(d)
        return out

    def spent(self) -> tuple[int, float]:
        """Tokens (input + output) and USD that count against the budget: paid calls, and replayed ones at
        their recorded cost (a replay stops where the recorded run would have); never cached ones."""
        tokens, cost = 0, 0.0
        for c in self.calls():
            if c["origin"] == "cached":
                continue
            tokens += int(c["input_tokens"] or 0) + int(c["output_tokens"] or 0)
            charged = c["cost_usd"] if c["origin"] == "paid" else c["recorded_cost_usd"]
            cost += float(charged or 0.0)
        return tokens, cost


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
