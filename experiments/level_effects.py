"""What each hardware-context level changed: per level, and against the base level, with intervals.

Per level: its size (the stored text's estimated tokens), tokens per episode (the providers' counts),
correct rate, arch-verified rate (over the episodes whose task requires instruction families on the
target), fast_p, and for each instruction family the share of episodes whose best candidate's SASS
(its PTX where no SASS was counted) holds it, over the episodes with a compiled candidate. Each is a
two-stage bootstrap interval (``stats``), and each level is compared with the base level over the
tasks both played, paired by task; a difference is *within noise* when its interval covers zero.
The base is the ablation's base when the experiment file has one, else the first context level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import stats
from .metrics import EpisodeView

NAN = float("nan")


def families_of(result: dict[str, Any] | None) -> set[str] | None:
    """The instruction families in a verdict's compiled code (SASS counts, else PTX); None when nothing
    compiled."""
    if not result or not result.get("compiled"):
        return None
    found = set()
    for family, counts in (result.get("instructions") or {}).items():
        counts = counts or {}
        n = counts.get("sass") if counts.get("sass") is not None else counts.get("ptx")
        if n:
            found.add(family)
    return found


def best_families(records: Iterable[tuple[int, dict[str, Any]]],
                  best_turns: dict[int, int | None]) -> dict[int, set[str]]:
    """Episode id -> the families of its best turn's candidate, from (episode id, turn record) pairs
    (episodes whose best did not compile are left out)."""
    out: dict[int, set[str]] = {}
    for episode_id, record in records:
        if best_turns.get(episode_id) != record.get("turn"):
            continue
        families = families_of(record.get("result"))
        if families is not None:
            out[episode_id] = families
    return out


def _channels(e: EpisodeView, families: dict[int, set[str]], names: Sequence[str],
              fast_ps: Sequence[float]) -> list[float]:
    speedup = e.speedup()
    fast = [float(e.correct() and (p == 0 or (speedup is not None and speedup > p))) for p in fast_ps]
    found = families.get(e.id)
    return [float(e.correct()), float(e.arch_verified()) if e.requires_features else NAN, float(e.tokens()),
            *fast, *((float(f in found) if found is not None else NAN) for f in names)]


def _arm(episodes: Sequence[EpisodeView], tasks: Sequence[str], channel: Any, width: int) -> stats.Arm:
    return stats.Arm.build(((e.task, (e.agent, e.model), channel(e)) for e in episodes), tasks, width)


def compute(episodes: Sequence[EpisodeView], families: dict[int, set[str]], levels: dict[str, Any],
            contexts: Sequence[str], base: str | None, fast_ps: Sequence[float], timed: bool,
            resamples: int = stats.RESAMPLES, seed: int = stats.SEED) -> dict[str, Any]:
    """Rows per level (in ``contexts`` order) and each level against ``base``."""
    played = [e for e in episodes if e.turns]
    names = sorted({f for fs in families.values() for f in fs})
    fps = list(fast_ps) if timed else []  # untimed, fast_0 is the correct rate and the rest unknown
    metric_names = ["correct", "arch_verified", "tokens_per_episode", *(f"fast_{p:g}" for p in fps),
                    *(f"sass:{f}" for f in names)]
    width = len(metric_names)

    def channel(e: EpisodeView) -> list[float]:
        return _channels(e, families, names, fps)

    present = [c for c in contexts if any(e.context == c for e in played)]
    base = base if base in present else (present[0] if present else None)
    kw = {"resamples": resamples, "seed": seed}
    rows = []
    for level in present:
        eps = [e for e in played if e.context == level]
        tasks = sorted({e.task for e in eps})
        ivs = stats.intervals(_arm(eps, tasks, channel, width), stats.Mean(), **kw)
        row: dict[str, Any] = {"level": level, "episodes": len(eps), "tasks": len(tasks),
                               "context_tokens": _context_tokens(levels.get(level), eps),
                               "base": levels.get(level, {}).get("base"),
                               "metrics": {n: iv.as_dict() for n, iv in zip(metric_names, ivs, strict=True)}}
        if base is not None and level != base:
            row["versus_base"] = _versus(eps, [e for e in played if e.context == base], channel, width,
                                         metric_names, kw)
        rows.append(row)
    return {"base": base, "metrics": metric_names, "families": names, "levels": rows}


def _context_tokens(stored: dict[str, Any] | None, eps: Sequence[EpisodeView]) -> float | None:
    """The level's estimated size in tokens, averaged over the languages of its episodes' tasks (a
    level's text differs between Triton and CUDA tasks only for the built-in ``full``)."""
    if not stored:
        return None
    sizes = [v["tokens_estimate"] for v in (stored.get("languages") or {}).values()]
    return float(np.mean(sizes)) if sizes else None


def _versus(level: Sequence[EpisodeView], base: Sequence[EpisodeView], channel: Any, width: int,
            names: Sequence[str], kw: dict[str, Any]) -> dict[str, Any]:
    common = sorted({e.task for e in level} & {e.task for e in base})
    if not common:
        return {"tasks": 0, "metrics": {}}
    a = _arm([e for e in level if e.task in set(common)], common, channel, width)
    b = _arm([e for e in base if e.task in set(common)], common, channel, width)
    diffs = stats.differences(a, b, stats.Mean(), **kw)
    return {"tasks": len(common),
            "metrics": {n: {"difference": d.as_dict(), "within_noise": d.covers(0.0)}
                        for n, d in zip(names, diffs, strict=True)}}
