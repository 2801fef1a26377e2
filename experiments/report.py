"""``report.md`` and ``report.html`` for a run, with PNG plots; and runs side by side.

Both formats render one list of blocks (headings, paragraphs, tables, images), so the
Markdown and the HTML can never disagree. Every number comes from ``metrics.compute`` on the
store; ``metrics.json`` next to the report holds them all for scripts.
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import metrics as metrics_mod
from .store import Store

TRAJECTORY_ROWS = 400


# --------------------------------------------------------------------------- formatting
def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def times(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{digits}f}"


def usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:.4f}" if x < 1 else f"${x:,.2f}"


def count(x: int | None) -> str:
    return "-" if x is None else f"{x:,}"


# --------------------------------------------------------------------------- blocks
@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    align: str = ""
    """One letter per column, l or r (default: the first left, the rest right)."""


@dataclass
class Doc:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def h(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", (level, text)))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, headers: list[str], rows: list[list[str]], align: str = "") -> None:
        self.blocks.append(("table", Table(headers, rows, align)))

    def img(self, path: str, alt: str) -> None:
        self.blocks.append(("img", (path, alt)))

    def html_only(self, markup: str, markdown_note: str = "") -> None:
        """Markup for the HTML page only (too bulky for Markdown); the note stands in for it there."""
        self.blocks.append(("html", (markup, markdown_note)))

    def list(self, items: list[str]) -> None:
        self.blocks.append(("list", items))

    # ------------------------------------------------------------------ renderers
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for kind, value in self.blocks:
            if kind == "h":
                out += ["#" * value[0] + " " + value[1], ""]
            elif kind == "p":
                out += [value, ""]
            elif kind == "list":
                out += [f"- {item}" for item in value] + [""]
            elif kind == "img":
                out += [f"![{value[1]}]({value[0]})", ""]
            elif kind == "html":
                if value[1]:
                    out += [value[1], ""]
            elif kind == "table":
                t: Table = value
                align = t.align or ("l" + "r" * (len(t.headers) - 1))
                out.append("| " + " | ".join(_md_cell(h) for h in t.headers) + " |")
                out.append("|" + "|".join(":---" if a == "l" else "---:" for a in align) + "|")
                out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
                out.append("")
        return "\n".join(out)

    def html(self, base: Path) -> str:
        body = [f"<h1>{html.escape(self.title)}</h1>"]
        for kind, value in self.blocks:
            if kind == "h":
                body.append(f"<h{value[0]}>{html.escape(value[1])}</h{value[0]}>")
            elif kind == "p":
                body.append(f"<p>{_inline(value)}</p>")
            elif kind == "list":
                body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in value) + "</ul>")
            elif kind == "img":
                data = base64.b64encode((base / value[0]).read_bytes()).decode()
                body.append(
                    f'<figure><img alt="{html.escape(value[1])}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{html.escape(value[1])}</figcaption></figure>"
                )
            elif kind == "html":
                body.append(value[0])
            elif kind == "table":
                t = value
                align = t.align or ("l" + "r" * (len(t.headers) - 1))
                head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
                rows = "".join(
                    "<tr>"
                    + "".join(
                        f'<td class="{"l" if align[i] == "l" else "r"}">{html.escape(c)}</td>'
                        for i, c in enumerate(row)
                    )
                    + "</tr>"
                    for row in t.rows
                )
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        return HTML_PAGE.format(title=html.escape(self.title), body="\n".join(body))


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _inline(text: str) -> str:
    """Markdown's `code` and **bold** in a paragraph, as HTML."""
    import re

    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


