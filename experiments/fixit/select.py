"""Selection: near-duplicates out, caps per task and kind, balance, and the split by task.

Near-duplicates are judged on normalised sources (comments and layout gone, identifiers kept) as
the Jaccard overlap of token shingles: cheap, order-aware enough for code, and it does not need
the source to parse (a compile failure often does not). Two pairs of one task and error kind are
near-duplicates when both their wrong kernels and their fixes overlap at least ``threshold``.

Balance comes from the order pairs are taken in: round-robin over kinds (rarest first), and within
a kind round-robin over tasks, so when a cap binds, what is kept is spread over kinds and tasks
rather than filled from the most common cell. Every dropped pair gets a reason.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .pairs import Pair

_COMMENT = re.compile(r"#[^\n]*")
_DOCSTRING = re.compile(r'("""|\'\'\')(?:.|\n)*?\1')
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\S")


def tokens(source: str) -> list[str]:
    """The source as tokens, without comments, docstrings or layout."""
    text = _DOCSTRING.sub(" ", source or "")
    text = _COMMENT.sub(" ", text)
    return _TOKEN.findall(text)


def shingles(source: str, k: int = 4) -> frozenset[tuple[str, ...]]:
    toks = tokens(source)
    if len(toks) < k:
        return frozenset({tuple(toks)}) if toks else frozenset()
    return frozenset(tuple(toks[i : i + k]) for i in range(len(toks) - k + 1))


def similarity(a: str, b: str, k: int = 4) -> float:
    """Jaccard overlap of the two sources' token shingles: 1.0 for the same code up to layout."""
    sa, sb = shingles(a, k), shingles(b, k)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


@dataclass
class Drop:
    pair: Pair
    reason: str
    """A short code: ``duplicate``, ``near-duplicate``, ``cap-task-kind``, ``cap-task``, ``cap-kind``,
    ``cap-kind-ratio``, ``cap-total``, ``no-change``."""
    detail: str


@dataclass
class Caps:
    per_task_kind: int | None = 4
    per_task: int | None = None
    per_kind: int | None = None
    total: int | None = None
    kind_ratio: float | None = None
    """No kind keeps more than this many times the pairs of the rarest kind (after de-duplication)."""


def priority(pair: Pair) -> tuple[int, int, str, int, int]:
    """Which of two comparable pairs to prefer: in-episode before cross-model, the fix that came soonest
    (it answered this failure's feedback), then a stable order."""
    return (
        0 if pair.source == "episode" else 1,
        pair.gap,
        pair.wrong.run,
        pair.wrong.episode_id,
        pair.wrong.turn,
    )


def deduplicate(pairs: Iterable[Pair], threshold: float = 0.9) -> tuple[list[Pair], list[Drop]]:
    """Keep the preferred pair of every group of (near-)duplicates of one task and error kind (two
    failures of different kinds fixed by the same kernel teach different lessons, so both stay)."""
    kept: list[Pair] = []
    drops: list[Drop] = []
    by_cell: dict[tuple[str, str], list[tuple[Pair, frozenset, frozenset]]] = defaultdict(list)
    for pair in sorted(pairs, key=priority):
        wrong, fixed = pair.wrong.candidate or "", pair.fixed.candidate or ""
        if tokens(wrong) == tokens(fixed):
            drops.append(
                Drop(pair, "no-change", "the fix differs from the wrong kernel only in comments or layout")
            )
            continue
        sw, sf = shingles(wrong), shingles(fixed)
        twin = None
        for other, ow, of in by_cell[(pair.task, pair.kind)]:
            score = min(_jaccard(sw, ow), _jaccard(sf, of))
            if score >= threshold:
                twin = (other, score)
                break
        if twin is not None:
            other, score = twin
            reason = "duplicate" if score >= 1.0 else "near-duplicate"
            drops.append(
                Drop(
                    pair,
                    reason,
                    f"{reason} of {other.id} (similarity {score:.2f} of both the wrong kernel and the fix)",
                )
            )
            continue
        by_cell[(pair.task, pair.kind)].append((pair, sw, sf))
        kept.append(pair)
    return kept, drops


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def balance(pairs: list[Pair], caps: Caps) -> tuple[list[Pair], list[Drop]]:
    """Take pairs round-robin over kinds (rarest first) and tasks within a kind, within the caps."""
    cells: dict[str, dict[str, deque[Pair]]] = defaultdict(lambda: defaultdict(deque))
    for pair in sorted(pairs, key=priority):
        cells[pair.kind][pair.task].append(pair)
    kind_count = Counter(p.kind for p in pairs)
    kinds = sorted(cells, key=lambda k: (kind_count[k], k))
    ratio_cap = None
    if caps.kind_ratio is not None and kind_count:
        ratio_cap = max(1, math.floor(caps.kind_ratio * min(kind_count.values())))
    rotation = {k: deque(sorted(cells[k])) for k in kinds}
    kept: list[Pair] = []
    drops: list[Drop] = []
    n_task_kind: Counter[tuple[str, str]] = Counter()
    n_task: Counter[str] = Counter()
    n_kind: Counter[str] = Counter()
    while any(rotation.values()):
        for kind in kinds:
            tasks = rotation[kind]
            if not tasks:
                continue
            task = tasks.popleft()
            pair = cells[kind][task].popleft()
            if cells[kind][task]:
                tasks.append(task)
            why = _over_cap(pair, caps, ratio_cap, n_task_kind, n_task, n_kind, len(kept))
            if why:
                drops.append(Drop(pair, *why))
                continue
            kept.append(pair)
            n_task_kind[(pair.task, pair.kind)] += 1
            n_task[pair.task] += 1
            n_kind[pair.kind] += 1
    return kept, drops


