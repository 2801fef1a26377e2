"""Where a run's model answers came from and what they cost, as progress, report, compare and export
say it.

Every model call is one of ``warpgym.agents.ORIGINS``: ``paid`` (billed by the provider),
``cached`` (the on-disk response cache answered; nothing was paid now) or ``replayed`` (a recording
answered). Only paid cost is called cost; a cached or replayed answer's cost when it was first paid is
shown as *recorded*, so a replayed run can say what the original run cost without claiming it spent it.
The figures come from the store's ``calls`` journal: each call once, however often a run was resumed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .report_doc import count, usd

if TYPE_CHECKING:
    from .report_doc import Doc
    from .store import Store

ORIGINS = ("paid", "cached", "replayed")


@dataclass
class Tally:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """What these calls paid (0 unless paid)."""
    recorded_cost_usd: float = 0.0
    """What their answers cost when first paid, where that was recorded."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Accounts:
    """The calls of a run by origin, and the run's cache mode (``run.cache``) when known."""

    tallies: dict[str, Tally] = field(default_factory=lambda: {o: Tally() for o in ORIGINS})
    cache: str | None = None

    def add(self, origin: str, input_tokens: int, output_tokens: int, cost_usd: float,
            recorded_cost_usd: float | None) -> None:
        t = self.tallies.setdefault(origin, Tally())
        t.calls += 1
        t.input_tokens += int(input_tokens or 0)
        t.output_tokens += int(output_tokens or 0)
        t.cost_usd += float(cost_usd or 0.0)
        t.recorded_cost_usd += float(cost_usd if origin == "paid" else recorded_cost_usd or 0.0)

    def add_completion(self, completion: Any) -> None:
        """Count a ``Completion`` (or its dict) as it arrives."""
        get = completion.get if isinstance(completion, dict) else lambda k, d=None: getattr(completion, k, d)
        self.add(get("origin") or "paid", get("input_tokens", 0), get("output_tokens", 0),
                 get("cost_usd", 0.0), get("recorded_cost_usd"))

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.tallies.values())

    @property
    def paid(self) -> Tally:
        return self.tallies["paid"]

    def to_dict(self) -> dict[str, Any]:
        return {"cache": self.cache, "paid_cost_usd": self.paid.cost_usd,
                **{o: asdict(t) for o, t in self.tallies.items()}}


def from_store(store: Store) -> Accounts:
    acc = Accounts(cache=((store.get_meta("config") or {}).get("run") or {}).get("cache"))
    if isinstance(acc.cache, bool):  # a run saved before the cache had modes
        acc.cache = "auto" if acc.cache else "off"
    for c in store.calls():
        acc.add(c["origin"], c["input_tokens"], c["output_tokens"], c["cost_usd"], c.get("recorded_cost_usd"))
    return acc


# --------------------------------------------------------------------------- in words
def _part(origin: str, t: Tally, cache: str | None) -> str:
    if origin == "paid":
        return f"{count(t.calls)} paid ({usd(t.cost_usd)}, {count(t.tokens)} tokens)"
    recorded = f"{usd(t.recorded_cost_usd)} when first paid" if t.recorded_cost_usd else "no recorded cost"
    if origin == "cached":
        mode = f'; cache = "{cache}"' if cache else ""
        return f"{count(t.calls)} answered from the response cache (not paid now; {recorded}{mode})"
    if origin == "replayed":
        return f"{count(t.calls)} replayed from recordings (not paid; {recorded})"
    return f"{count(t.calls)} {origin}"


def sentence(acc: Accounts) -> str:
    """``12 model calls: 9 paid ($0.0300, 12,000 tokens), 3 answered from the response cache (...)``."""
    if not acc.calls:
        return "no model calls"
    parts = [_part(o, t, acc.cache) for o, t in acc.tallies.items() if t.calls or o == "paid"]
    return f"{count(acc.calls)} model call{'s' if acc.calls != 1 else ''}: " + ", ".join(parts)


def table(acc: Accounts) -> tuple[list[str], list[list[str]]]:
    headers = ["answers", "calls", "input tokens", "output tokens", "cost (paid)", "recorded cost"]
    rows = [
        [o, count(t.calls), count(t.input_tokens), count(t.output_tokens), usd(t.cost_usd),
         usd(t.recorded_cost_usd) if o != "paid" else "-"]
        for o, t in acc.tallies.items() if t.calls
    ]
    return headers, rows


def add_section(doc: Doc, acc: Accounts) -> None:
    """The report's account of its model calls: a sentence and one row per origin."""
    doc.h("Model calls")
    notes = [sentence(acc) + "."]
    if acc.tallies["cached"].calls:
        notes.append("Cached answers repeat an earlier run's answers; a rerun that should measure variance "
                     'needs `cache = "auto"` (reads only unsampled answers) or `"off"` in `[run]`.')
    if acc.tallies["replayed"].calls:
        notes.append("Replayed answers come from recordings: their cost is what the recorded run paid, "
                     "not a cost of this run.")
    doc.p(" ".join(notes))
    headers, rows = table(acc)
    if rows:
        doc.table(headers, rows)


def compare_rows(named: list[tuple[str, Accounts]]) -> tuple[list[str], list[list[str]]]:
    """One row per run for ``warpgym compare``."""
    headers = ["run", "cache", "paid calls", "paid tokens", "cost (paid)", "cached calls", "replayed calls",
               "recorded cost (cached + replayed)"]
    rows = []
    for name, acc in named:
        t = acc.tallies
        recorded = t["cached"].recorded_cost_usd + t["replayed"].recorded_cost_usd
        rows.append([name, acc.cache or "-", count(t["paid"].calls), count(t["paid"].tokens),
                     usd(t["paid"].cost_usd), count(t["cached"].calls), count(t["replayed"].calls),
                     usd(recorded) if t["cached"].calls or t["replayed"].calls else "-"])
    return headers, rows
