"""The viewer's documents from a run's store, rebuilt only when the store has changed, and written as
scripts a page opened from disk can load (a browser refuses ``fetch`` on ``file://``, not ``<script>``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..rundir import STORE_NAME
from ..store import Store
from .episode import episode_doc
from .index import index_doc, run_state

CALLBACK = "warpgymView.receive"
REPORT_EVERY_S = 60.0


def as_script(doc: dict[str, Any]) -> bytes:
    """``warpgymView.receive({...});``: the document as JSON, all ASCII, with no ``<`` or ``>`` left
    (so no text from the run can close or open a tag wherever the file ends up being read)."""
    blob = json.dumps(doc, ensure_ascii=True, separators=(",", ":"), default=str)
    blob = blob.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"{CALLBACK}({blob});\n".encode("ascii")


class Builder:
    """Builds the index and episode documents of one run from one read-only connection to its store."""

    def __init__(self, run_dir: Path, *, base: str, refresh_s: float, report_every_s: float | None) -> None:
        self.run_dir = run_dir
        self.base = base
        self.refresh_s = refresh_s
        self.report_every_s = report_every_s
        self.store = Store(run_dir / STORE_NAME, readonly=True)
        self._index: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self._report_drawn: tuple[tuple[Any, ...], float] | None = None

    def close(self) -> None:
        self.store.close()

    def signature(self) -> tuple[Any, ...]:
        """Changes whenever the runner commits (SQLite's count of other connections' commits; the
        store's files) and when the run's process goes away without a word (a ``kill -9``)."""
        with self.store.lock:
            data_version = self.store.conn.execute("PRAGMA data_version").fetchone()[0]
        return (data_version, *self._stamps(), run_state(self.store.events()))

    def _stamps(self) -> list[int | None]:
        out: list[int | None] = []
        for name in (STORE_NAME, STORE_NAME + "-wal"):
            try:
                st = (self.run_dir / name).stat()
                out += [st.st_mtime_ns, st.st_size]
            except FileNotFoundError:
                out += [None, None]
        return out

    def index(self) -> dict[str, Any]:
        """The index, rebuilt when the store changed since the last call (and the report's figures
        redrawn, at most every ``report_every_s`` seconds)."""
        sig = self.signature()
        drew = self.refresh_report(sig)
        if self._index is not None and self._index[0] == sig and not drew:
            return self._index[1]
        doc = index_doc(self.store, self.run_dir, base=self.base, refresh_s=self.refresh_s)
        self._index = (sig, doc)
        return doc

    def episode(self, episode_id: int) -> dict[str, Any] | None:
        row = next((e for e in self.store.episodes() if e["id"] == episode_id), None)
        if row is None:
            return None
        doc = episode_doc(row, self.store.turn_records(episode_id))
        doc["kind"] = "episode"
        return doc

    def refresh_report(self, sig: tuple[Any, ...], *, force: bool = False) -> bool:
        """Rewrite the run's report (report.html, plots/) when the store changed and the last drawing is
        old enough; the page shows those figures. False when nothing was drawn."""
        if self.report_every_s is None:
            return False
        now = time.monotonic()
        if self._report_drawn is None and self._report_is_current():
            self._report_drawn = (sig, now)
        if self._report_drawn is not None:
            drawn_sig, drawn_at = self._report_drawn
            if drawn_sig == sig or (not force and now - drawn_at < self.report_every_s):
                return False
        if not self.store.turns():
            return False
        from .. import report

        report.write(self.run_dir, plots=True)
        self._report_drawn = (sig, now)
        return True

    def _report_is_current(self) -> bool:
        """A report written after the store's last change (by ``warpgym run`` or ``report``) is kept."""
        page = self.run_dir / "report.html"
        stamps = [s for s in self._stamps()[::2] if s is not None]
        return page.is_file() and (self.run_dir / "plots").is_dir() and page.stat().st_mtime_ns >= max(stamps)
