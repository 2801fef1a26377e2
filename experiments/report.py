"""``report.md`` and ``report.html`` for a run: what each section says, from the run's metrics.

Every number comes from ``metrics.compute`` on the store; ``metrics.json`` next to the report holds
them all for scripts. The sections fill one ``Doc``, rendered by ``report_markdown`` and
``report_html``; the plots come from ``report_plots``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from . import accounts, comparisons, report_html, report_levels, report_markdown, report_stats
from . import metrics as metrics_mod
from .report_doc import Doc, count, pct, times, usd
from .report_plots import (
    plot_context,
    plot_differences,
    plot_heatmap,
    plot_speedups,
    plot_turns,
    plot_turns_by_context,
)
from .store import Store

TRAJECTORY_ROWS = 400


# --------------------------------------------------------------------------- the report
def _metric_row(s: dict[str, Any], m: dict[str, Any]) -> list[str]:
    return (
        [count(s["episodes"])]
        + ([count(s["unfinished"])] if _partial(m) else [])
        + [pct(s["compiled"]), pct(s["correct"]), pct(s["arch_verified"])]
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


def _partial(m: dict[str, Any]) -> bool:
    """Whether some figure covers episodes that did not finish (each table then counts them)."""
    return m["overall"]["unfinished"] > 0


def _metric_headers(m: dict[str, Any]) -> list[str]:
    return (
        ["episodes"]
        + (["unfinished"] if _partial(m) else [])
        + ["compiled", "correct", "arch-verified"]
        + [f"pass@{k}" for k in m["pass_k"]]
        + [f"fast_{p}" for p in m["fast_p"]]
        + ["speedup (geomean)", "of roofline", "heldout ok", "tokens/correct", "cost/correct"]
    )


def build(store: Store, run_dir: Path, plots: bool = True) -> tuple[Doc, dict[str, Any]]:
    m = metrics_mod.compute(store)
    calls = accounts.from_store(store)
    m["calls"] = calls.to_dict()
    config = store.get_meta("config") or {}
    m["statistics"] = comparisons.compute(
        metrics_mod.load_episodes(store),
        pass_k=m["pass_k"],
        fast_ps=[float(p) for p in m["fast_p"]],
        max_turns=m["grid"]["max_turns"],
        order={
            "agent": config.get("agents", []),
            "context": config.get("contexts", []),
            "model": [mm.get("name") or mm.get("spec") for mm in config.get("models", [])],
        },
    )
    st = m["statistics"]
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
        f"Over {_over(o, g)}: {pct(o['compiled'])} compiled, **{pct(o['correct'])} correct**"
        + report_stats.bounds_note(st["overall"]["correct"])
        + (
            f", {o['faster']} of {o['timed']} timed faster than {m['baseline']}"
            if timed
            else " (no timings: the run had no GPU, so speedups and fast_p for p > 0 are not defined)"
        )
        + f"; {accounts.sentence(calls)}."
    )
    headers = ["agent", "model", "context"] + _metric_headers(m)
    rows = [[c["agent"], c["model"], c["context"]] + _metric_row(c, m) for c in m["configurations"]]
    rows.append(["all", "", ""] + _metric_row(o, m))
    doc.table(headers, rows, align="lll" + "r" * (len(headers) - 3))
    accounts.add_section(doc, calls)

    # ---- intervals and differences
    doc.h("Intervals and differences")
    doc.p(report_stats.method_note(st["method"]))
    clear = report_stats.clear_differences(st)
    if st["differences"]:
        doc.p(
            "Correct rates that differ by more than the noise: " + "; ".join(clear) + "."
            if clear
            else "No difference in correct rate between agents, context levels or models is larger than "
            "the noise."
        )
    report_stats.intervals_table(doc, st)
    if plots and st["differences"]:
        plot_differences(
            _forest_rows(st), plot_dir / "differences.png", "Differences, A - B, with 95% intervals"
        )
        doc.img("plots/differences.png", "Each difference with its 95% interval; grey: within noise")
    report_stats.differences_tables(doc, st)

    # ---- per turn
    doc.h("Turn by turn")
    doc.p(
        "State *by* turn t: the best each episode had reached within its first t turns (an episode that "
        "ended earlier keeps its final state). *At* turn t: the attempts made at that turn."
    )
    if _partial(m):
        doc.p(_unfinished_note(o))
    if plots:
        plot_turns(m, plot_dir / "turns.png")
        doc.img("plots/turns.png", "Correct rate (95% intervals) and best speedup by turn, per agent")
        plot_turns_by_context(m, plot_dir / "turns_context.png")
        doc.img(
            "plots/turns_context.png", "Correct rate by turn (95% intervals), per agent and context level"
        )
    doc.h("Correct rate by turn, per agent and context level", 3)
    report_stats.turn_table(doc, st, g["max_turns"])
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
        doc.p(f"Each context level against context={contexts[0]}, per agent and model:")
        report_stats.ablation_table(doc, st)
        if plots:
            plot_context(
                list(pairs.items()), contexts, plot_dir / "context.png", m["baseline"], _config_intervals(st)
            )
            doc.img("plots/context.png", "Hardware-context ablation, side by side (95% intervals)")
        doc.h("What each context level changed", 3)
        m["context_levels"] = report_levels.compute(store, run_dir, config, [float(p) for p in m["fast_p"]],
                                                    timed)
        report_levels.section(doc, m["context_levels"], plot_dir if plots else None)

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
    doc.html_only(report_html.turn_details(store), note)

    doc.h("Definitions")
    doc.list([line.strip("- ").strip() for line in _definitions()])
    return doc, m


def _over(o: dict[str, Any], g: dict[str, Any]) -> str:
    """ "24 episodes", and what they are when the run is partial (unfinished ones, unplayed ones)."""
    text = _n(o["episodes"], "episode")
    notes = []
    if o["unfinished"]:
        notes.append(f"{o['unfinished']} of them unfinished")
    if g["played"] < g["episodes"]:
        notes.append(f"of {g['episodes']} in the grid; {g['episodes'] - g['played']} not played yet")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _unfinished_note(o: dict[str, Any]) -> str:
    return (
        f"{_n(o['unfinished'], 'episode')} of these did not finish (stopped, interrupted, failed or still "
        "running): each is counted with the state it had reached, so a rate by a turn it never played "
        "may be lower than it would have been; the `unfinished` columns say how many each figure covers."
    )


def _forest_rows(st: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool | None]]:
    rows = []
    for dim, pairs in st["differences"].items():
        for p in pairs:
            m = p["metrics"].get("correct")
            if m:
                rows.append((f"{dim}: {p['first']} - {p['second']}", m["difference"], m["within_noise"]))
    return rows


def _config_intervals(st: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(c["agent"], c["model"], c["context"]): c for c in st["configurations"]}


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


def write(run_dir: Path, *, plots: bool = True) -> tuple[Path, Path]:
    """Write report.md, report.html, metrics.json (and plots/) into the run directory."""
    from .rundir import STORE_NAME

    with Store(run_dir / STORE_NAME, readonly=True) as store:
        doc, m = build(store, run_dir, plots=plots)
    md = run_dir / "report.md"
    md.write_text(report_markdown.render(doc))
    page = run_dir / "report.html"
    page.write_text(report_html.render(doc, run_dir))
    (run_dir / "metrics.json").write_text(json.dumps(m, indent=1, default=str) + "\n")
    return md, page
