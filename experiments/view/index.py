"""The viewer's index: the run (is it still going?), its summary and figures, and one row per episode."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..store import Store
from . import fmt
from .episode import version
from .verdict import outcome

PLOT_NAME = re.compile(r"[A-Za-z0-9_.-]+\.png")
LIFECYCLE = ("started", "resumed", "finished", "stopped", "aborted")
PLOT_TITLES = {
    "turns.png": "Correct rate and best speedup by turn",
    "turns_context.png": "Correct rate by turn, per agent and context level",
    "differences.png": "Differences between agents, context levels and models",
    "context.png": "Hardware-context ablation",
    "category_agent.png": "Correct rate per category and agent",
    "speedups.png": "Best speedups over correct episodes",
}


def run_state(events: list[dict[str, Any]]) -> tuple[str, bool]:
    """What the run is doing, in words, and whether it is still going (so the page keeps refreshing).

    A run whose last start names a process that no longer exists was killed: it is not live.
    """
    last = next((e for e in reversed(events) if e.get("kind") in LIFECYCLE), None)
    if last is None:
        return "not started", False
    detail = last.get("detail") if isinstance(last.get("detail"), dict) else {}
    kind = last["kind"]
    if kind == "finished":
        return "finished", False
    if kind == "stopped":
        return f"stopped: {detail.get('reason') or fmt.DASH}; resume it with warpgym run --resume", False
    if kind == "aborted":
        return "aborted (interrupted twice); resume it with warpgym run --resume", False
    pid = detail.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        return "ended without finishing (its process is gone); resume it with warpgym run --resume", False
    stopping = [e for e in events if e.get("kind") == "stopping" and e.get("time", 0) >= last.get("time", 0)]
    if stopping:
        return f"stopping: {fmt.general(stopping[-1].get('detail'))}", True
    return "running", True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def index_doc(store: Store, run_dir: Path, *, base: str, refresh_s: float) -> dict[str, Any]:
    """``base`` is where the run directory's files (plots/, report.html) are, seen from the page."""
    from .. import metrics as metrics_mod

    config = store.get_meta("config") or {}
    events = store.events()
    state, live = run_state(events)
    m = metrics_mod.compute(store)
    episodes = store.episodes()
    return {
        "kind": "index",
        "name": fmt.general(config.get("name") or run_dir.name),
        "state": state,
        "live": live,
        "refresh_s": refresh_s,
        "generated": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "generated_at": time.time(),
        "summary": [_run_table(store, run_dir, config, state, m), *_result_tables(m)],
        "plots": _plots(run_dir, base),
        "report": f"{base}report.html" if (run_dir / "report.html").is_file() else None,
        "episodes": _episode_rows(store, episodes),
    }


