"""Metrics of a run, per turn and final, computed from the store alone.

Definitions (the report repeats them):
- An episode's state *by turn t* is the best it had reached after its first t turns; an
  episode that ended earlier (solved, or one-shot) keeps its final state. So "correct rate by
  turn" is what a refinement loop has achieved with t turns of budget.
- An episode's **best** turn: among its correct turns the one with the highest speedup over the
  baseline (untimed ones rank below timed ones; ties go to the earliest); with no correct turn,
  its last stands for it. The agents pick the best attempt they show the model by the same rule.
- **compile / correct / arch-verified rate**: the share of episodes whose best so far compiled,
  was correct, or (only over episodes whose task requires instructions on the target) was correct
  with the required instructions proven.
- **pass@k**: the unbiased estimator 1 - C(n-c, k) / C(n, k) per (task, agent, model, context)
  over its n samples with c correct, averaged over those groups (groups with n < k are left out).
- **fast_p** (KernelBench): the share of *all* episodes that are correct *and* faster than p times
  the baseline; fast_0 is the correct rate. Without any timing (a CPU run) fast_p for p > 0 is
  not defined and shown as "-". **fast_p conservative** is the same share with each speedup's 95%
  interval's lower bound in place of its point estimate (the best turn is still chosen by the point
  estimate): a kernel counts only when it is faster than p beyond timing noise.
- **speedup**: geometric mean of best speedups over correct episodes that were timed.
- **fraction of roofline**: mean over correct timed episodes of the best candidate's mean
  fraction of the device's roofline across bench shapes.
- **heldout**: of the episodes whose best candidate is correct on dev shapes, how many are also
  correct on the heldout shapes (scored once, after the episode).
- **unfinished**: episodes that played turns but did not finish (stopped, interrupted, failed, or
  still running); every figure counts them with the state they had reached, and says how many.
- **tokens / cost per correct kernel**: everything the episodes spent (input + output tokens;
  USD) divided by the number of correct episodes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from warpgym.agents.best import best_index

from .store import Store

DIMENSIONS = ("category", "agent", "model", "context")


@dataclass
class TurnView:
    turn: int
    compiled: bool
    correct: bool
    arch_verified: bool | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    """The lower bound of the speedup's 95% interval (None for results stored before intervals)."""
    roofline: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    stage: str | None = None
    phase: str | None = None


@dataclass
class EpisodeView:
    id: int
    task: str
    category: str
    agent: str
    model: str
    context: str
    sample: int
    status: str = "finished"
    requires_features: bool = False
    turns: list[TurnView] = field(default_factory=list)
    heldout_correct: bool | None = None

    def group(self) -> tuple[str, str, str, str]:
        return (self.task, self.agent, self.model, self.context)

    def upto(self, t: int | None) -> list[TurnView]:
        return self.turns if t is None else self.turns[:t]

    def best(self, t: int | None = None) -> TurnView | None:
        """The best turn among the first ``t`` (all when None), by ``warpgym.agents.best``'s rule."""
        turns = self.upto(t)
        i = best_index([(x.correct, x.speedup) for x in turns], else_last=True)
        return None if i is None else turns[i]

    def compiled(self, t: int | None = None) -> bool:
        return any(x.compiled for x in self.upto(t))

    def correct(self, t: int | None = None) -> bool:
        return any(x.correct for x in self.upto(t))

    def arch_verified(self, t: int | None = None) -> bool:
        return any(x.correct and x.arch_verified for x in self.upto(t))

    def speedup(self, t: int | None = None) -> float | None:
        """The best correct speedup so far (None when not correct or not timed)."""
        best = self.best(t)
        return best.speedup if best is not None and best.correct else None

    def speedup_low(self, t: int | None = None) -> float | None:
        """The best turn's (by the point estimate) speedup lower bound."""
        best = self.best(t)
        return best.speedup_low if best is not None and best.correct else None

    def roofline(self, t: int | None = None) -> float | None:
        best = self.best(t)
        return best.roofline if best is not None and best.correct else None

    def tokens(self, t: int | None = None) -> int:
        return sum(x.input_tokens + x.output_tokens for x in self.upto(t))

    def cost(self, t: int | None = None) -> float:
        return sum(x.cost_usd for x in self.upto(t))

    def first_correct_turn(self) -> int | None:
        return next((x.turn for x in self.turns if x.correct), None)


