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