def _run_table(
    store: Store, run_dir: Path, config: dict[str, Any], state: str, m: dict[str, Any]
) -> dict[str, Any]:
    created = fmt.number(store.get_meta("created"))
    versions = store.get_meta("versions") or {}
    grid = m.get("grid") or {}
    models = [mm.get("name") or mm.get("spec") for mm in config.get("models") or [] if isinstance(mm, dict)]
    statuses = grid.get("statuses") or {}
    return fmt.pairs(
        "Run",
        [
            ("state", state),
            ("description", fmt.general(config.get("description"))),
            ("run directory", str(run_dir)),
            ("started", datetime.fromtimestamp(created).strftime("%Y-%m-%d %H:%M") if created else fmt.DASH),
            ("episodes", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or fmt.DASH),
            ("tasks", fmt.count(len(config.get("resolved_tasks") or []))),
            ("agents", ", ".join(map(str, config.get("agents") or [])) or fmt.DASH),
            ("models", ", ".join(map(str, models)) or fmt.DASH),
            ("hardware context", ", ".join(map(str, config.get("contexts") or [])) or fmt.DASH),
            ("samples", fmt.general(config.get("samples"))),
            ("turns", f"at most {fmt.general(config.get('max_turns'))}"),
            ("history", fmt.general(config.get("history"))),
            ("target", fmt.general(config.get("target"))),
            ("versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or fmt.DASH),
        ],
    )


def _result_tables(m: dict[str, Any]) -> list[dict[str, Any]]:
    pass_k = [str(k) for k in m.get("pass_k") or []]
    headers = ["episodes", "unfinished", "compiled", "correct", *[f"pass@{k}" for k in pass_k]]
    headers += ["speedup (geomean)", "heldout ok", "tokens", "cost"]

    def cells(s: dict[str, Any]) -> list[str]:
        checked = s.get("heldout_checked")
        return [
            fmt.count(s.get("episodes")),
            fmt.count(s.get("unfinished")),
            fmt.pct(s.get("compiled")),
            fmt.pct(s.get("correct")),
            *[fmt.pct((s.get("pass_at_k") or {}).get(k)) for k in pass_k],
            fmt.times(s.get("speedup_geomean")),
            f"{fmt.count(s.get('heldout_correct'))}/{fmt.count(checked)}" if checked else fmt.DASH,
            fmt.count(s.get("tokens")),
            fmt.usd(s.get("cost_usd")),
        ]

    configs = [c for c in m.get("configurations") or [] if isinstance(c, dict)]
    rows = [[fmt.general(c.get(k)) for k in ("agent", "model", "context")] + cells(c) for c in configs]
    if configs:
        rows.append(["all", "", ""] + cells(m.get("overall") or {}))
    tables = [
        fmt.table(
            "Results by agent, model and context",
            ["agent", "model", "context", *headers],
            rows,
            "Over the episodes that played a turn (unfinished ones with the state they reached); "
            "the same numbers as warpgym report, which adds their intervals.",
        )
    ]
    by_category = (m.get("by") or {}).get("category") or {}
    if by_category:
        tables.append(
            fmt.table("By category", ["category", *headers], [[k, *cells(s)] for k, s in by_category.items()])
        )
    return tables


def _plots(run_dir: Path, base: str) -> list[dict[str, str]]:
    folder = run_dir / "plots"
    if not folder.is_dir():
        return []
    return [
        {
            "src": f"{base}plots/{p.name}?v={p.stat().st_mtime_ns}",
            "title": PLOT_TITLES.get(p.name, p.stem.replace("_", " ")),
            "drawn": datetime.fromtimestamp(p.stat().st_mtime).strftime("%H:%M:%S"),
        }
        for p in sorted(folder.glob("*.png"), key=_plot_order)
        if p.is_file() and PLOT_NAME.fullmatch(p.name)
    ]


def _plot_order(p: Path) -> tuple[int, str]:
    names = list(PLOT_TITLES)
    return (names.index(p.name) if p.name in names else len(names), p.name)


def _episode_rows(store: Store, episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    turns: dict[int, list[dict[str, Any]]] = {}
    for t in store.turns():
        turns.setdefault(t["episode_id"], []).append(t)
    rows = []
    for e in episodes:
        played = turns.get(e["id"], [])
        rows.append(
            {
                "id": e["id"],
                "version": version(e),
                **{k: fmt.general(e.get(k)) for k in ("task", "category", "agent", "model", "context")},
                "sample": e.get("sample"),
                "status": fmt.general(e.get("status")),
                "solved": e.get("solved"),
                "best_turn": e.get("best_turn"),
                "heldout": fmt.flag(e.get("heldout_correct")),
                "error": e.get("error") or "",
                "turns": [_turn_cell(t) for t in played],
                "tokens": fmt.count(
                    sum(int(t.get("input_tokens") or 0) + int(t.get("output_tokens") or 0) for t in played)
                ),
                "cost": fmt.usd(sum(float(t.get("cost_usd") or 0.0) for t in played)),
            }
        )
    return rows


def _turn_cell(t: dict[str, Any]) -> dict[str, Any]:
    if t.get("correct"):
        result = {"correct": True}
    elif t.get("compiled"):
        result = {"compiled": True}
    elif t.get("stage") in (None, "extraction"):
        result = None
    else:
        result = {"stage": t.get("stage")}
    word = outcome(result)
    label = word if word != "failed" else f"failed at {t.get('stage')}"
    if word == "correct" and fmt.number(t.get("speedup")) is not None:
        label += f" {fmt.times(t.get('speedup'))}"
    return {"turn": t.get("turn"), "outcome": word, "label": label}
