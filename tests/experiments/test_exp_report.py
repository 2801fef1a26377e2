"""The report's numbers against the same numbers worked out from the store's rows by hand."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import pytest
from warpgym.experiments import export, report
from warpgym.experiments.cli import main
from warpgym.experiments.store import Store

TASKS = {"math/add": "math", "matmul/matmul": "matmul"}
AGENTS = ("one-shot", "fix-retry")
CONTEXTS = ("none", "full")
SAMPLES = 3


def _record(turn: int, rng: random.Random, *, arch: bool) -> dict:
    compiled = rng.random() < 0.8
    correct = compiled and rng.random() < 0.6
    result = {
        "compiled": compiled,
        "correct": correct,
        "stage": "done" if correct else "correctness",
        "arch_verified": (rng.random() < 0.5) if (arch and correct) else None,
    }
    if correct:
        speedup = round(rng.uniform(0.3, 3.0), 3)
        result["speedup"] = {"eager": speedup, "torch.compile": speedup / 2}
        result["timing"] = [
            {"roofline_fraction": round(rng.uniform(0.1, 0.9), 3)},
            {"roofline_fraction": round(rng.uniform(0.1, 0.9), 3)},
        ]
    return {
        "turn": turn,
        "phase": "generate" if turn == 1 else "fix",
        "messages": [],
        "response": "...",
        "candidate": "def f(): pass",
        "extraction_problem": None,
        "feedback": "",
        "result": result,
        "reward": 1.0 if correct else 0.0,
        "input_tokens": rng.randint(500, 2000),
        "output_tokens": rng.randint(100, 900),
        "reasoning_tokens": 0,
        "cost_usd": round(rng.uniform(0.001, 0.02), 5),
    }


def make_store(run_dir: Path) -> Path:
    """A finished run of 2 tasks x 2 agents x 1 model x 2 contexts x 3 samples with GPU-like timings."""
    rng = random.Random(7)
    run_dir.mkdir(parents=True)
    with Store(run_dir / "store.sqlite") as store:
        store.set_meta(
            "config",
            {
                "name": "synthetic",
                "resolved_tasks": list(TASKS),
                "agents": list(AGENTS),
                "models": [{"spec": "replay:x", "name": "m"}],
                "contexts": list(CONTEXTS),
                "samples": SAMPLES,
                "max_turns": 3,
                "history": "full",
                "target": "sm_90a",
                "metrics": {"baseline": "eager", "pass_k": [1, 2], "fast_p": [0, 1, 1.5, 2]},
            },
        )
        store.add_episodes(
            {
                "task": t,
                "category": c,
                "agent": a,
                "model": "m",
                "context": x,
                "sample": s,
                "requires_features": t == "matmul/matmul",
            }
            for s in range(SAMPLES)
            for t, c in TASKS.items()
            for a in AGENTS
            for x in CONTEXTS
        )
        for e in store.episodes():
            turns = 1 if e["agent"] == "one-shot" else 3
            records = []
            for t in range(1, turns + 1):
                records.append(_record(t, rng, arch=bool(e["requires_features"])))
                store.add_turn(e["id"], records[-1], "eager")
                if records[-1]["result"]["correct"] and rng.random() < 0.5:
                    break
            correct = [r for r in records if r["result"]["correct"]]
            best = (
                max(correct, key=lambda r: (r["result"]["speedup"]["eager"], -r["turn"]))["turn"]
                if correct
                else records[-1]["turn"]
            )
            heldout = {"correct": rng.random() < 0.8} if correct else None
            store.finish_episode(e["id"], solved=bool(correct), best_turn=best, heldout=heldout)
    return run_dir


def by_hand(db: Path) -> dict:
    """Per (agent, context) and per turn, straight from the rows."""
    conn = sqlite3.connect(db)
    episodes = conn.execute(
        "SELECT id, task, agent, context, heldout_correct, requires_features FROM episodes"
    ).fetchall()
    turns: dict[int, list[tuple]] = {}
    for row in conn.execute(
        "SELECT episode_id, turn, compiled, correct, arch_verified, speedup, roofline, "
        "input_tokens, output_tokens, cost_usd FROM turns ORDER BY episode_id, turn"
    ):
        turns.setdefault(row[0], []).append(row[1:])
    out = {}
    for agent in AGENTS:
        for ctx in CONTEXTS:
            eps = [e for e in episodes if e[2] == agent and e[3] == ctx]
            n = len(eps)
            correct, compiled, fast1, speedups, roofs, arch, tokens, cost = 0, 0, 0, [], [], [], 0, 0.0
            held_checked = held_ok = 0
            groups: dict[str, list[bool]] = {}
            by_turn = []
            for e in eps:
                ts = turns[e[0]]
                ok = [t for t in ts if t[2]]
                correct += bool(ok)
                compiled += any(t[1] for t in ts)
                groups.setdefault(e[1], []).append(bool(ok))
                tokens += sum(t[6] + t[7] for t in ts)
                cost += sum(t[8] for t in ts)
                if ok:
                    best = max(ok, key=lambda t: (t[4], -t[0]))
                    speedups.append(best[4])
                    roofs.append(best[5])
                    fast1 += best[4] > 1
                    if e[4] is not None:
                        held_checked += 1
                        held_ok += e[4]
                if e[5]:
                    arch.append(any(t[2] and t[3] for t in ts))
            for t in (1, 2, 3):
                by_turn.append(sum(any(x[2] for x in turns[e[0]][:t]) for e in eps) / n)

            def pk(k: int, groups: dict[str, list[bool]] = groups) -> float:
                vals = [1 - math.comb(len(v) - sum(v), k) / math.comb(len(v), k) for v in groups.values()]
                return sum(vals) / len(vals)

            out[(agent, ctx)] = {
                "episodes": n,
                "compiled": compiled / n,
                "correct": correct / n,
                "fast_1": fast1 / n,
                "pass@1": pk(1),
                "pass@2": pk(2),
                "arch": sum(arch) / len(arch),
                "speedup": math.exp(sum(math.log(s) for s in speedups) / len(speedups)),
                "roofline": sum(roofs) / len(roofs),
                "heldout": f"{held_ok}/{held_checked}",
                "tokens_per_correct": tokens / correct,
                "cost_per_correct": cost / correct,
                "by_turn": by_turn,
            }
    return out


def md_tables(text: str) -> list[list[dict[str, str]]]:
    tables, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|:"):
            headers = [h.strip() for h in lines[i].strip("|").split(" | ")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(
                    dict(
                        zip(
                            headers,
                            [c.strip() for c in lines[i].strip().strip("|").split(" | ")],
                            strict=True,
                        )
                    )
                )
                i += 1
            tables.append(rows)
        i += 1
    return tables


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def test_report_numbers_equal_those_computed_from_the_store(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path / "run")
    expected = by_hand(run_dir / "store.sqlite")
    md, page = report.write(run_dir)
    text = md.read_text()
    headline = next(t for t in md_tables(text) if t and "context" in t[0] and "pass@2" in t[0])
    seen = 0
    for row in headline:
        if row["agent"] == "all":
            continue
        want = expected[(row["agent"], row["context"])]
        assert row["episodes"] == str(want["episodes"])
        assert row["compiled"] == pct(want["compiled"])
        assert row["correct"] == pct(want["correct"])
        assert row["fast_0"] == pct(want["correct"])
        assert row["fast_1"] == pct(want["fast_1"])
        assert row["pass@1"] == pct(want["pass@1"])
        assert row["pass@2"] == pct(want["pass@2"])
        assert row["arch-verified"] == pct(want["arch"])
        assert row["speedup (geomean)"] == f"{want['speedup']:.2f}x"
        assert row["of roofline"] == pct(want["roofline"])
        assert row["heldout ok"] == want["heldout"]
        assert row["tokens/correct"] == f"{round(want['tokens_per_correct']):,}"
        assert row["cost/correct"] == f"${want['cost_per_correct']:.4f}"
        seen += 1
    assert seen == len(AGENTS) * len(CONTEXTS)

    # the fix-retry turn table: correct by turn, over both contexts
    fix_section = text.split("### fix-retry")[1]
    per_turn = md_tables(fix_section)[0]
    for t, row in enumerate(per_turn, start=1):
        both = [expected[("fix-retry", c)]["by_turn"][t - 1] for c in CONTEXTS]
        assert row["correct by"] == pct(sum(both) / 2)

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["overall"]["episodes"] == 2 * 2 * 2 * SAMPLES
    for name in ("turns", "category_agent", "context", "speedups"):
        assert (run_dir / "plots" / f"{name}.png").stat().st_size > 1000
    html = page.read_text()
    assert "data:image/png;base64," in html and pct(expected[("fix-retry", "none")]["correct"]) in html


def test_compare_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_store(tmp_path / "a")
    b = make_store(tmp_path / "b")
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| a |" in out and "| b |" in out and "Correct rate by turn" in out
    assert main(["export", str(a), "--format", "jsonl"]) == 0
    lines = (a / "export" / "steps.jsonl").read_text().splitlines()
    with Store(a / "store.sqlite", readonly=True) as store:
        assert len(lines) == len(store.turns())
    first = json.loads(lines[0])
    assert {"task", "agent", "context", "turn", "correct", "result", "response"} <= set(first)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(export.ExportError, match="pip install pyarrow"):
            export.export(a, a / "store.sqlite", "parquet")
        assert main(["export", str(a), "--format", "parquet"]) == 2
    else:
        assert main(["export", str(a), "--format", "parquet"]) == 0
        assert (a / "export" / "steps.parquet").is_file()


# --------------------------------------------------------------------------- known differences
def make_known_store(
    run_dir: Path,
    rates: dict[str, float],
    tasks: range,
    *,
    seed: int,
    samples: int = 2,
    contexts: tuple[str, ...] = ("none", "full"),
    unfinished: int = 0,
    history: str = "full",
) -> Path:
    """Single-turn episodes: agent a is correct with probability rates[a] on every task and context;
    the first ``unfinished`` episodes are left stopped (played, never finished)."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True)
    with Store(run_dir / "store.sqlite") as store:
        store.set_meta(
            "config",
            {
                "name": "known",
                "resolved_tasks": [f"c{t % 3}/t{t}" for t in tasks],
                "agents": list(rates),
                "models": [{"spec": "replay:x", "name": "m"}],
                "contexts": list(contexts),
                "samples": samples,
                "max_turns": 1,
                "history": history,
                "target": "sm_90a",
                "metrics": {"baseline": "eager", "pass_k": [1, 2], "fast_p": [0, 1]},
            },
        )
        store.add_episodes(
            {
                "task": f"c{t % 3}/t{t}",
                "category": f"c{t % 3}",
                "agent": a,
                "model": "m",
                "context": x,
                "sample": s,
            }
            for t in tasks
            for a in rates
            for x in contexts
            for s in range(samples)
        )
        for i, e in enumerate(store.episodes()):
            ok = rng.random() < rates[e["agent"]]
            record = {
                "turn": 1,
                "phase": "generate",
                "response": "...",
                "feedback": "",
                "result": {"compiled": True, "correct": ok, "stage": "done" if ok else "correctness"},
                "input_tokens": 10,
                "output_tokens": 10,
                "cost_usd": 0.001,
            }
            store.add_turn(e["id"], record, "eager")
            if i < unfinished:
                store.set_status(e["id"], "stopped")
            else:
                store.finish_episode(e["id"], solved=ok, best_turn=1, heldout=None)
    return run_dir