HTML_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; }}
th {{ background: #f3f3f3; }}
td.r {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.l {{ text-align: left; }}
tbody tr:nth-child(even) {{ background: #fafafa; }}
code {{ background: #f3f3f3; padding: 0 0.2em; }}
img {{ max-width: 100%; }}
figcaption {{ color: #666; font-size: 0.85em; }}
details {{ margin: 0.3em 0; }}
details > summary {{ cursor: pointer; }}
pre {{ background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; }}
</style></head><body>
{body}
</body></html>
"""


# --------------------------------------------------------------------------- plots
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


# --------------------------------------------------------------------------- the report
def _metric_row(s: dict[str, Any], m: dict[str, Any]) -> list[str]:
    return (
        [count(s["episodes"]), pct(s["compiled"]), pct(s["correct"]), pct(s["arch_verified"])]
        + [pct(s["pass_at_k"].get(str(k))) for k in m["pass_k"]]
        + [pct(s["fast_p"].get(p)) for p in m["fast_p"]]
        + [
            times(s["speedup_geomean"]),
            pct(s["roofline_mean"]),
            f"{s['heldout_correct']}/{s['heldout_checked']}" if s["heldout_checked"] else "-",
            count(round(s["tokens_per_correct"])) if s["tokens_per_correct"] is not None else "-",
            usd(s["cost_per_correct"]),
        ]
    )


def _metric_headers(m: dict[str, Any]) -> list[str]:
    return (
        ["episodes", "compiled", "correct", "arch-verified"]
        + [f"pass@{k}" for k in m["pass_k"]]
        + [f"fast_{p}" for p in m["fast_p"]]
        + ["speedup (geomean)", "of roofline", "heldout ok", "tokens/correct", "cost/correct"]
    )


def build(store: Store, run_dir: Path, plots: bool = True) -> tuple[Doc, dict[str, Any]]:
    m = metrics_mod.compute(store)
    config = store.get_meta("config") or {}
    versions = store.get_meta("versions") or {}
    created = store.get_meta("created")
    events = store.events()
    doc = Doc(f"warpgym report: {config.get('name', run_dir.name)}")
    plot_dir = run_dir / "plots"
    if plots:
        plot_dir.mkdir(exist_ok=True)

    # ---- what was run
    g = m["grid"]
    tasks = config.get("resolved_tasks") or []
    models = [mm.get("name") or mm.get("spec") for mm in config.get("models", [])]
    doc.p(config.get("description") or "")
    doc.table(
        ["", ""],
        [
            ["run directory", str(run_dir)],
            ["started", datetime.fromtimestamp(created).strftime("%Y-%m-%d %H:%M") if created else "-"],
            [
                "grid",
                " x ".join(
                    _n(k, w)
                    for k, w in (
                        (len(tasks), "task"),
                        (len(config.get("agents", [])), "agent"),
                        (len(models), "model"),
                        (len(config.get("contexts", [])), "context"),
                        (g["samples"], "sample"),
                    )
                )
                + f" = {_n(g['episodes'], 'episode')}",
            ],
            ["agents", ", ".join(config.get("agents", []))],
            ["models", ", ".join(models)],
            ["hardware context", ", ".join(config.get("contexts", []))],
            ["turns", f"at most {g['max_turns']} per episode; history = {config.get('history', 'full')}"],
            ["target", str(config.get("target"))],
            ["episodes", ", ".join(f"{n} {s}" for s, n in sorted(g["statuses"].items()))],
            ["versions", ", ".join(f"{k} {v}" for k, v in versions.items())],
        ],
        align="ll",
    )
    stops = [e for e in events if e["kind"] == "stopping"]
    if stops:
        doc.p(
            "This run was stopped before the end: "
            + "; ".join(str(e["detail"]) for e in stops)
            + ". Resume it with `warpgym run --resume "
            + str(run_dir)
            + "`."
        )
    if not g["played"]:
        doc.p("No episode has played a turn yet.")
        return doc, m

    # ---- headline
    o = m["overall"]
    timed = o["timed"] > 0
    doc.h("Results")
    doc.p(
        f"Over {o['episodes']} episodes: {pct(o['compiled'])} compiled, **{pct(o['correct'])} correct**"
        + (
            f", {o['faster']} of {o['timed']} timed faster than {m['baseline']}"
            if timed
            else " (no timings: the run had no GPU, so speedups and fast_p for p > 0 are not defined)"
        )
        + f"; {count(o['tokens'])} tokens and {usd(o['cost_usd'])} in all."
    )
    headers = ["agent", "model", "context"] + _metric_headers(m)
    rows = [[c["agent"], c["model"], c["context"]] + _metric_row(c, m) for c in m["configurations"]]
    rows.append(["all", "", ""] + _metric_row(o, m))
    doc.table(headers, rows, align="lll" + "r" * (len(headers) - 3))

    # ---- per turn
    doc.h("Turn by turn")
    doc.p(
        "State *by* turn t: the best each episode had reached within its first t turns (an episode that "
        "ended earlier keeps its final state). *At* turn t: the attempts made at that turn."
    )
    if plots:
        plot_turns(m, plot_dir / "turns.png")
        doc.img("plots/turns.png", "Correct rate and best speedup by turn, per agent")
    for agent, per in m["per_turn_by_agent"].items():
        doc.h(f"{agent}", 3)
        last = max((r["turn"] for r in per if r["reached"]), default=1)
        per = per[:last]  # turns no episode of this agent reached add nothing
        doc.table(
            [
                "turn",
                "episodes playing",
                "compiled at",
                "correct at",
                "compiled by",
                "correct by",
                "fast_1 by",
                "speedup by",
                "tokens by",
                "cost by",
            ],
            [
                [
                    str(r["turn"]),
                    count(r["reached"]),
                    pct(r["compiled_at"]),
                    pct(r["correct_at"]),
                    pct(r["compiled"]),
                    pct(r["correct"]),
                    pct(r["fast_p"].get("1")),
                    times(r["speedup_geomean"]),
                    count(r["tokens"]),
                    usd(r["cost_usd"]),
                ]
                for r in per
            ],
        )

    # ---- hardware context
    contexts = config.get("contexts", [])
    if len(contexts) > 1:
        doc.h("Hardware-context ablation")
        pairs: dict[str, dict[str, dict[str, Any]]] = {}
        for c in m["configurations"]:
            pairs.setdefault(f"{c['agent']} / {c['model']}", {})[c["context"]] = c
        table_rows = []
        for name, by_ctx in pairs.items():
            row = [name]
            for ctx in contexts:
                s = by_ctx.get(ctx)
                row.append(
                    "-"
                    if s is None
                    else pct(s["correct"])
                    + (f" ({times(s['speedup_geomean'])})" if s["speedup_geomean"] else "")
                )
            table_rows.append(row)
        doc.p("Correct rate (and geomean speedup when timed) of each agent and model at each context level.")
        doc.table(["agent / model"] + [f"context={c}" for c in contexts], table_rows)
        if plots:
            plot_context(list(pairs.items()), contexts, plot_dir / "context.png", m["baseline"])
            doc.img("plots/context.png", "Hardware-context ablation, side by side")

    # ---- breakdowns
    doc.h("By category")
    if plots:
        plot_heatmap(m, plot_dir / "category_agent.png")
        doc.img("plots/category_agent.png", "Correct rate per category and agent")
    for dim in ("category", "agent", "model", "context"):
        if dim != "category":
            doc.h(f"By {dim}")
        doc.table([dim] + _metric_headers(m), [[k] + _metric_row(s, m) for k, s in m["by"][dim].items()])

    # ---- heldout
    doc.h("Heldout against dev shapes")
    doc.p(
        "Each episode's best candidate that is correct on the dev shapes (the ones the model saw) is checked "
        "once more on the task's heldout shapes, which no model sees."
    )
    doc.table(
        ["agent", "model", "context", "correct on dev", "heldout checked", "correct on heldout", "rate"],
        [
            [
                c["agent"],
                c["model"],
                c["context"],
                count(c["n_correct"]),
                count(c["heldout_checked"]),
                count(c["heldout_correct"]),
                pct(c["heldout_rate"]),
            ]
            for c in m["configurations"]
        ],
        align="lllrrrr",
    )
    overfit = [(e, h) for e, h in _episodes_with_heldout(store) if h is False]
    if overfit:
        doc.p(
            "Correct on dev shapes but wrong on heldout shapes: "
            + ", ".join(
                f"{e['task']} ({e['agent']}, {e['context']}, sample {e['sample']})" for e, _ in overfit
            )
        )

    # ---- speedups
    doc.h("Speedup distribution")
    if m["speedups"] and plots:
        plot_speedups(m, plot_dir / "speedups.png")
        doc.img("plots/speedups.png", "Distribution of best speedups over correct episodes")
    elif not m["speedups"]:
        doc.p("No speedups: this run timed nothing (timing runs on CUDA GPUs only).")

    # ---- trajectories
    doc.h("Episodes, turn by turn")
    doc.p(
        "Each turn's outcome: `ok` correct (with speedup when timed), `wrong` compiled but incorrect, "
        "`compile`/`static` failed at that stage, `no code` no candidate in the answer. "
        "`*` marks the best turn; `H` heldout correct, `h!` heldout wrong."
    )
    traj = _trajectories(store, m)
    doc.table(
        ["task", "agent", "model", "context", "sample", "status"]
        + [f"turn {t}" for t in range(1, g["max_turns"] + 1)]
        + ["heldout"],
        traj[:TRAJECTORY_ROWS],
        align="lllll" + "l" * (g["max_turns"] + 2),
    )
    if len(traj) > TRAJECTORY_ROWS:
        doc.p(f"... {len(traj) - TRAJECTORY_ROWS} more episodes: `warpgym export {run_dir}` has them all.")

    doc.h("Every turn")
    note = "The answer and the judge's feedback at every turn are in `report.html` and `warpgym export`."
    doc.html_only(_turn_details(store), note)

    doc.h("Definitions")
    doc.list([line.strip("- ").strip() for line in _definitions()])
    return doc, m


def _n(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _definitions() -> list[str]:
    text = metrics_mod.__doc__ or ""
    items, current = [], ""
    for line in text.splitlines():
        if line.startswith("- "):
            if current:
                items.append(current)
            current = line[2:]
        elif line.startswith("  ") and current:
            current += " " + line.strip()
    if current:
        items.append(current)
    return items


def _episodes_with_heldout(store: Store) -> list[tuple[dict[str, Any], bool | None]]:
    return [
        (e, None if e["heldout_correct"] is None else bool(e["heldout_correct"])) for e in store.episodes()
    ]


def _trajectories(store: Store, m: dict[str, Any]) -> list[list[str]]:
    by_episode: dict[int, list[dict[str, Any]]] = {}
    for t in store.turns():
        by_episode.setdefault(t["episode_id"], []).append(t)
    views = {v.id: v for v in metrics_mod.load_episodes(store)}
    rows = []
    for e in store.episodes():
        turns = by_episode.get(e["id"], [])
        best = views[e["id"]].best()
        cells = []
        for t in turns:
            if t["correct"]:
                cell = "ok" + (f" {t['speedup']:.2f}x" if t["speedup"] is not None else "")
            elif t["compiled"]:
                cell = "wrong"
            elif t["stage"] in (None, "extraction"):
                cell = "no code"
            else:
                cell = t["stage"]
            if best is not None and best.turn == t["turn"] and t["correct"]:
                cell += " *"
            cells.append(cell)
        cells += [""] * (m["grid"]["max_turns"] - len(cells))
        held = {None: "", 1: "H", 0: "h!"}[e["heldout_correct"]]
        rows.append(
            [e["task"], e["agent"], e["model"], e["context"], str(e["sample"]), e["status"], *cells, held]
        )
    return rows


DETAIL_EPISODES = 300


def _turn_details(store: Store) -> str:
    """One collapsible block per episode: each turn's verdict, feedback and answer, as the model saw them."""
    esc = html.escape
    records: dict[int, list[dict[str, Any]]] = {}
    for episode_id, record in store.all_turn_records():
        records.setdefault(episode_id, []).append(record)
    parts = []
    episodes = store.episodes()
    for e in episodes[:DETAIL_EPISODES]:
        turns = records.get(e["id"], [])
        verdicts = [_verdict(r) for r in turns]
        title = (
            f"{e['task']} · {e['agent']} · {e['model']} · context={e['context']} · "
            f"sample {e['sample']}: " + (" → ".join(verdicts) or "no turn yet")
        )
        inner = []
        for r, verdict in zip(turns, verdicts, strict=True):
            feedback = (r.get("feedback") or r.get("extraction_problem") or "")[:6000]
            inner.append(
                f"<h4>Turn {r['turn']} ({esc(str(r.get('phase')))}): {esc(verdict)}</h4>"
                f"<pre>{esc(feedback)}</pre>"
                "<details><summary>the answer</summary>"
                f"<pre>{esc((r.get('response') or '')[:20000])}</pre></details>"
            )
        parts.append(f"<details><summary>{esc(title)}</summary>{''.join(inner)}</details>")
    if len(episodes) > DETAIL_EPISODES:
        more = len(episodes) - DETAIL_EPISODES
        parts.append(f"<p>... and {more} more episodes (see warpgym export).</p>")
    return "\n".join(parts)


def _verdict(record: dict[str, Any]) -> str:
    res = record.get("result") or {}
    if res.get("correct"):
        speedups = (res.get("speedup") or {}).items()
        speedup = [f"{k} {v:.2f}x" for k, v in speedups if isinstance(v, int | float)]
        return "correct" + (f" ({', '.join(speedup)})" if speedup else "")
    if res.get("compiled"):
        return "wrong"
    if not res:
        return "no code"
    return f"failed at {res.get('stage', '?')}"


def write(run_dir: Path, *, plots: bool = True) -> tuple[Path, Path]:
    """Write report.md, report.html, metrics.json (and plots/) into the run directory."""
    from .rundir import STORE_NAME

    with Store(run_dir / STORE_NAME, readonly=True) as store:
        doc, m = build(store, run_dir, plots=plots)
    md = run_dir / "report.md"
    md.write_text(doc.markdown())
    page = run_dir / "report.html"
    page.write_text(doc.html(run_dir))
    (run_dir / "metrics.json").write_text(json.dumps(m, indent=1, default=str) + "\n")
    return md, page


# --------------------------------------------------------------------------- compare
def compare(run_dirs: list[Path]) -> Doc:
    """Runs side by side: the headline metrics, the correct rate by turn, and per configuration."""
    from .rundir import STORE_NAME

    loaded = []
    for d in run_dirs:
        with Store(d / STORE_NAME, readonly=True) as store:
            loaded.append((d, metrics_mod.compute(store)))
    doc = Doc("warpgym compare: " + ", ".join(d.name for d, _ in loaded))
    pass_k = sorted({k for _, m in loaded for k in m["pass_k"]})
    fast = list(dict.fromkeys(p for _, m in loaded for p in m["fast_p"]))
    headers = (
        ["run", "episodes", "compiled", "correct", "arch-verified"]
        + [f"pass@{k}" for k in pass_k]
        + [f"fast_{p}" for p in fast]
        + ["speedup (geomean)", "heldout ok", "tokens", "cost", "cost/correct"]
    )
    rows = []
    for d, m in loaded:
        o = m["overall"]
        rows.append(
            [d.name, count(o["episodes"]), pct(o["compiled"]), pct(o["correct"]), pct(o["arch_verified"])]
            + [pct(o["pass_at_k"].get(str(k))) for k in pass_k]
            + [pct(o["fast_p"].get(p)) for p in fast]
            + [
                times(o["speedup_geomean"]),
                f"{o['heldout_correct']}/{o['heldout_checked']}" if o["heldout_checked"] else "-",
                count(o["tokens"]),
                usd(o["cost_usd"]),
                usd(o["cost_per_correct"]),
            ]
        )
    doc.h("Overall")
    doc.table(headers, rows)
    turns = max(m["grid"]["max_turns"] for _, m in loaded)
    doc.h("Correct rate by turn")
    doc.table(
        ["run"] + [f"turn {t}" for t in range(1, turns + 1)],
        [
            [d.name] + [pct(r["correct"]) for r in m["per_turn"]] + [""] * (turns - len(m["per_turn"]))
            for d, m in loaded
        ],
    )
    doc.h("Per configuration")
    cfg_rows = []
    for d, m in loaded:
        for c in m["configurations"]:
            cfg_rows.append(
                [
                    d.name,
                    c["agent"],
                    c["model"],
                    c["context"],
                    count(c["episodes"]),
                    pct(c["correct"]),
                    pct(c["fast_p"].get("1")),
                    times(c["speedup_geomean"]),
                    usd(c["cost_per_correct"]),
                ]
            )
    doc.table(
        ["run", "agent", "model", "context", "episodes", "correct", "fast_1", "speedup", "cost/correct"],
        cfg_rows,
        align="llllrrrrr",
    )
    return doc
