"""The report's section on what each hardware-context level changed (``level_effects``' figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import context_levels, level_effects, metrics
from .report_doc import Doc, num
from .report_stats import WITHIN_NOISE, difference, value, verdict
from .store import Store


def compute(store: Store, run_dir: Path, config: dict[str, Any], fast_ps: list[float],
            timed: bool) -> dict[str, Any]:
    episodes = metrics.load_episodes(store)
    best = {e.id: (b.turn if (b := e.best()) is not None else None) for e in episodes}
    families = level_effects.best_families(store.all_turn_records(), best)
    ablate = config.get("ablate") or {}
    return level_effects.compute(episodes, families, context_levels.load(run_dir), config.get("contexts", []),
                                 ablate.get("base"), fast_ps, timed)


def _tokens(iv: dict[str, Any] | None) -> str:
    if not iv or iv.get("estimate") is None:
        return "-"
    low, high = iv.get("low"), iv.get("high")
    return num(iv["estimate"], 0) + ("" if low is None else f" [{num(low, 0)}, {num(high, 0)}]")


def _tokens_difference(iv: dict[str, Any] | None) -> str:
    if not iv or iv.get("estimate") is None:
        return "-"
    text = f"{iv['estimate']:+,.0f}"
    return text if iv.get("low") is None else f"{text} [{iv['low']:+,.0f}, {iv['high']:+,.0f}]"


def _cell(name: str, iv: dict[str, Any] | None) -> str:
    return _tokens(iv) if name == "tokens_per_episode" else value(name, iv)


def _label(name: str) -> str:
    return {"arch_verified": "arch-verified", "tokens_per_episode": "tokens / episode"}.get(
        name, name.replace("sass:", "in SASS: "))


def section(doc: Doc, effects: dict[str, Any], plot_dir: Path | None) -> None:
    names = effects["metrics"]
    base = effects["base"]
    doc.p("Per context level, with 95% intervals: its size (the stored text, estimated at 4 characters "
          "per token), tokens per episode (the providers' counts), correct and arch-verified rates "
          "(arch-verified over the tasks that require instruction families), fast_p, and the share of "
          "episodes whose best compiled candidate holds each instruction family in its SASS.")
    doc.table(["level", "episodes", "context tokens (est.)", *(_label(n) for n in names)],
              [[r["level"], str(r["episodes"]), num(r["context_tokens"], 0),
                *(_cell(n, r["metrics"].get(n)) for n in names)] for r in effects["levels"]])
    rows = []
    for r in effects["levels"]:
        versus = r.get("versus_base")
        if not versus:
            continue
        for n in names:
            m = versus["metrics"].get(n) or {}
            diff = m.get("difference")
            shown = _tokens_difference(diff) if n == "tokens_per_episode" else difference(n, diff)
            rows.append([r["level"], _label(n), shown, verdict(m.get("within_noise"))])
    if rows:
        doc.p(f"Each level against the base level `{base}`, paired by task (*{WITHIN_NOISE}*: the "
              "difference's interval covers 0):")
        doc.table(["level", "figure", f"difference from {base}", "verdict"], rows, align="llrl")
    if plot_dir is not None and effects["levels"]:
        figure = "arch_verified" if any(r["metrics"]["arch_verified"]["estimate"] is not None
                                        for r in effects["levels"]) else "correct"
        plot_against_tokens(effects["levels"], figure, plot_dir / "levels_tokens.png")
        doc.img("plots/levels_tokens.png", f"{_label(figure)} rate against context tokens (95% intervals)")


def plot_against_tokens(levels: list[dict[str, Any]], figure: str, path: Path) -> None:
    from .report_plots import _errors, _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    points = [r for r in levels if r["context_tokens"] is not None]
    centre, err = _errors([r["metrics"][figure] for r in points])
    xs = [r["context_tokens"] for r in points]
    ax.errorbar(xs, centre, yerr=err, fmt="o", capsize=3)
    for x, y, r in zip(xs, centre, points, strict=True):
        ax.annotate(r["level"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("context tokens (estimated)")
    ax.set_ylabel(f"{_label(figure)} (%)")
    ax.set_title("What each context level bought")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