def _versus_row(text: str, heading: str, a: str, b: str, figure: str = "correct") -> dict[str, str]:
    table = md_tables(text.split(heading)[1])[0]
    return next(r for r in table if r["A"] == a and r["B"] == b and r["figure"] == figure)


def test_report_marks_a_true_difference_and_counts_unfinished_episodes(tmp_path: Path) -> None:
    run_dir = make_known_store(
        tmp_path / "run", {"strong": 0.8, "weak": 0.3}, range(40), seed=11, unfinished=3
    )
    md, page = report.write(run_dir)
    text = md.read_text()
    assert _versus_row(text, "### agent against agent", "strong", "weak")["verdict"] == "different"
    assert _versus_row(text, "### context against context", "none", "full")["verdict"] == "within noise"
    assert "Over 320 episodes (3 of them unfinished)" in text
    headline = next(t for t in md_tables(text) if t and "pass@2" in t[0] and "arch-verified" in t[0])
    assert sum(int(r["unfinished"]) for r in headline if r["agent"] != "all") == 3
    assert next(r for r in headline if r["agent"] == "all")["unfinished"] == "3"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    st = metrics["statistics"]
    (pair,) = st["differences"]["agent"]
    diff = pair["metrics"]["correct"]["difference"]
    assert pair["metrics"]["correct"]["within_noise"] is False and diff["low"] < 0.5 < diff["high"]
    overall = st["overall"]["correct"]
    assert overall["low"] < metrics["overall"]["correct"] == overall["estimate"] < overall["high"]
    assert st["overall"]["unfinished"] == 3
    # the turn table per agent and context level, with intervals; its plots with error bars
    turn_rows = md_tables(text.split("### Correct rate by turn, per agent and context level")[1])[0]
    assert {(r["agent"], r["context"]) for r in turn_rows} == {
        (a, c) for a in ("strong", "weak") for c in CONTEXTS
    }
    assert all("[" in r["by turn 1"] for r in turn_rows)
    for name in ("differences", "turns_context", "turns", "context"):
        assert (run_dir / "plots" / f"{name}.png").stat().st_size > 1000
    # the same store reports the same intervals
    report.write(run_dir, plots=False)
    assert json.loads((run_dir / "metrics.json").read_text())["statistics"] == st


