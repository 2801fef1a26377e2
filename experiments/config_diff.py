"""What differs between runs' resolved experiments, key by key.

Each run directory stores its experiment with every default filled in (``config.resolved.json``,
and the same in the store's meta); nested tables and lists of tables become dotted keys
(``run.workers``, ``models[0].spec``), so a difference is named by the key a user would edit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .store import Store

RESOLVED_NAME = "config.resolved.json"
MISSING = "(not set)"
SHOWN_ITEMS = 8


def resolved_config(run_dir: Path, store: Store) -> dict[str, Any]:
    """The run's resolved experiment: its ``config.resolved.json``, else the copy in its store."""
    path = run_dir / RESOLVED_NAME
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            pass
    return store.get_meta("config") or {}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts and lists of dicts as one level of dotted keys; other values kept whole."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out if out or not prefix else {prefix: {}}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def differing(configs: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """(key, each run's value) for every key whose value is not the same in all runs."""
    flat = [flatten(c) for c in configs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    out = []
    for key in keys:
        values = [f.get(key, MISSING) for f in flat]
        if any(json.dumps(v, sort_keys=True) != json.dumps(values[0], sort_keys=True) for v in values):
            out.append((key, values))
    return out


def show(value: Any) -> str:
    """A value for a table cell; a long list as its first items and how many more."""
    if value == MISSING:
        return MISSING
    if isinstance(value, list) and len(value) > SHOWN_ITEMS:
        head = ", ".join(json.dumps(v) for v in value[:SHOWN_ITEMS])
        return f"{len(value)} items: [{head}, ... {len(value) - SHOWN_ITEMS} more]"
    if isinstance(value, str):
        return value
    return json.dumps(value)
