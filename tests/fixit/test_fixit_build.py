"""Pairs, selection, split and output of ``fixit build`` on stores written through the store's API.

These stores hold verdicts of every kind, including those a CPU cannot produce (timeouts, timing,
GPU instruction checks); test_fixit_run.py builds from a real replayed run instead.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fixit_helpers import SYSTEM, K, kernel, make_run, scenario
from warpgym.agents.extract import extract_candidate
from warpgym.experiments import config
from warpgym.experiments.cli import main
from warpgym.experiments.fixit import (
    BuildOptions,
    Caps,
    build,
    deduplicate,
    find_pairs,
    load_attempts,
    similarity,
    split_groups,
)
from warpgym.experiments.fixit.select import balance


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "runs" / "synthetic", scenario())


def _shape(pairs: list) -> Counter:
    return Counter((p.task, p.kind, p.source, p.wrong.turn, p.fixed.turn) for p in pairs)


def test_pairs_within_episodes_every_failure_to_its_first_fix(run: Path) -> None:
    found = find_pairs(load_attempts(run))
    assert _shape(found.pairs) == Counter(
        {
            ("math/add", "numerical", "episode", 1, 3): 1,
            ("math/add", "compile", "episode", 2, 3): 1,
            ("math/add", "numerical", "episode", 1, 2): 2,  # sample 1 (a copy) and m2's episode
            ("math/mul", "runtime", "episode", 1, 2): 1,
            ("activation/relu", "timeout", "episode", 1, 2): 1,
            ("activation/relu", "slow", "episode", 2, 3): 1,
            ("reduce/sum-rows", "missing_instruction", "episode", 1, 2): 1,
            ("reduce/sum-rows", "numerical", "episode", 2, 3): 1,
        }
    )
    assert sorted(why for _, why in found.unpaired) == ["never fixed in its episode"] * 2  # m2's policy turns


def test_adjacent_only_keeps_the_failure_the_fix_answered(run: Path) -> None:
    found = find_pairs(load_attempts(run), adjacent_only=True)
    add_m1 = [
        p for p in found.pairs if p.task == "math/add" and p.wrong.model == "m1" and p.wrong.sample == 0
    ]
    assert [(p.kind, p.wrong.turn) for p in add_m1] == [("compile", 2)]
    assert any("adjacent" in why for _, why in found.unpaired)


def test_cross_model_pairs_fix_another_models_failures(run: Path) -> None:
    found = find_pairs(load_attempts(run), cross_model=True, similarity=similarity)
    cross = [p for p in found.pairs if p.source == "cross-model"]
    assert (
        sorted((p.task, p.kind, p.wrong.model, p.fixed.model) for p in cross)
        == [("math/mul", "policy", "m2", "m1")] * 2
    )
    assert all(p.fixed.candidate == K[5] and p.similarity is not None for p in cross)
    assert not found.unpaired


def test_duplicates_and_near_duplicates_are_dropped_with_reasons(run: Path) -> None:
    pairs = find_pairs(load_attempts(run)).pairs
    kept, drops = deduplicate(pairs, 0.9)
    # The copy's fix came right after it (gap 1), so the copy is kept and the original (gap 2) goes.
    assert [(d.reason, d.pair.wrong.candidate, d.pair.gap) for d in drops] == [("duplicate", K[1], 2)]
    assert len(kept) == len(pairs) - 1
    # A small edit of both sides is a near-duplicate at 0.9, but not at a stricter threshold.
    near = kernel(2, tweak=" * 2")
    assert 0.9 <= similarity(K[2], near) < 1.0
    twin = next(p for p in kept if p.wrong.candidate == K[2])
    copy = type(twin)(
        type(twin.wrong)(**{**twin.wrong.__dict__, "candidate": near, "episode_id": 99}),
        twin.fixed,
        twin.kind,
        "episode",
    )
    _, drops = deduplicate([twin, copy], 0.9)
    assert [d.reason for d in drops] == ["near-duplicate"] and twin.id in drops[0].detail
    assert len(deduplicate([twin, copy], 0.995)[0]) == 2
    other_kind = type(twin)(copy.wrong, twin.fixed, "numerical", "episode")  # another lesson: both stay
    assert len(deduplicate([twin, other_kind], 0.9)[0]) == 2


def _unique(run: Path) -> list:
    return deduplicate(find_pairs(load_attempts(run), cross_model=True, similarity=similarity).pairs)[0]


def test_caps_per_task_and_kind_and_total(run: Path) -> None:
    pairs = _unique(run)  # add: 2 numerical, 1 compile; mul: runtime, 2 policy; relu: timeout, slow; ...
    kept, drops = balance(pairs, Caps(per_task_kind=1))
    assert max(Counter((p.task, p.kind) for p in kept).values()) == 1
    assert Counter(d.reason for d in drops) == {"cap-task-kind": 2}  # one add numerical, one mul policy
    kept, drops = balance(pairs, Caps(per_task_kind=None, per_kind=1))
    assert max(Counter(p.kind for p in kept).values()) == 1 and len(kept) == 7
    kept, drops = balance(pairs, Caps(per_task_kind=None, total=3))
    assert len(kept) == 3 and {d.reason for d in drops} == {"cap-total"}
    assert "--max-pairs" in drops[0].detail


def test_balance_spreads_a_binding_cap_over_kinds_rarest_first(run: Path) -> None:
    pairs = _unique(run)
    kept, _ = balance(pairs, Caps(per_task_kind=None, per_task=1))
    # One pair per task, and the rarest kinds win: no task falls back on its most common kind.
    assert sorted((p.task, p.kind) for p in kept) == [
        ("activation/relu", "slow"),
        ("math/add", "compile"),
        ("math/mul", "runtime"),
        ("reduce/sum-rows", "missing_instruction"),
    ]
    kept, _ = balance(pairs, Caps(per_task_kind=None, total=4))
    assert len({p.kind for p in kept}) == 4
    kept, drops = balance(pairs, Caps(per_task_kind=None, kind_ratio=1.0))
    assert set(Counter(p.kind for p in kept).values()) == {1}
    assert {d.reason for d in drops} == {"cap-kind-ratio"}


def test_split_by_task_puts_no_task_in_both(run: Path) -> None:
    pairs = _unique(run)
    for seed in range(6):
        groups = split_groups(pairs, val_fraction=0.3, seed=seed)
        val = {t for t, s in groups.items() if s == "validation"}
        train = {t for t, s in groups.items() if s == "train"}
        assert val and train and not val & train and val | train == {p.task for p in pairs}
    explicit = split_groups(pairs, val_groups=["math/mul"])
    assert [t for t, s in explicit.items() if s == "validation"] == ["math/mul"]
    assert set(split_groups(pairs, val_fraction=0.0).values()) == {"train"}
    by_category = split_groups(pairs, by="category", val_fraction=0.3)
    assert set(by_category) == {"math", "activation", "reduce"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_build_writes_both_layouts_a_report_and_a_card(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    result = build([run], out, BuildOptions(cross_model=True, val_fraction=0.3, seed=1))
    examples = result.examples
    assert len(examples) == 10 and result.report["dropped"] == {"duplicate": 1}
    entry = {"math/add": "add", "math/mul": "mul", "activation/relu": "relu", "reduce/sum-rows": "sum_rows"}
    splits: dict[str, set[str]] = {}
    for split in ("train", "validation"):
        openai_rows, hf_rows = _rows(out / "openai" / f"{split}.jsonl"), _rows(out / "hf" / f"{split}.jsonl")
        assert len(openai_rows) == len(hf_rows) == result.report["splits"][split]["examples"]
        splits[split] = {r["task"] for r in hf_rows}
        for o, h in zip(openai_rows, hf_rows, strict=True):
            assert set(o) == {"messages"}
            roles = [m["role"] for m in o["messages"]]
            assert roles == ["system", "user", "user", "assistant"]  # the answer is the only assistant turn
            assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in o["messages"])
            assert o["messages"][0]["content"] == SYSTEM  # the run's own system message
            assert h["prompt"] == o["messages"][:-1] and h["completion"] == o["messages"][-1:]
            attempt, answer = o["messages"][2]["content"], o["messages"][3]["content"]
            pair = next(e.pair for e in examples if e.pair.id == h["id"])
            assert pair.wrong.candidate.strip() in attempt and "Verdict:" in attempt
            assert "Find the cause from the verdict" in attempt  # the prompts' feedback template
            assert extract_candidate(answer, entry[h["task"]]).code.strip() == pair.fixed.candidate.strip()
            assert h["explanation_source"] == "template" and answer.startswith("The previous candidate")
    assert splits["train"] and splits["validation"] and not splits["train"] & splits["validation"]

    pairs = _rows(out / "pairs.jsonl")
    assert len(pairs) == 10 and {p["kind"] for p in pairs} == {
        "compile",
        "policy",
        "timeout",
        "runtime",
        "numerical",
        "missing_instruction",
        "slow",
    }
    assert all(p["diff"].startswith("--- failing.py") for p in pairs)
    card = (out / "README.md").read_text()
    assert "10 examples" in card and "**10 from a plain template**" in card
    assert f"{len(_rows(out / 'openai' / 'train.jsonl'))} train" in card
    report = (out / "report.md").read_text()
    assert "duplicate of" in report and json.loads((out / "report.json").read_text())["kept"] == 10
    compare = config.load(out / "compare.toml")
    assert compare.resolved_tasks == sorted(splits["validation"])


def test_join_user_folds_the_attempt_into_the_task_message(run: Path, tmp_path: Path) -> None:
    result = build([run], tmp_path / "data", BuildOptions(join_user=True, val_fraction=0))
    for ex in result.examples:
        assert [m["role"] for m in ex.messages] == ["system", "user", "assistant"]
        assert (
            ex.messages[1]["content"].startswith("Write `")
            and "Your previous candidate" in ex.messages[1]["content"]
        )


def test_a_model_explains_through_any_provider_with_a_template_fallback(run: Path, tmp_path: Path) -> None:
    replay = tmp_path / "explainer.jsonl"
    lines = [
        {
            "task": t,
            "sample": 0,
            "turn": 1,
            "loop": "fixit-explain",
            "text": f"The {t} kernel failed because of X; the fix changes Y so Z holds.\n```python\nx\n```",
        }
        for t in ("math/add", "math/mul", "activation/relu")
    ]  # none for reduce/sum-rows
    replay.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code = main(
        [
            "fixit",
            "build",
            str(run),
            "--out",
            str(tmp_path / "data"),
            "--explainer",
            f"replay:{replay}",
            "--val-fraction",
            "0",
        ]
    )
    assert code == 0
    pairs = _rows(tmp_path / "data" / "pairs.jsonl")
    by_task = {p["task"]: p for p in pairs}
    assert by_task["math/add"]["explanation_source"] == f"model:replay:{replay}"
    assert by_task["math/add"]["explanation"] == (
        "The math/add kernel failed because of X; the fix changes Y so Z holds."
    )  # the code block is gone
    assert by_task["reduce/sum-rows"]["explanation_source"] == "template"
    assert "explainer failed" in by_task["reduce/sum-rows"]["explanation_note"]
    card = (tmp_path / "data" / "README.md").read_text()
    assert f"written by `replay:{replay}`" in card and "from a plain template" in card


def test_the_cli_reports_counts_and_refuses_a_missing_run(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = f"fixit build synthetic --runs-root {run.parent} --out {tmp_path / 'd'} --per-task-kind 1 "
    args += "--cross-model --val-tasks math/mul,math/nope"
    assert main(args.split()) == 0
    out = capsys.readouterr().out
    assert "examples" in out and "cap-task-kind" in out and "duplicate" in out
    assert "--val-tasks named math/nope" in out
    val = [json.loads(line)["task"] for line in (tmp_path / "d" / "hf" / "validation.jsonl").open()]
    assert set(val) == {"math/mul"}
    assert main(["fixit", "build", str(tmp_path / "nowhere"), "--out", str(tmp_path / "e")]) == 2
    assert "no run at" in capsys.readouterr().err