def test_a_finished_run_shows_no_unfinished_column(tmp_path: Path) -> None:
    run_dir = make_known_store(tmp_path / "run", {"a": 0.5}, range(4), seed=1, contexts=("none",))
    md, _ = report.write(run_dir, plots=False)
    text = md.read_text()
    assert "unfinished" not in md_tables(text)[1][0] and "Over 8 episodes:" in text


def test_compare_says_what_differs_and_restricts_to_common_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = make_known_store(tmp_path / "a", {"strong": 0.8, "weak": 0.3}, range(40), seed=1, contexts=("none",))
    b = make_known_store(
        tmp_path / "b", {"strong": 0.8, "weak": 0.8}, range(5, 45), seed=2, contexts=("none",), history="none"
    )
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    differs = md_tables(text.split("## What differs")[1])[0]
    by_key = {r["key"]: r for r in differs}
    assert (by_key["history"]["a"], by_key["history"]["b"]) == ("full", "none")
    assert "resolved_tasks" in by_key and "name" not in by_key
    assert "Warning: the runs' task grids differ" in text and "over the 35 tasks all runs share" in text
    overall = md_tables(text.split("## Overall")[1])[0]
    assert [r["episodes"] for r in overall] == ["140", "140"]  # 35 tasks x 2 agents x 2 samples
    assert _versus_row(text, "## Against a", "b", "a")["verdict"] == "different"
    assert (
        _versus_row(text, "## Against a", "b: weak / m / none", "a: weak / m / none")["verdict"]
        == "different"
    )
    assert _versus_row(text, "## Against a", "b: strong / m / none", "a: strong / m / none")["verdict"] == (
        "within noise"
    )
    assert int(_versus_row(text, "## Against a", "b", "a")["tasks"]) == 35

    page = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "-o", str(page)]) == 0
    assert page.read_text().count("data:image/png;base64,") == 3
    notes = tmp_path / "cmp.md"
    assert main(["compare", str(a), str(b), "-o", str(notes)]) == 0
    assert sorted(p.name for p in (tmp_path / "cmp-plots").iterdir()) == [
        "correct.png",
        "differences.png",
        "turns.png",
    ]
    assert "](cmp-plots/differences.png)" in notes.read_text()


def test_compare_of_runs_with_the_same_experiment_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = make_known_store(tmp_path / "a", {"x": 0.5}, range(6), seed=1, contexts=("none",))
    b = make_known_store(tmp_path / "b", {"x": 0.5}, range(6), seed=2, contexts=("none",))
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "The runs' resolved experiments are identical." in text and "task grids differ" not in text
