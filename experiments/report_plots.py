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


def plot_turns(m: dict[str, Any], path: Path) -> None:
    """Correct rate and best speedup against turn, one line per agent."""
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    turns = list(range(1, m["grid"]["max_turns"] + 1))
    timed = False
    for agent, rows in m["per_turn_by_agent"].items():
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


def plot_context(
    rows: list[tuple[str, dict[str, dict[str, Any]]]], contexts: list[str], path: Path, baseline: str
) -> None:
    """Grouped bars: for each (agent, model), one bar per hardware-context level."""
    plt = _plt()
    timed = any(s["speedup_geomean"] is not None for _, by_ctx in rows for s in by_ctx.values())
    fig, axes = plt.subplots(1, 2 if timed else 1, figsize=(11 if timed else 7, 4), squeeze=False)
    width = 0.8 / max(len(contexts), 1)
    panels = [("correct", "correct (%)", 100)] + (
        [("speedup_geomean", f"geomean speedup vs {baseline}", 1)] if timed else []
    )
    for ax, (key, label, scale) in zip(axes[0], panels, strict=False):
        for j, ctx in enumerate(contexts):
            values = [(by_ctx.get(ctx) or {}).get(key) for _, by_ctx in rows]
            xs = [i + (j - (len(contexts) - 1) / 2) * width for i in range(len(rows))]
            ax.bar(xs, [scale * v if v is not None else 0 for v in values], width, label=f"context={ctx}")
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
