"""The raw steps of a run as JSON Lines or Parquet, for people who analyse runs their own way.

One row per turn: the episode's keys (task, agent, model, context, sample), the metric
columns, and the whole turn record (messages, response, candidate, feedback, verdict). With
``what="episodes"``, one row per episode with its best turn and heldout verdict. With
``what="replay"``, one model's answers in the replay provider's format, so that the run can be
played again offline (``replay:PATH`` in an experiment file) with the same answers; a line's
``cost_usd`` is what the answer cost when it was paid (``accounts.py``). With ``what="calls"``, one row
per model call: its origin (paid, cached, replayed), tokens, what it paid and its recorded cost.
Every step row carries its answer's ``origin``, ``cost_usd`` (paid) and ``recorded_cost_usd`` too.
Parquet needs pyarrow (``pip install pyarrow``); nested fields are stored as JSON text there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .store import Store

EPISODE_FIELDS = ("task", "category", "agent", "model", "context", "sample", "status")


class ExportError(Exception):
    """An export that cannot be written (unknown format, pyarrow missing)."""


def steps(store: Store) -> Iterator[dict[str, Any]]:
    episodes = {e["id"]: e for e in store.episodes()}
    columns = {(t["episode_id"], t["turn"]): t for t in store.turns()}
    for episode_id, record in store.all_turn_records():
        e = episodes[episode_id]
        cols = columns[(episode_id, record["turn"])]
        row: dict[str, Any] = {"episode_id": episode_id, **{k: e[k] for k in EPISODE_FIELDS}}
        row.update({k: v for k, v in cols.items() if k not in ("episode_id",)})
        row.update({k: v for k, v in record.items() if k not in row})
        yield row


def episodes(store: Store) -> Iterator[dict[str, Any]]:
    for e in store.episodes():
        yield {"episode_id": e["id"], **{k: v for k, v in e.items() if k != "id"}}


REPLAY_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "latency_s", "model")
CALL_FIELDS = (
    "turn", "origin", "input_tokens", "output_tokens", "cost_usd", "recorded_cost_usd", "created_at",
)


def calls(store: Store) -> Iterator[dict[str, Any]]:
    """Every model call the run made, each once, with where its answer came from and what it cost."""
    eps = {e["id"]: e for e in store.episodes()}
    for c in store.calls():
        e = eps.get(c["episode_id"], {})
        keys = {k: e.get(k) for k in EPISODE_FIELDS if k != "status"}
        fields = {k: c.get(k) for k in CALL_FIELDS}
        yield {"call_id": c["id"], "episode_id": c["episode_id"], **keys, **fields}


def _recorded_cost(record: dict[str, Any]) -> float | None:
    """What a turn's answer cost when it was paid: its recorded cost, else (an older record) its cost."""
    recorded = record.get("recorded_cost_usd")
    return recorded if recorded is not None else record.get("cost_usd")


def replay(store: Store, model: str | None) -> Iterator[dict[str, Any]]:
    """Every stored answer of one model, keyed as the replay provider looks answers up."""
    eps = {e["id"]: e for e in store.episodes()}
    models = sorted({e["model"] for e in eps.values()})
    if model is None and len(models) > 1:
        raise ExportError(f"this run has several models ({', '.join(models)}); choose one with --model")
    model = model or (models[0] if models else None)
    if model not in models:
        raise ExportError(f"no model {model!r} in this run; it has {', '.join(models)}")
    for episode_id, record in store.all_turn_records():
        e = eps[episode_id]
        if e["model"] != model:
            continue
        yield {
            "task": e["task"],
            "sample": e["sample"],
            "turn": record["turn"],
            "loop": e["agent"],
            "context": e["context"],
            "text": record.get("response") or "",
            **{k: record.get(k) for k in REPLAY_FIELDS if record.get(k) is not None},
            **({"cost_usd": _recorded_cost(record)} if _recorded_cost(record) is not None else {}),
            "provenance": f"exported from run {store.get_meta('config', {}).get('name')}",
        }


def export(
    run_dir: Path,
    store_path: Path,
    fmt: str,
    out: Path | None = None,
    what: str = "steps",
    model: str | None = None,
) -> Path:
    if fmt not in ("jsonl", "parquet"):
        raise ExportError(f"unknown format {fmt!r}; use jsonl or parquet")
    if what not in ("steps", "episodes", "replay", "calls"):
        raise ExportError(f"unknown rows {what!r}; use steps, episodes, calls or replay")
    if what == "replay" and fmt != "jsonl":
        raise ExportError("a replay file is JSON Lines: use --format jsonl")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ExportError(
                "parquet export needs pyarrow, which is not installed: `pip install pyarrow`, "
                "or use --format jsonl"
            ) from None
    out = out or run_dir / "export" / f"{what}.{fmt}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with Store(store_path, readonly=True) as store:
        rows = list(
            {"steps": steps, "episodes": episodes, "calls": calls}[what](store)
            if what != "replay"
            else replay(store, model)
        )
    if fmt == "jsonl":
        with open(out, "w") as f:
            for row in rows:
                f.write(json.dumps(row, default=str) + "\n")
        return out
    import pyarrow as pa
    import pyarrow.parquet as pq

    flat = [
        {k: json.dumps(v, default=str) if isinstance(v, dict | list) else v for k, v in row.items()}
        for row in rows
    ]
    names = list(dict.fromkeys(k for row in flat for k in row))
    table = pa.Table.from_pylist([{k: row.get(k) for k in names} for row in flat])
    pq.write_table(table, out)
    return out
