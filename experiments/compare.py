"""``warpgym compare``: runs side by side, from each run's metrics; a ``Doc`` the caller renders."""

from __future__ import annotations

from pathlib import Path

from . import accounts
from . import metrics as metrics_mod
from .report_doc import Doc, count, pct, times, usd
from .store import Store


def compare(run_dirs: list[Path]) -> Doc:
    """Runs side by side: the headline metrics, the correct rate by turn, and per configuration."""
    from .rundir import STORE_NAME

    loaded = []
    calls = []
    for d in run_dirs:
        with Store(d / STORE_NAME, readonly=True) as store:
            loaded.append((d, metrics_mod.compute(store)))
            calls.append((d.name, accounts.from_store(store)))
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
    _model_calls(doc, calls)
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


def _model_calls(doc: Doc, calls: list[tuple[str, accounts.Accounts]]) -> None:
    """Where each run's answers came from: a cached or replayed run's cost is not a cost it paid."""
    doc.h("Model calls")
    doc.p("Cost is what each run paid. Cached and replayed answers were paid for by an earlier run; "
          "their recorded cost is shown apart, and a run that reused answers repeats that run's samples.")
    doc.table(*accounts.compare_rows(calls))
