"""Every accepted submission and every remembered verdict, in one SQLite file.

A submission is written (and synced) before the client is told it was accepted, so a crash or a
restart loses none: at the next start, the submissions not yet answered go back on the queue, in the
order they came. A verdict is written before anyone is told of it. The file is locked while a server
has it open, so two servers never share a queue.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    key TEXT NOT NULL,
    task TEXT NOT NULL,
    priority INTEGER NOT NULL,
    request TEXT NOT NULL,
    state TEXT NOT NULL,
    cached INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    submitted REAL NOT NULL,
    started REAL,
    finished REAL,
    result TEXT
);
CREATE INDEX IF NOT EXISTS submissions_key ON submissions (key, state);
CREATE INDEX IF NOT EXISTS submissions_state ON submissions (state);
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    result TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class JournalInUse(RuntimeError):
    """Another process holds the journal."""


@dataclass(frozen=True)
class Row:
    """A submission as the queue needs it: who, which evaluation, how urgent, in which order."""

    id: str
    key: str
    priority: int
    seq: int


class Journal:
    """Submissions (``queued`` -> ``running`` -> ``done``) and verdicts by key; safe from several threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.path.with_name(self.path.name + ".lock"), "w")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise JournalInUse(f"{self.path} is in use by another warpgym serve; give this one its own "
                               "--journal") from None
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            self.db.close()
        self._lock_file.close()

    # ------------------------------------------------------------------ writes
    def add(self, rows: list[dict[str, Any]]) -> list[int]:
        """Insert submissions in one transaction; each dict has id, key, task, priority, request (a dict),
        state, and for one answered at once, result (JSON text). Returns their sequence numbers."""
        now = time.time()
        seqs = []
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for r in rows:
                    done = r["state"] == "done"
                    cur = self.db.execute(
                        "INSERT INTO submissions (id, key, task, priority, request, state, cached, "
                        "submitted, finished, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (r["id"], r["key"], r["task"], r["priority"], json.dumps(r["request"]), r["state"],
                         int(done), now, now if done else None, r.get("result")))
                    seqs.append(int(cur.lastrowid or 0))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return seqs

    def start(self, key: str) -> dict[str, Any] | None:
        """Mark the waiting submissions of ``key`` running; the request of the oldest (None: none waits)."""
        with self.lock:
            row = self.db.execute("SELECT request FROM submissions WHERE key = ? AND state != 'done' "
                                  "ORDER BY seq LIMIT 1", (key,)).fetchone()
            if row is None:
                return None
            self.db.execute("UPDATE submissions SET state = 'running', attempts = attempts + 1, started = ? "
                            "WHERE key = ? AND state != 'done'", (time.time(), key))
        return json.loads(row[0])

    def finish(self, key: str, result: str, remember: bool) -> list[str]:
        """Answer every waiting submission of ``key`` with ``result`` (JSON text), and remember it for later
        duplicates when ``remember``. Returns the ids answered."""
        now = time.time()
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                ids = [r[0] for r in self.db.execute(
                    "SELECT id FROM submissions WHERE key = ? AND state != 'done' ORDER BY seq", (key,))]
                self.db.execute("UPDATE submissions SET state = 'done', finished = ?, result = ? "
                                "WHERE key = ? AND state != 'done'", (now, result, key))
                if remember:
                    self.db.execute("INSERT OR REPLACE INTO verdicts (key, result, created) VALUES (?, ?, ?)",
                                    (key, result, now))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return ids

    # ------------------------------------------------------------------ reads
    def verdict(self, key: str) -> str | None:
        with self.lock:
            row = self.db.execute("SELECT result FROM verdicts WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def get(self, submission_id: str) -> dict[str, Any] | None:
        """A submission's state and, once done, its result (JSON text under ``result``)."""
        with self.lock:
            row = self.db.execute(
                "SELECT id, task, state, cached, attempts, submitted, started, finished, result, key "
                "FROM submissions WHERE id = ?", (submission_id,)).fetchone()
        if row is None:
            return None
        keys = ("id", "task", "state", "cached", "attempts", "submitted", "started", "finished", "result",
                "key")
        out = dict(zip(keys, row, strict=True))
        out["cached"] = bool(out["cached"])
        return out

    def states(self, ids: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self.lock:
            for i in range(0, len(ids), 500):  # older SQLite builds take at most 999 parameters
                chunk = ids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                out.update(self.db.execute(f"SELECT id, state FROM submissions WHERE id IN ({marks})", chunk))
        return out

    def unanswered(self) -> list[Row]:
        """Submissions accepted and not yet answered (a running one was cut off), oldest first."""
        with self.lock:
            rows = self.db.execute("SELECT id, key, priority, seq FROM submissions WHERE state != 'done' "
                                   "ORDER BY seq").fetchall()
        return [Row(*r) for r in rows]

    def requeue(self) -> None:
        """Submissions left running by an earlier server go back to waiting."""
        with self.lock:
            self.db.execute("UPDATE submissions SET state = 'queued' WHERE state = 'running'")

    def counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self.db.execute("SELECT state, COUNT(*) FROM submissions GROUP BY state"))

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())


def default_path() -> Path:
    """``./warpgym-serve.sqlite`` unless ``--journal`` says otherwise."""
    return Path(os.getcwd()) / "warpgym-serve.sqlite"
