"""``fixit build``: runs -> pairs -> selection -> explanations -> chat JSONL, a report and a card.

The steps live in their own modules: ``pairs`` reads the runs and pairs failures with fixes,
``select`` de-duplicates, caps, balances and splits, ``explain`` writes the explanations,
``messages`` the chat messages of an example, ``report`` and ``card`` what was kept and why, and
``layouts`` the output directory. This module runs them in order and holds the options.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import layouts
from .explain import explain
from .kinds import KINDS
from .messages import example_messages, prompt_messages, task_info
from .pairs import Attempt, Pair, find_pairs, load_attempts
from .report import summarize
from .select import Caps, Drop, balance, deduplicate, group_key, similarity, split_groups


class FixitError(Exception):
    """A build or training that cannot proceed (no runs, nothing to train on, a missing extra)."""


@dataclass
class BuildOptions:
    adjacent_only: bool = False
    cross_model: bool = False
    slow_below: float = 1.0
    """A correct kernel below this speedup over the run's baseline is a ``slow`` failure (GPU runs)."""
    near_duplicate: float = 0.9
    caps: Caps = field(default_factory=Caps)
    val_fraction: float = 0.2
    split_by: str = "task"
    val_groups: list[str] | None = None
    seed: int = 0
    explainer: str | None = None
    explainer_params: dict[str, Any] = field(default_factory=dict)
    join_user: bool = False
    """Fold the attempt into the task message (for chat templates that insist on alternating roles)."""


@dataclass
class Example:
    pair: Pair
    split: str
    messages: list[dict[str, str]]
    explanation: str
    explanation_source: str
    explanation_note: str = ""


@dataclass
class BuildResult:
    out: Path
    examples: list[Example]
    drops: list[Drop]
    report: dict[str, Any]


def resolve_runs(runs: list[str | Path], runs_root: Path | None = None) -> list[Path]:
    from warpgym.experiments.rundir import RunError, find_run

    out: list[Path] = []
    for run in runs:
        try:
            path = find_run(run, runs_root)
        except RunError as exc:
            raise FixitError(str(exc)) from None
        if path.resolve() not in [p.resolve() for p in out]:
            out.append(path)
    if not out:
        raise FixitError("no runs given")
    names = Counter(p.name for p in out)
    if any(n > 1 for n in names.values()):
        raise FixitError(
            "two runs share a directory name: " + ", ".join(k for k, n in names.items() if n > 1)
        )
    return out


def build(
    runs: list[str | Path],
    out: str | Path,
    options: BuildOptions | None = None,
    *,
    runs_root: Path | None = None,
    provider: Any | None = None,
    log: Any = None,
) -> BuildResult:
    """Build the data set from ``runs`` into ``out``. ``provider`` overrides ``options.explainer``
    (tests pass a replay provider)."""
    options = options or BuildOptions()
    say = log or (lambda _msg: None)
    started = time.time()
    run_dirs = resolve_runs(runs, runs_root)
    attempts: list[Attempt] = []
    for run_dir in run_dirs:
        attempts += load_attempts(run_dir, slow_below=options.slow_below)
    found = find_pairs(
        attempts,
        adjacent_only=options.adjacent_only,
        cross_model=options.cross_model,
        slow_below=options.slow_below,
        similarity=similarity,
    )
    say(f"{len(attempts)} turns in {len(run_dirs)} run(s); {len(found.pairs)} pair(s) found")
    unique, dup_drops = deduplicate(found.pairs, options.near_duplicate)
    kept, cap_drops = balance(unique, options.caps)
    drops = dup_drops + cap_drops
    groups = split_groups(
        kept,
        val_fraction=options.val_fraction,
        seed=options.seed,
        by=options.split_by,
        val_groups=options.val_groups,
    )
    key = group_key(options.split_by)
    notes = []
    missing = sorted(set(options.val_groups or []) - set(groups))
    if missing:
        notes.append(f"--val-tasks named {', '.join(missing)}, which no kept pair has")
    if groups and "validation" not in groups.values():
        notes.append("no validation split (one task only, or --val-fraction 0)")

    if provider is None and options.explainer:
        from warpgym.agents import make_provider

        provider = make_provider(options.explainer, **options.explainer_params)
    examples = []
    for n, pair in enumerate(sorted(kept, key=lambda p: (p.task, KINDS.index(p.kind), p.id)), 1):
        statement = task_info(pair.task)[2] or (prompt_messages(pair.wrong)[1]["content"])
        if provider is not None:
            say(f"explaining {n}/{len(kept)}: {pair.task} ({pair.kind})")
        ex = explain(pair, statement, provider, options.explainer or "")
        examples.append(
            Example(
                pair,
                groups[key(pair)],
                example_messages(pair, ex.text, join_user=options.join_user),
                ex.text,
                ex.source,
                ex.note,
            )
        )

    out = Path(out)
    report = summarize(run_dirs, attempts, found, drops, examples, options, time.time() - started)
    report["notes"] = notes
    layouts.write(out, examples, drops, report)
    return BuildResult(out, examples, drops, report)


__all__ = [
    "BuildOptions",
    "BuildResult",
    "Example",
    "FixitError",
    "build",
    "resolve_runs",
]
