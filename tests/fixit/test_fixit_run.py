"""``fixit build`` on a real run: replayed answers, played by the experiment runner, judged for real by
the CPU evaluator (Triton's interpreter), stored, then turned into training data.

One task (activation/relu, among the cheapest to check) and two replayed models:
- model a, sample 0: the grid drops the tail block (numerical), then the reference solution;
- model a, sample 1: a Triton function that does not exist (compile), then the reference;
- model b, sample 0: an index error on the host (runtime), then torch.relu on the host (policy);
  never fixed in its episode, so only cross-model pairing (with model a's kernel) uses it;
- model b, sample 1: the reference at once (nothing to pair).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warpgym.agents.extract import extract_candidate
from warpgym.experiments import config, rundir, runner
from warpgym.experiments.cli import main
from warpgym.experiments.store import Store
from warpgym.tasks import get_task

TASK = "activation/relu"
GOOD = get_task(TASK).solution_source()
WRONG = {
    "numerical": GOOD.replace("triton.cdiv(n, block)", "n // block"),
    "compile": GOOD.replace("tl.maximum(x, 0.0)", "tl.relu_max(x, 0.0)"),
    "runtime": GOOD.replace("n = x.numel()", "n = x.shape[5]"),
    "policy": "import torch\nimport triton\n\n\ndef relu(x: torch.Tensor) -> torch.Tensor:\n"
    "    return torch.relu(x)\n",
}


def fenced(source: str) -> str:
    return f"Here is the kernel.\n\n```python\n{source}\n```\n"


def _replay(path: Path, answers: dict[int, list[str]]) -> Path:
    rows = [
        {"task": TASK, "sample": s, "turn": t, "text": fenced(src), "input_tokens": 100, "output_tokens": 50}
        for s, turns in answers.items()
        for t, src in enumerate(turns, 1)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixit-run")
    _replay(root / "a.jsonl", {0: [WRONG["numerical"], GOOD], 1: [WRONG["compile"], GOOD]})
    _replay(root / "b.jsonl", {0: [WRONG["runtime"], WRONG["policy"]], 1: [GOOD, GOOD]})
    (root / "exp.toml").write_text(f"""
name = "fixit-test"
tasks = ["{TASK}"]
agents = ["fix-retry"]
models = [{{ spec = "replay:a.jsonl", name = "a" }}, {{ spec = "replay:b.jsonl", name = "b" }}]
samples = 2
max_turns = 2

[run]
devices = "cpu"
workers = 1
concurrency = 2
heldout = false

[metrics]
pass_k = [1]
""")
    exp = config.load(root / "exp.toml")
    run_dir = root / "runs" / "fixit-test"
    outcome = runner.run_experiment(exp, run_dir=run_dir)
    assert outcome.finished == outcome.total == 4 and not outcome.errors
    return run_dir


def test_pairs_from_a_replayed_run_are_classified_by_the_real_verdicts(played: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert main(["fixit", "build", str(played), "--out", str(out), "--cross-model"]) == 0
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    got = sorted(
        (p["kind"], p["source"], p["wrong"]["model"], p["wrong"]["turn"], p["fixed"]["model"]) for p in pairs
    )
    assert got == [
        ("compile", "episode", "a", 1, "a"),
        ("numerical", "episode", "a", 1, "a"),
        ("policy", "cross-model", "b", 2, "a"),
        ("runtime", "cross-model", "b", 1, "a"),
    ]
    by_kind = {p["kind"]: p for p in pairs}
    assert by_kind["compile"]["headline"].endswith("has no attribute 'relu_max'\")")
    assert "IndexError" in by_kind["runtime"]["headline"]
    assert by_kind["policy"]["headline"].startswith("[torch-compute] torch.relu()")
    assert "outside" in by_kind["numerical"]["headline"]

    # The prompt is the run's own: the system and task messages the replayed model was sent.
    store = Store(played / rundir.STORE_NAME, readonly=True)
    try:
        sent = store.turn_records(store.episodes()[0]["id"])[0]["messages"][:2]
    finally:
        store.close()
    rows = [json.loads(line) for line in (out / "openai" / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 4  # one task: every example is in train, none in validation
    assert (out / "openai" / "validation.jsonl").read_text() == ""
    for row in rows:
        system, task, attempt, answer = row["messages"]
        assert [system, task] == sent
        assert attempt["role"] == "user" and answer["role"] == "assistant"
        assert "Verdict:" in attempt["content"] and "```python" in attempt["content"]
        assert extract_candidate(answer["content"], "relu").code.strip() == GOOD.strip()


def test_without_cross_model_the_unfixed_episode_gives_nothing(played: Path, tmp_path: Path) -> None:
    from warpgym.experiments.fixit import BuildOptions, build

    result = build([played], tmp_path / "data", BuildOptions())
    assert sorted(e.pair.kind for e in result.examples) == ["compile", "numerical"]
    assert result.report["unpaired_failures"] == {"never fixed in its episode": 2}