# --------------------------------------------------------------------------- estimators
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: n samples, c correct (Chen et al. 2021's estimator)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    # 1 - C(n-c, k) / C(n, k) as a product, which never overflows
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def mean_pass_at_k(groups: Iterable[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over problems with at least k samples; None when none has."""
    values = [pass_at_k(n, c, k) for n, c in groups if n >= k]
    return sum(values) / len(values) if values else None


def fast_p(outcomes: Iterable[tuple[bool, float | None]], p: float) -> float | None:
    """KernelBench's fast_p over all episodes: share correct and with speedup > p.

    ``outcomes`` are (correct, speedup or None). For p > 0 the answer is None when no episode
    was timed at all (it cannot be told); untimed episodes otherwise count as not fast.
    """
    outcomes = list(outcomes)
    if not outcomes:
        return None
    if p > 0 and not any(s is not None for _, s in outcomes):
        return None
    hits = sum(1 for ok, s in outcomes if ok and (p <= 0 or (s is not None and s > p)))
    return hits / len(outcomes)


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _rate(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


# --------------------------------------------------------------------------- summaries
def summarize(
    episodes: list[EpisodeView],
    *,
    t: int | None = None,
    pass_k: Iterable[int] = (1,),
    fast_ps: Iterable[float] = (0.0, 1.0, 1.5, 2.0),
) -> dict[str, Any]:
    """Every metric over ``episodes`` in their state by turn ``t`` (final when None)."""
    eps = [e for e in episodes if e.turns]
    correct = [e.correct(t) for e in eps]
    speedups = [e.speedup(t) for e in eps]
    lows = [e.speedup_low(t) for e in eps]
    needs = [e for e in eps if e.requires_features]
    groups: dict[tuple[str, ...], list[bool]] = defaultdict(list)
    for e, ok in zip(eps, correct, strict=True):
        groups[e.group()].append(ok)
    n_correct = sum(correct)
    tokens = sum(e.tokens(t) for e in eps)
    cost = sum(e.cost(t) for e in eps)
    dev_correct = [e for e in eps if e.correct()] if t is None else []
    checked = [e for e in dev_correct if e.heldout_correct is not None]
    roofs = [r for e in eps if (r := e.roofline(t)) is not None]
    timed = [s for s in speedups if s is not None]
    return {
        "episodes": len(eps),
        "unfinished": sum(1 for e in eps if e.status != "finished"),
        "turns": sum(len(e.upto(t)) for e in eps),
        "compiled": _rate([e.compiled(t) for e in eps]),
        "correct": _rate(correct),
        "n_correct": n_correct,
        "arch_verified": _rate([e.arch_verified(t) for e in needs]),
        "arch_episodes": len(needs),
        "pass_at_k": {str(k): mean_pass_at_k(((len(v), sum(v)) for v in groups.values()), k) for k in pass_k},
        "fast_p": {_p_key(p): fast_p(zip(correct, speedups, strict=True), p) for p in fast_ps},
        "fast_p_conservative": {_p_key(p): fast_p(zip(correct, lows, strict=True), p) for p in fast_ps},
        "faster": sum(1 for s in timed if s > 1.0),
        "faster_conservative": sum(1 for s in lows if s is not None and s > 1.0),
        "timed": len(timed),
        "speedup_geomean": geomean(timed),
        "roofline_mean": sum(roofs) / len(roofs) if roofs else None,
        "heldout_checked": len(checked),
        "heldout_correct": sum(1 for e in checked if e.heldout_correct),
        "heldout_rate": _rate([bool(e.heldout_correct) for e in checked]),
        "input_tokens": sum(x.input_tokens for e in eps for x in e.upto(t)),
        "output_tokens": sum(x.output_tokens for e in eps for x in e.upto(t)),
        "reasoning_tokens": sum(x.reasoning_tokens for e in eps for x in e.upto(t)),
        "tokens": tokens,
        "cost_usd": cost,
        "tokens_per_correct": tokens / n_correct if n_correct else None,
        "cost_per_correct": cost / n_correct if n_correct else None,
        "mean_turns_to_correct": (
            sum(c for e in eps if (c := e.first_correct_turn())) / n_correct
            if n_correct and t is None
            else None
        ),
    }


def _p_key(p: float) -> str:
    return f"{p:g}"


def by(episodes: list[EpisodeView], key: Callable[[EpisodeView], Any]) -> dict[Any, list[EpisodeView]]:
    out: dict[Any, list[EpisodeView]] = {}
    for e in episodes:
        out.setdefault(key(e), []).append(e)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def per_turn(episodes: list[EpisodeView], max_turns: int, **kw: Any) -> list[dict[str, Any]]:
    """One summary per turn t = 1..max_turns (state by turn t), with what happened *at* turn t."""
    rows = []
    for t in range(1, max_turns + 1):
        s = summarize(episodes, t=t, **kw)
        at = [e.turns[t - 1] for e in episodes if len(e.turns) >= t]
        s.update(
            turn=t,
            reached=len(at),
            correct_at=_rate([x.correct for x in at]),
            compiled_at=_rate([x.compiled for x in at]),
        )
        rows.append(s)
    return rows


# --------------------------------------------------------------------------- from a store
def load_episodes(store: Store) -> list[EpisodeView]:
    episodes = {}
    for row in store.episodes():
        episodes[row["id"]] = EpisodeView(
            id=row["id"],
            task=row["task"],
            category=row["category"],
            agent=row["agent"],
            model=row["model"],
            context=row["context"],
            sample=row["sample"],
            status=row["status"],
            requires_features=bool(row["requires_features"]),
            heldout_correct=None if row["heldout_correct"] is None else bool(row["heldout_correct"]),
        )
    for r in store.turns():
        ep = episodes.get(r["episode_id"])
        if ep is None:
            continue
        ep.turns.append(
            TurnView(
                turn=r["turn"],
                compiled=bool(r["compiled"]),
                correct=bool(r["correct"]),
                arch_verified=None if r["arch_verified"] is None else bool(r["arch_verified"]),
                speedup=r["speedup"],
                speedup_low=r.get("speedup_low"),
                roofline=r["roofline"],
                input_tokens=r["input_tokens"] or 0,
                output_tokens=r["output_tokens"] or 0,
                reasoning_tokens=r["reasoning_tokens"] or 0,
                cost_usd=r["cost_usd"] or 0.0,
                stage=r["stage"],
                phase=r["phase"],
            )
        )
    return list(episodes.values())


def compute(store: Store, tasks: set[str] | None = None) -> dict[str, Any]:
    """All the numbers a report shows, as one JSON-able dict (over ``tasks`` only, when given)."""
    config = store.get_meta("config") or {}
    metrics_cfg = config.get("metrics") or {}
    samples = int(config.get("samples") or 1)
    pass_k = [k for k in metrics_cfg.get("pass_k", [1]) if k <= samples] or [1]
    kw = {"pass_k": pass_k, "fast_ps": metrics_cfg.get("fast_p", [0.0, 1.0, 1.5, 2.0])}
    episodes = [e for e in load_episodes(store) if tasks is None or e.task in tasks]
    played = [e for e in episodes if e.turns]
    max_turns = int(config.get("max_turns") or max((len(e.turns) for e in episodes), default=1))
    statuses: dict[str, int] = defaultdict(int)
    for e in episodes:
        statuses[e.status] += 1

    def config_key(e: EpisodeView) -> tuple[str, str, str]:
        return (e.agent, e.model, e.context)

    out: dict[str, Any] = {
        "name": config.get("name"),
        "baseline": metrics_cfg.get("baseline", "eager"),
        "pass_k": pass_k,
        "fast_p": [_p_key(p) for p in kw["fast_ps"]],
        "grid": {
            "episodes": len(episodes),
            "played": len(played),
            "statuses": dict(statuses),
            "max_turns": max_turns,
            "samples": samples,
        },
        "overall": summarize(played, **kw),
        "per_turn": per_turn(played, max_turns, **kw),
        "configurations": [
            {
                "agent": a,
                "model": m,
                "context": c,
                **summarize(eps, **kw),
                "per_turn": per_turn(eps, max_turns, **kw),
            }
            for (a, m, c), eps in by(played, config_key).items()
        ],
        "by": {
            dim: {
                str(k): summarize(eps, **kw) for k, eps in by(played, lambda e, d=dim: getattr(e, d)).items()
            }
            for dim in DIMENSIONS
        },
        "per_turn_by_agent": {
            a: per_turn(eps, max_turns, **kw) for a, eps in by(played, lambda e: e.agent).items()
        },
        "category_agent": {
            cat: {a: summarize(eps2, **kw)["correct"] for a, eps2 in by(eps, lambda e: e.agent).items()}
            for cat, eps in by(played, lambda e: e.category).items()
        },
        "speedups": [
            {
                "task": e.task,
                "agent": e.agent,
                "model": e.model,
                "context": e.context,
                "sample": e.sample,
                "speedup": s,
                "speedup_low": e.speedup_low(),
            }
            for e in played
            if (s := e.speedup()) is not None
        ],
    }
    return out
