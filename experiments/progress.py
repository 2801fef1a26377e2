"""The live view of a run: episodes done, compiled, correct, faster than the baseline, paid tokens and
cost, and where the model's answers came from (paid, cached, replayed: ``accounts.py``).

On a terminal it is a rich ``Live`` panel refreshed a few times a second; elsewhere (CI logs,
pipes) it prints one line per finished episode, so logs stay readable.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .accounts import Accounts, sentence


@dataclass
class Counters:
    total: int = 0
    done: int = 0
    before: int = 0
    """Episodes finished before this resume of the run."""
    running: int = 0
    compiled: int = 0
    correct: int = 0
    faster: int = 0
    timed: int = 0
    turns: int = 0
    errors: int = 0
    reused: int = 0
    """Answers taken from the run's journal on a resume (calls made, but not stored as turns, earlier)."""
    accounts: Accounts = field(default_factory=Accounts)
    """The run's model calls by origin, over every start and resume."""
    started: float = field(default_factory=time.time)
    stopping: str | None = None


class Display:
    """Thread-safe counters plus their rendering; ``live`` on a TTY, lines otherwise."""

    def __init__(
        self, title: str, *, stream: TextIO | None = None, quiet: bool = False, live: bool | None = None
    ) -> None:
        self.title = title
        self.c = Counters()
        self.lock = threading.RLock()  # rich's Live calls renderable() from inside log()
        self.quiet = quiet
        self.stream = stream or sys.stdout
        self.console = Console(file=self.stream, highlight=False)
        self.live_mode = (self.console.is_terminal if live is None else live) and not quiet
        self._live: Live | None = None
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task(title, total=1)

    def update(self, **changes: Any) -> None:
        with self.lock:
            for key, value in changes.items():
                setattr(self.c, key, getattr(self.c, key) + value if key != "stopping" else value)

    def count_call(self, completion: Any) -> None:
        """A model call just answered (paid, cached or replayed)."""
        with self.lock:
            self.c.accounts.add_completion(completion)

    def set(self, **values: Any) -> None:
        with self.lock:
            for key, value in values.items():
                setattr(self.c, key, value)

    def log(self, line: str) -> None:
        """An event worth a line of its own (an episode's outcome off-TTY, a warning)."""
        if self.quiet:
            return
        with self.lock:
            if self._live is not None:
                self._live.console.print(line, highlight=False, markup=False)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()

    # ------------------------------------------------------------------ rendering
    def stats(self) -> Group:
        """One header row and one row of numbers (fits 80 columns), then a stop notice if any."""
        c = self.c
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="dim")
        pct = lambda n: f"{n}" + (f" ({100 * n / c.done:.0f}%)" if c.done else "")
        columns = {
            "done": f"{c.done}/{c.total}" + (f" ({c.before} earlier)" if c.before else ""),
            "running": str(c.running),
            "compiled": pct(c.compiled),
            "correct": pct(c.correct),
            "faster": f"{c.faster}/{c.timed} timed" if c.timed else "- (untimed)",
            "turns": str(c.turns),
            "paid tokens": f"{c.accounts.paid.tokens:,}",
            "cost": f"${c.accounts.paid.cost_usd:.2f}",
        }
        if c.errors:
            columns["errors"] = str(c.errors)
        for name in columns:
            table.add_column(name, justify="right")
        table.add_row(*columns.values())
        parts: list[Any] = [table]
        if c.accounts.calls > c.accounts.paid.calls:
            parts.append(Text(sentence(c.accounts), style="dim"))
        if c.stopping:
            parts.append(Text(c.stopping, style="yellow"))
        return Group(*parts)

    def renderable(self) -> Group:
        with self.lock:
            self._bar.update(self._task, total=max(self.c.total, 1), completed=self.c.done)
            return Group(self._bar, self.stats())

    def summary(self) -> str:
        c = self.c
        elapsed = time.time() - c.started
        timed = f", {c.faster} of {c.timed} timed faster than the baseline" if c.timed else ""
        return (
            f"{c.done}/{c.total} episodes done ({c.compiled} compiled, {c.correct} correct{timed}); "
            f"{c.turns} turns; {sentence(c.accounts)}; {c.errors} errors; {elapsed:.0f} s"
        )

    def __enter__(self) -> Display:
        if self.live_mode:
            self._live = Live(
                self.renderable(),
                console=self.console,
                refresh_per_second=4,
                transient=False,
                get_renderable=self.renderable,
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None
