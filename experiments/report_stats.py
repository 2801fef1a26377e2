"""The report's and the comparison's tables of intervals and differences, from ``comparisons``' dicts."""

from __future__ import annotations

from typing import Any

from .report_doc import Doc, count, pct, times

DIFFERENT = "different"
WITHIN_NOISE = "within noise"


def method_note(method: dict[str, Any]) -> str:
    return (
        f"Intervals are {100 * method['level']:.0f}% bootstrap intervals over tasks and samples "
        f"(tasks drawn with replacement, then each configuration's samples within each drawn task; "
        f"{method['resamples']} resamples, seed {method['seed']}, percentile intervals). A difference is "
        f"*{WITHIN_NOISE}* when its interval covers 0 (for speedups, a ratio of 1), *{DIFFERENT}* otherwise. "
        "Comparisons are paired by task, over the tasks both sides played."
    )


def _is_speedup(name: str) -> bool:
    return name == "speedup"


def value(name: str, iv: dict[str, Any] | None) -> str:
    """A figure with its interval: ``62.5% [48.1, 75.0]`` or ``1.23x [1.05, 1.44]``."""
    if not iv or iv.get("estimate") is None:
        return "-"
    if _is_speedup(name):
        fmt = times(iv["estimate"])
        bounds = (iv["low"], iv["high"])
        return fmt if None in bounds else f"{fmt} [{bounds[0]:.2f}, {bounds[1]:.2f}]"
    fmt = pct(iv["estimate"])
    if iv["low"] is None or iv["high"] is None:
        return fmt
    return f"{fmt} [{100 * iv['low']:.1f}, {100 * iv['high']:.1f}]"


def bounds_note(iv: dict[str, Any] | None) -> str:
    """`` (95% interval 48.1% to 75.0%)`` after a rate, or nothing when it cannot be told."""
    if not iv or iv.get("low") is None:
        return ""
    return f" (95% interval {pct(iv['low'])} to {pct(iv['high'])})"


def difference(name: str, iv: dict[str, Any] | None) -> str:
    """``+12.5 pts [+3.1, +22.0]`` for rates, ``ratio 1.20x [0.95, 1.50]`` for speedups."""
    if not iv or iv.get("estimate") is None:
        return "-"
    if _is_speedup(name):
        text = f"ratio {iv['estimate']:.2f}x"
        return text if iv["low"] is None else f"{text} [{iv['low']:.2f}, {iv['high']:.2f}]"
    text = f"{100 * iv['estimate']:+.1f} pts"
    return text if iv["low"] is None else f"{text} [{100 * iv['low']:+.1f}, {100 * iv['high']:+.1f}]"


def verdict(within_noise: bool | None) -> str:
    return "-" if within_noise is None else (WITHIN_NOISE if within_noise else DIFFERENT)


def intervals_table(doc: Doc, st: dict[str, Any]) -> None:
    """Each configuration's figures with their intervals, and the whole run's."""
    names = st["metrics"]
    partial = st["overall"]["unfinished"] > 0
    headers = ["agent", "model", "context", "tasks", "episodes"] + (["unfinished"] if partial else []) + names
    rows = []
    for c in [*st["configurations"], {"agent": "all", "model": "", "context": "", **st["overall"]}]:
        rows.append(
            [c["agent"], c["model"], c["context"], count(c["tasks"]), count(c["episodes"])]
            + ([count(c["unfinished"])] if partial else [])
            + [value(n, c.get(n)) for n in names]
        )
    doc.table(headers, rows, align="lll" + "r" * (len(headers) - 3))


def versus_rows(first: str, second: str, v: dict[str, Any], names: list[str]) -> list[list[str]]:
    """One row per figure of one comparison: both sides, the difference, the verdict."""
    rows = []
    for name in names:
        m = v["metrics"].get(name)
        if m is None:
            continue
        rows.append(
            [
                first,
                second,
                count(v["tasks"]),
                name,
                value(name, m["first"]),
                value(name, m["second"]),
                difference(name, m["difference"]),
                verdict(m["within_noise"]),
            ]
        )
    return rows


VERSUS_HEADERS = ["A", "B", "tasks", "figure", "value of A", "value of B", "A - B (95% CI)", "verdict"]


def differences_tables(doc: Doc, st: dict[str, Any]) -> None:
    """For each dimension with two levels or more: every pair of levels, figure by figure."""
    for dim, pairs in st["differences"].items():
        doc.h(f"{dim} against {dim}", 3)
        rows = [r for p in pairs for r in versus_rows(p["first"], p["second"], p, st["metrics"])]
        doc.table(VERSUS_HEADERS, rows, align="llrlrrrl")
        notes = _grid_notes(pairs)
        if notes:
            doc.p(notes)


def _grid_notes(pairs: list[dict[str, Any]]) -> str:
    notes = []
    for p in pairs:
        if p["tasks"] < max(p["tasks_first"], p["tasks_second"]):
            notes.append(
                f"{p['first']} against {p['second']}: over the {p['tasks']} tasks both played "
                f"(of {p['tasks_first']} and {p['tasks_second']})"
            )
        if any(p["unfinished"]):
            notes.append(
                f"{p['first']} against {p['second']}: {p['unfinished'][0]} and {p['unfinished'][1]} "
                "unfinished episodes counted with the state they had reached"
            )
    return "; ".join(notes) + "." if notes else ""


def ablation_table(doc: Doc, st: dict[str, Any]) -> None:
    names = [n for n in ("correct", "speedup") if n in st["metrics"]]
    rows = []
    for r in st["context_ablation"]:
        label = f"{r['agent']} / {r['model']}"
        for row in versus_rows(f"context={r['first']}", f"context={r['second']}", r, names):
            rows.append([label, *row])
    if rows:
        doc.table(["agent / model", *VERSUS_HEADERS], rows, align="lllrlrrrl")


def turn_table(doc: Doc, st: dict[str, Any], max_turns: int) -> None:
    """Correct rate by turn with intervals, per agent and context level."""
    rows = [
        [r["agent"], r["context"]] + [value("correct", iv) for iv in r["turns"]]
        for r in st["per_turn"]["agent_context"]
    ]
    doc.table(
        ["agent", "context"] + [f"by turn {t}" for t in range(1, max_turns + 1)],
        rows,
        align="ll" + "r" * max_turns,
    )


def clear_differences(st: dict[str, Any]) -> list[str]:
    """One sentence per pair of levels whose correct rates differ by more than the noise."""
    out = []
    for dim, pairs in st["differences"].items():
        for p in pairs:
            m = p["metrics"].get("correct")
            if m and m["within_noise"] is False:
                gap = difference("correct", m["difference"])
                out.append(f"{dim} {p['first']} against {p['second']}: correct {gap}")
    return out
