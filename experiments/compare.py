"""``warpgym compare``: runs side by side, from each run's metrics; a ``Doc`` the caller renders.

It says first what differs between the runs' resolved experiments and whether their task grids
differ; when they do, every figure below is over the tasks all runs share. Each run after the
first is compared with the first, paired by task, with bootstrap intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import accounts, comparisons, config_diff, report_stats
from . import metrics as metrics_mod
from .report_doc import Doc, count, pct, times, usd
from .store import Store

SHOWN_TASKS = 10


@dataclass
class Run:
    dir: Path
    config: dict[str, Any]
    tasks: set[str]
    episodes: list[metrics_mod.EpisodeView]
    metrics: dict[str, Any]
    calls: accounts.Accounts | None = None

    @property
    def name(self) -> str:
        return self.dir.name


def _load(run_dirs: list[Path]) -> tuple[list[Run], set[str]]:
    from .rundir import STORE_NAME

    loaded = []
    for d in run_dirs:
        with Store(d / STORE_NAME, readonly=True) as store:
            episodes = metrics_mod.load_episodes(store)
            loaded.append((d, store, config_diff.resolved_config(d, store), episodes))
    common = set.intersection(*({e.task for e in eps} for *_, eps in loaded)) if loaded else set()
    differ = any({e.task for e in eps} != common for *_, eps in loaded)
    runs = []
    for d, _, config, eps in loaded:
        with Store(d / STORE_NAME, readonly=True) as store:
            m = metrics_mod.compute(store, tasks=common if differ else None)
            calls = accounts.from_store(store)
        kept = [e for e in eps if e.turns and (not differ or e.task in common)]
        runs.append(Run(d, config, {e.task for e in eps}, kept, m, calls))
    return runs, common


def compare(run_dirs: list[Path], plot_dir: Path | None = None) -> Doc:
    """Runs side by side: what differs, the headline metrics with intervals, each run against the
    first, the correct rate by turn, and per configuration. Plots go to ``plot_dir`` when given
    (the images are named relative to its parent)."""
    runs, common = _load(run_dirs)
    doc = Doc("warpgym compare: " + ", ".join(r.name for r in runs))
    _what_differs(doc, runs)
    restricted = _grid_warning(doc, runs, common)
    pass_k = sorted(set.intersection(*(set(r.metrics["pass_k"]) for r in runs)))
    fast = [p for p in runs[0].metrics["fast_p"] if all(p in r.metrics["fast_p"] for r in runs[1:])]
    spec = comparisons.Spec.of([e for r in runs for e in r.episodes], pass_k, [float(p) for p in fast])
    if plot_dir is not None:
        plot_dir.mkdir(parents=True, exist_ok=True)

    _overall(doc, runs, restricted)
    _model_calls(doc, [(r.name, r.calls) for r in runs if r.calls is not None])
    summaries = [comparisons.summary(r.episodes, spec) for r in runs]
    doc.h("Intervals")
    doc.p(report_stats.method_note(_method(spec)))
    doc.table(
        ["run", "tasks", "episodes", *spec.names()],
        [
            [r.name, count(s["tasks"]), count(s["episodes"])]
            + [report_stats.value(n, s.get(n)) for n in spec.names()]
            for r, s in zip(runs, summaries, strict=True)
        ],
    )
    if plot_dir is not None:
        from .report_plots import plot_rates

        plot_rates(
            [(r.name, s["correct"]) for r, s in zip(runs, summaries, strict=True)],
            plot_dir / "correct.png",
            "Correct rate per run (95% intervals)",
        )
        doc.img(f"{plot_dir.name}/correct.png", "Correct rate per run, with 95% intervals")
    if len(runs) > 1:
        _against_first(doc, runs, spec, plot_dir)
    _by_turn(doc, runs, spec, plot_dir)
    _per_configuration(doc, runs)
    _context_levels(doc, runs)
    return doc


def _context_levels(doc: Doc, runs: list[Run]) -> None:
    """For each run that played several context levels, what each level changed against its base."""
    from . import report_levels
    from .rundir import STORE_NAME

    for r in runs:
        if len(r.config.get("contexts") or []) < 2:
            continue
        with Store(r.dir / STORE_NAME, readonly=True) as store:
            effects = report_levels.compute(store, r.dir, r.config, [float(p) for p in r.metrics["fast_p"]],
                                            bool(r.metrics["overall"].get("timed")))
        doc.h(f"What each context level changed in {r.name}")
        report_levels.section(doc, effects, None)


def _model_calls(doc: Doc, calls: list[tuple[str, accounts.Accounts]]) -> None:
    """Where each run's answers came from: a cached or replayed run's cost is not a cost it paid."""
    doc.h("Model calls")
    doc.p("Cost is what each run paid. Cached and replayed answers were paid for by an earlier run; "
          "their recorded cost is shown apart, and a run that reused answers repeats that run's samples.")
    doc.table(*accounts.compare_rows(calls))


def _method(spec: comparisons.Spec) -> dict[str, Any]:
    return {"level": comparisons.stats.LEVEL, "resamples": spec.resamples, "seed": spec.seed}


def _what_differs(doc: Doc, runs: list[Run]) -> None:
    doc.h("What differs")
    diffs = config_diff.differing([r.config for r in runs])
    if not diffs:
        doc.p("The runs' resolved experiments are identical.")
        return
    doc.p(
        "Every key of the resolved experiments (`config.resolved.json`) whose value is not the same in "
        "all runs:"
    )
    doc.table(
        ["key", *(r.name for r in runs)],
        [[key, *(config_diff.show(v) for v in values)] for key, values in diffs],
        align="l" * (len(runs) + 1),
    )


def _grid_warning(doc: Doc, runs: list[Run], common: set[str]) -> bool:
    """Say whether the task grids differ; returns True when the figures are restricted to ``common``."""
    if all(r.tasks == common for r in runs):
        return False
    parts = []
    for r in runs:
        only = sorted(r.tasks - common)
        if only:
            shown = ", ".join(only[:SHOWN_TASKS]) + (
                f" and {len(only) - SHOWN_TASKS} more" if len(only) > SHOWN_TASKS else ""
            )
            parts.append(f"{r.name} has {_tasks(len(r.tasks))}, {len(only)} not in every run ({shown})")
        else:
            parts.append(f"{r.name} has {_tasks(len(r.tasks))}")
    doc.p(
        "**Warning: the runs' task grids differ.** "
        + "; ".join(parts)
        + f". Every figure below is over the {_tasks(len(common))} all runs share"
        + ("" if common else " (none: nothing can be compared)")
        + "."
    )
    return True


def _tasks(n: int) -> str:
    return f"{n} task" + ("" if n == 1 else "s")


def _overall(doc: Doc, runs: list[Run], restricted: bool) -> None:
    pass_k = sorted({k for r in runs for k in r.metrics["pass_k"]})
    fast = list(dict.fromkeys(p for r in runs for p in r.metrics["fast_p"]))
    partial = any(r.metrics["overall"]["unfinished"] for r in runs)
    headers = (
        ["run", "episodes"]
        + (["unfinished"] if partial else [])
        + ["compiled", "correct", "arch-verified"]
        + [f"pass@{k}" for k in pass_k]
        + [f"fast_{p}" for p in fast]
        + ["speedup (geomean)", "heldout ok", "tokens", "cost", "cost/correct"]
    )
    rows = []
    for r in runs:
        o = r.metrics["overall"]
        rows.append(
            [r.name, count(o["episodes"])]
            + ([count(o["unfinished"])] if partial else [])
            + [pct(o["compiled"]), pct(o["correct"]), pct(o["arch_verified"])]
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
    doc.h("Overall" + (" (tasks all runs share)" if restricted else ""))
    doc.table(headers, rows)
    if partial:
        doc.p(
            "Some runs are partial: "
            + "; ".join(
                f"{r.name} has {r.metrics['overall']['unfinished']} unfinished episodes"
                + (
                    f" and {g['episodes'] - g['played']} not played"
                    if (g := r.metrics["grid"])["played"] < g["episodes"]
                    else ""
                )
                for r in runs
                if r.metrics["overall"]["unfinished"]
                or r.metrics["grid"]["played"] < r.metrics["grid"]["episodes"]
            )
            + ". Unfinished episodes are counted with the state they had reached."
        )


def _against_first(doc: Doc, runs: list[Run], spec: comparisons.Spec, plot_dir: Path | None) -> None:
    first = runs[0]
    doc.h(f"Against {first.name}")
    doc.p(
        f"Each run against {first.name} (A - B, A the later run), over the tasks both played, paired by task."
    )
    rows, forest = [], []
    for r in runs[1:]:
        v = comparisons.versus(r.episodes, first.episodes, spec)
        rows += report_stats.versus_rows(r.name, first.name, v, spec.names())
        if "correct" in v["metrics"]:
            forest.append(
                (
                    f"{r.name} - {first.name}",
                    v["metrics"]["correct"]["difference"],
                    v["metrics"]["correct"]["within_noise"],
                )
            )
        for cfg in _shared_configurations(first, r):
            cv = comparisons.versus(
                [e for e in r.episodes if _key(e) == cfg], [e for e in first.episodes if _key(e) == cfg], spec
            )
            label = " / ".join(cfg)
            rows += report_stats.versus_rows(f"{r.name}: {label}", f"{first.name}: {label}", cv, ["correct"])
            if "correct" in cv["metrics"]:
                forest.append(
                    (
                        f"{label}: {r.name} - {first.name}",
                        cv["metrics"]["correct"]["difference"],
                        cv["metrics"]["correct"]["within_noise"],
                    )
                )
    doc.table(report_stats.VERSUS_HEADERS, rows, align="llrlrrrl")
    if plot_dir is not None and forest:
        from .report_plots import plot_differences

        plot_differences(forest, plot_dir / "differences.png", f"Against {first.name}, with 95% intervals")
        doc.img(
            f"{plot_dir.name}/differences.png",
            "Differences in correct rate with 95% intervals; grey: within noise",
        )


def _key(e: metrics_mod.EpisodeView) -> tuple[str, str, str]:
    return (e.agent, e.model, e.context)


def _shared_configurations(a: Run, b: Run) -> list[tuple[str, str, str]]:
    """The (agent, model, context) both runs played, unless each run played one and the same."""
    keys_a, keys_b = {_key(e) for e in a.episodes}, {_key(e) for e in b.episodes}
    return sorted(keys_a & keys_b) if len(keys_a | keys_b) > 1 else []


def _by_turn(doc: Doc, runs: list[Run], spec: comparisons.Spec, plot_dir: Path | None) -> None:
    turns = max(r.metrics["grid"]["max_turns"] for r in runs)
    lines = [(r.name, comparisons.by_turn(r.episodes, r.metrics["grid"]["max_turns"], spec)) for r in runs]
    doc.h("Correct rate by turn")
    doc.table(
        ["run"] + [f"turn {t}" for t in range(1, turns + 1)],
        [
            [name] + [report_stats.value("correct", iv) for iv in ivs] + [""] * (turns - len(ivs))
            for name, ivs in lines
        ],
    )
    if plot_dir is not None:
        from .report_plots import plot_turn_lines

        plot_turn_lines(lines, turns, plot_dir / "turns.png", "Correct rate by turn (95% intervals)")
        doc.img(f"{plot_dir.name}/turns.png", "Correct rate by turn per run, with 95% intervals")


def _per_configuration(doc: Doc, runs: list[Run]) -> None:
    doc.h("Per configuration")
    cfg_rows = []
    for r in runs:
        for c in r.metrics["configurations"]:
            cfg_rows.append(
                [
                    r.name,
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
