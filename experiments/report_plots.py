"""The report's PNG plots, drawn with matplotlib's Agg backend (no display needed).

matplotlib is imported on the first plot only, so ``--no-plots`` and the comparison never load it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _errors(intervals: list[dict[str, Any]], scale: float = 100) -> tuple[list[float], list[list[float]]]:
    """Centres and (below, above) error-bar lengths from interval dicts; NaN where not defined."""
    centre, below, above = [], [], []
    for iv in intervals:
        est, lo, hi = (iv.get(k) if iv else None for k in ("estimate", "low", "high"))
        centre.append(math.nan if est is None else scale * est)
        below.append(0.0 if est is None or lo is None else scale * (est - lo))
        above.append(0.0 if est is None or hi is None else scale * (hi - est))
    return centre, [below, above]


def _dodge(xs: list[int], j: int, n: int) -> list[float]:
    """x positions of the j-th of n lines, set slightly apart so their error bars do not hide each other."""
    return [x + (j - (n - 1) / 2) * 0.08 for x in xs]


def plot_turns(m: dict[str, Any], path: Path) -> None:
    """Correct rate (with its interval, when the run's statistics are in ``m``) and best speedup
    against turn, one line per agent."""
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    turns = list(range(1, m["grid"]["max_turns"] + 1))
    timed = False
    per_turn = (m.get("statistics") or {}).get("per_turn", {}).get("agent", {})
    for j, (agent, rows) in enumerate(m["per_turn_by_agent"].items()):
        if agent in per_turn:
            centre, err = _errors(per_turn[agent])
            left.errorbar(
                _dodge(turns, j, len(m["per_turn_by_agent"])),
                centre,
                yerr=err,
                marker="o",
                capsize=3,
                label=agent,
            )
        else:
            left.plot(turns, [100 * (r["correct"] or 0) for r in rows], marker="o", label=agent)
        speed = [r["speedup_geomean"] for r in rows]
        if any(s is not None for s in speed):
            timed = True
            right.plot(turns, [s if s is not None else math.nan for s in speed], marker="o", label=agent)
    left.set(
        xlabel="turn",
        ylabel="correct by this turn (%)",
        title="Correct rate by turn",
        ylim=(0, 105),
        xticks=turns,
    )
    left.legend()
    right.set(
        xlabel="turn",
        ylabel=f"geomean best speedup vs {m['baseline']}",
        title="Best speedup by turn",
        xticks=turns,
    )
    if timed:
        right.axhline(1.0, color="grey", lw=0.8, ls="--")
        right.legend()
    else:
        right.text(
            0.5,
            0.5,
            "no timings in this run\n(timing runs on GPUs only)",
            ha="center",
            va="center",
            transform=right.transAxes,
            color="grey",
        )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_heatmap(m: dict[str, Any], path: Path) -> None:
    plt = _plt()
    cats = list(m["category_agent"])
    agents = sorted({a for row in m["category_agent"].values() for a in row})
    data = [[m["category_agent"][c].get(a) for a in agents] for c in cats]
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(agents), 1.2 + 0.45 * len(cats)))
    grid = [[math.nan if v is None else 100 * v for v in row] for row in data]
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(agents)), agents)
    ax.set_yticks(range(len(cats)), cats)
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            if v is not None:
                ax.text(
                    j, i, f"{100 * v:.0f}%", ha="center", va="center", color="white" if v < 0.6 else "black"
                )
    ax.set_title("Correct rate, category x agent")
    fig.colorbar(im, ax=ax, label="correct (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_turns_by_context(m: dict[str, Any], path: Path) -> None:
    """Correct rate by turn with its interval: one panel per agent, one line per context level."""
    plt = _plt()
    rows = m["statistics"]["per_turn"]["agent_context"]
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    fig, axes = plt.subplots(1, max(len(agents), 1), figsize=(4.5 * max(len(agents), 1), 4), squeeze=False)
    turns = list(range(1, m["grid"]["max_turns"] + 1))
    for ax, agent in zip(axes[0], agents, strict=False):
        mine = [r for r in rows if r["agent"] == agent]
        for j, r in enumerate(mine):
            centre, err = _errors(r["turns"])
            ax.errorbar(
                _dodge(turns, j, len(mine)),
                centre,
                yerr=err,
                marker="o",
                capsize=3,
                label=f"context={r['context']}",
            )
        ax.set(title=agent, xlabel="turn", ylabel="correct by this turn (%)", ylim=(0, 105), xticks=turns)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_differences(rows: list[tuple[str, dict[str, Any], bool | None]], path: Path, title: str) -> None:
    """A forest plot: each difference of correct rates (percentage points) with its interval."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(rows)))
    for i, (_, iv, within) in enumerate(rows):
        centre, err = _errors([iv])
        colour = "grey" if within in (True, None) else "tab:blue"
        ax.errorbar(centre, [i], xerr=err, fmt="o", capsize=4, color=colour)
    ax.axvline(0.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows])
    ax.invert_yaxis()
    ax.set(xlabel="difference in correct rate (percentage points)", title=title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_rates(rows: list[tuple[str, dict[str, Any]]], path: Path, title: str) -> None:
    """One bar per row (a run, a configuration): its correct rate with the interval as an error bar."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(1.5 + 1.1 * len(rows), 4))
    centre, err = _errors([iv for _, iv in rows])
    ax.bar(range(len(rows)), [0 if math.isnan(c) else c for c in centre], yerr=err, capsize=4)
    ax.set_xticks(range(len(rows)), [name for name, _ in rows], rotation=20, ha="right")
    ax.set(ylabel="correct (%)", ylim=(0, 105), title=title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_turn_lines(
    lines: list[tuple[str, list[dict[str, Any]]]], max_turns: int, path: Path, title: str
) -> None:
    """Correct rate by turn, one line with error bars per row (a run)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    turns = list(range(1, max_turns + 1))
    for j, (name, intervals) in enumerate(lines):
        centre, err = _errors(intervals)
        ax.errorbar(
            _dodge(turns[: len(centre)], j, len(lines)), centre, yerr=err, marker="o", capsize=3, label=name
        )
    ax.set(xlabel="turn", ylabel="correct by this turn (%)", ylim=(0, 105), xticks=turns, title=title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_context(
    rows: list[tuple[str, dict[str, dict[str, Any]]]],
    contexts: list[str],
    path: Path,
    baseline: str,
    intervals: dict[tuple[str, str, str], dict[str, Any]] | None = None,
) -> None:
    """Grouped bars: for each (agent, model), one bar per hardware-context level; error bars from
    ``intervals`` (each configuration's figures with intervals) when given."""
    plt = _plt()
    timed = any(s["speedup_geomean"] is not None for _, by_ctx in rows for s in by_ctx.values())
    fig, axes = plt.subplots(1, 2 if timed else 1, figsize=(11 if timed else 7, 4), squeeze=False)
    width = 0.8 / max(len(contexts), 1)
    panels = [("correct", "correct (%)", 100)] + (
        [("speedup_geomean", f"geomean speedup vs {baseline}", 1)] if timed else []
    )
    for ax, (key, label, scale) in zip(axes[0], panels, strict=False):
        for j, ctx in enumerate(contexts):
            cells = [by_ctx.get(ctx) or {} for _, by_ctx in rows]
            values = [c.get(key) for c in cells]
            xs = [i + (j - (len(contexts) - 1) / 2) * width for i in range(len(rows))]
            ivs = [
                (intervals or {})
                .get((c.get("agent"), c.get("model"), c.get("context")), {})
                .get("correct" if key == "correct" else "speedup")
                for c in cells
            ]
            yerr = _errors(ivs, scale)[1] if intervals else None
            ax.bar(
                xs,
                [scale * v if v is not None else 0 for v in values],
                width,
                yerr=yerr,
                capsize=3,
                label=f"context={ctx}",
            )
        ax.set_xticks(range(len(rows)), [name for name, _ in rows], rotation=20, ha="right")
        ax.set_ylabel(label)
        ax.legend()
    axes[0][0].set_title("Hardware-context ablation")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_speedups(m: dict[str, Any], path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    by_agent: dict[str, list[float]] = {}
    for s in m["speedups"]:
        by_agent.setdefault(s["agent"], []).append(s["speedup"])
    values = [math.log2(v) for vs in by_agent.values() for v in vs if v > 0]
    lo, hi = min(values + [-1.0]), max(values + [1.0])
    bins = [lo + (hi - lo) * i / 20 for i in range(21)]
    ax.hist(
        [[math.log2(v) for v in vs if v > 0] for vs in by_agent.values()],
        bins=bins,
        label=list(by_agent),
        alpha=0.8,
    )
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel=f"log2 speedup vs {m['baseline']} (best correct candidate)",
        ylabel="episodes",
        title="Speedup distribution",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