def _over_cap(
    pair: Pair,
    caps: Caps,
    ratio_cap: int | None,
    n_task_kind: Counter,
    n_task: Counter,
    n_kind: Counter,
    total: int,
) -> tuple[str, str] | None:
    if caps.per_task_kind is not None and n_task_kind[(pair.task, pair.kind)] >= caps.per_task_kind:
        return "cap-task-kind", (
            f"{caps.per_task_kind} {pair.kind} pair(s) of {pair.task} already kept (--per-task-kind)"
        )
    if caps.per_task is not None and n_task[pair.task] >= caps.per_task:
        return "cap-task", f"{caps.per_task} pair(s) of {pair.task} already kept (--per-task)"
    if caps.per_kind is not None and n_kind[pair.kind] >= caps.per_kind:
        return "cap-kind", f"{caps.per_kind} {pair.kind} pair(s) already kept (--per-kind)"
    if ratio_cap is not None and n_kind[pair.kind] >= ratio_cap:
        return "cap-kind-ratio", (
            f"{ratio_cap} {pair.kind} pair(s) already kept: no kind may exceed "
            f"{caps.kind_ratio:g} x the rarest kind (--kind-ratio)"
        )
    if caps.total is not None and total >= caps.total:
        return "cap-total", f"{caps.total} pairs already kept (--max-pairs)"
    return None


# ------------------------------------------------------------------------------------------ split
def split_groups(
    pairs: list[Pair],
    *,
    val_fraction: float = 0.2,
    seed: int = 0,
    by: str = "task",
    val_groups: Iterable[str] | None = None,
) -> dict[str, str]:
    """Each group (task, or category with ``by="category"``) -> ``train`` or ``validation``; no group in
    both. Groups go to validation in a seeded order until it holds ``val_fraction`` of the pairs; train
    always keeps at least one group."""
    key = group_key(by)
    counts = Counter(key(p) for p in pairs)
    groups = sorted(counts)
    if val_groups is not None:
        wanted = set(val_groups)
        return {g: "validation" if g in wanted else "train" for g in groups}
    out = {g: "train" for g in groups}
    if len(groups) < 2 or val_fraction <= 0:
        return out
    order = sorted(groups, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest())
    target = val_fraction * sum(counts.values())
    taken = 0
    for g in order:
        if sum(1 for v in out.values() if v == "train") == 1:
            break  # train keeps at least one group
        if abs(taken + counts[g] - target) < abs(taken - target):
            out[g] = "validation"  # only where it brings the validation share closer to the target
            taken += counts[g]
    if taken == 0:  # every group alone overshoots: the smallest one still makes a validation set
        smallest = min(order, key=lambda g: (counts[g], order.index(g)))
        out[smallest] = "validation"
    return out


def group_key(by: str) -> Callable[[Pair], str]:
    if by == "task":
        return lambda p: p.task
    if by == "category":
        return lambda p: p.task.split("/", 1)[0]
    raise ValueError(f"unknown split key {by!r}; use task or category")


__all__ = [
    "Caps",
    "Drop",
    "balance",
    "deduplicate",
    "group_key",
    "priority",
    "shingles",
    "similarity",
    "split_groups",
    "tokens",
]
