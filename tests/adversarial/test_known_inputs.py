"""Inputs a candidate could know in advance: every input is drawn from seeds derived from a root drawn for
each evaluation (env/judge/seeds.py), so answers stored for the public seeds' inputs are worth nothing.

The stored-answer candidate is built here from the inputs a judge drawing from the public seeds gives (the
seeds forced back to their roles), and passes that judge: the hole is real. The default judge rejects it.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
import torch
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.env.judge import channel
from warpgym.env.judge.baselines import Baselines
from warpgym.env.judge.pool import Worker
from warpgym.env.judge.seeds import InputSeeds, derive
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task

from .conftest import candidate_source, explain

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
ROOT = 0x5EC2E7_0DD_F00D


def _public_seeds(patch: pytest.MonkeyPatch) -> None:
    """The judge as it was: each role's inputs drawn from the role itself, the same in every evaluation."""
    patch.setattr(InputSeeds, "seed", lambda self, role, purpose="check": role)
    patch.setattr(InputSeeds, "salt", property(lambda self: 0))


def _recording(patch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every input set the judge sends to the run worker, as it is sent."""
    seen: list[dict[str, Any]] = []
    real = channel.call_inputs

    def call_inputs(*args: Any, **kwargs: Any) -> m.Inputs:
        inputs = real(*args, **kwargs)
        seen.append({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()})
        return inputs

    patch.setattr(channel, "call_inputs", call_inputs)
    return seen


def _stored_answers(inputs: list[torch.Tensor]) -> str:
    """The candidate with its table: the sum of each input, keyed by its elements at positions that tell
    every two inputs with different sums apart (one seed's normal and outlier inputs share most values)."""
    table = {}
    for x in inputs:
        table[tuple(x.flatten().float().tolist())] = float(x.double().sum())
    positions = [0, 1]
    for a, b in itertools.combinations(table, 2):
        if table[a] != table[b] and all(a[p] == b[p] for p in positions):
            positions.append(next(p for p, (u, v) in enumerate(zip(a, b, strict=False)) if u != v))
    lines = [f"    k{p} = tl.load(x_ptr + {p}).to(tl.float32)" for p in positions]
    for values, answer in table.items():
        hit = " & ".join(f"(k{p} == {values[p]!r})" for p in positions)
        lines.append(f"    acc = tl.where({hit}, {answer!r}, acc)")
    return candidate_source("stored_answers").replace("    # TABLE", "\n".join(lines))


def test_answers_stored_for_the_public_seeds_pass_only_a_judge_that_draws_from_them(cpu_evaluator):
    task = get_task("reduce/sum-all")
    with pytest.MonkeyPatch.context() as patch:
        _public_seeds(patch)
        seen = _recording(patch)
        honest = cpu_evaluator.evaluate(task, task.solution_source(), DEV)
        assert honest.correct is True, explain(honest)
        source = _stored_answers([inputs["x"] for inputs in seen])
        fooled = cpu_evaluator.evaluate(task, source, DEV)
    assert fooled.correct is True and not fooled.violations, explain(fooled)
    assert len([c for c in fooled.cases if c.passed]) >= 6  # the checks and the late re-check all passed
    judged = cpu_evaluator.evaluate(task, source, DEV)
    assert judged.correct is False, explain(judged)
    assert any(c.passed is False for c in judged.cases), explain(judged)


@pytest.mark.parametrize("task_id", ["reduce/sum-all", "reduce/argmax", "random/dropout", "random/randint"])
def test_reference_solutions_pass_under_other_roots(cpu_evaluator, task_id):
    task = get_task(task_id)
    for root in (1, 2**62 + 12345):
        result = cpu_evaluator.evaluate(task, task.solution_source(),
                                        dataclasses.replace(DEV, input_seed=root))
        assert result.correct is True and result.input_seed == root, explain(result)


def _inputs_and_verdict(evaluator: Evaluator, options: EvalOptions
                        ) -> tuple[list[dict[str, Any]], EvalResult]:
    task = get_task("normalization/softmax")
    with pytest.MonkeyPatch.context() as patch:
        seen = _recording(patch)
        result = evaluator.evaluate(task, task.solution_source(), options)
    return seen, result


def _same_inputs(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and all(torch.equal(x["x"], y["x"]) for x, y in zip(a, b, strict=True))


def _verdict(result: EvalResult) -> dict[str, Any]:
    return {k: v for k, v in result.to_dict().items() if k not in ("seconds", "stdout")}


def test_a_root_replays_its_inputs_and_verdict_and_another_root_draws_others(cpu_evaluator):
    first, one = _inputs_and_verdict(cpu_evaluator, dataclasses.replace(DEV, input_seed=11))
    again, two = _inputs_and_verdict(cpu_evaluator, dataclasses.replace(DEV, input_seed=11))
    other, three = _inputs_and_verdict(cpu_evaluator, dataclasses.replace(DEV, input_seed=12))
    drawn, four = _inputs_and_verdict(cpu_evaluator, DEV)
    assert one.correct is True and one.input_seed == 11, explain(one)
    assert _same_inputs(first, again) and _verdict(one) == _verdict(two)
    assert three.input_seed == 12 and len(other) == len(first)
    assert not any(torch.equal(x["x"], y["x"]) for x, y in zip(first, other, strict=True))
    assert four.input_seed is not None and four.input_seed not in (11, 12)
    assert not any(torch.equal(x["x"], y["x"]) for x, y in zip(first, drawn, strict=True))
    assert [c.seed for c in one.cases] == [c.seed for c in three.cases]  # reports name the roles
    assert {c.seed for c in one.cases} <= {*get_task("normalization/softmax").seeds, *range(7900, 7940)}


def test_derived_seeds_differ_by_root_role_and_purpose():
    seeds = InputSeeds(ROOT)
    assert seeds.seed(0) == InputSeeds(ROOT).seed(0) == derive(ROOT, "check", 0)
    values = {seeds.seed(0), seeds.seed(1), seeds.seed(0, "timing"), InputSeeds(ROOT + 1).seed(0), seeds.salt}
    assert len(values) == 5 and all(0 <= v < 2**63 for v in values)
    with pytest.raises(ValueError):
        EvalOptions(input_seed=-1)
    with pytest.raises(ValueError):
        EvalOptions(input_seed=2**63)


def test_a_random_op_s_seeds_keep_their_single_bit_differences_and_move_with_the_root():
    task = get_task("random/dropout")
    case = task.cases("dev")[0]

    def kernel_seeds(root: int) -> list[int]:
        seeds = InputSeeds(root)
        return [task.make_inputs(case, seeds.sampler(r, "normal", "meta"))["seed"] for r in task.seeds]

    one, two = kernel_seeds(1), kernel_seeds(2)
    assert len(set(one)) == 4 and all(bin(a ^ b).count("1") <= 2 for a, b in itertools.combinations(one, 2))
    assert not set(one) & set(two)
    fixed = [task.make_inputs(case, InputSeeds(root).sampler(0, "normal", "cpu"))["x"] for root in (1, 2)]
    assert not torch.equal(*fixed)  # the inputs shared by a case's seeds change with the root too


def test_the_timing_sets_are_the_baselines_sets_and_the_checks_are_not(cpu_evaluator):
    task = get_task("math/add")
    case = task.cases("dev")[0]
    ev = cpu_evaluator.evaluation(task, task.solution_source(), dataclasses.replace(DEV, input_seed=ROOT))
    staged = [channel.call_inputs(ev, case, s, "normal", purpose="timing") for s in (0, 1, 2)]
    sides = Baselines(task, case, "cpu", alone=True, out_of_memory=RuntimeError, seeds=ev.seeds)
    sides.prepare()
    assert all(torch.equal(a["x"], b["x"]) for a, b in zip(staged, sides.inputs, strict=True))
    checked = channel.call_inputs(ev, case, 0, "normal")
    assert not torch.equal(checked["x"], staged[0]["x"])


def _ints_and_texts(value: Any, out: list[Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _ints_and_texts(k, out)
            _ints_and_texts(v, out)
    elif isinstance(value, list | tuple | set):
        for v in value:
            _ints_and_texts(v, out)
    elif isinstance(value, int | str | bytes):
        out.append(value)


@pytest.mark.parametrize("task_id", ["reduce/sum-all", "random/dropout"])
def test_the_root_reaches_no_worker_and_no_feedback(cpu_evaluator, task_id):
    sent: list[dict[str, Any]] = []
    real = Worker.request

    def request(self: Worker, message: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        sent.append(message)
        return real(self, message, *args, **kwargs)

    task = get_task(task_id)
    for options in (dataclasses.replace(DEV, input_seed=ROOT), DEV):
        sent.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Worker, "request", request)
            result = cpu_evaluator.evaluate(task, task.solution_source(), options)
        root = result.input_seed
        assert result.correct is True and root is not None, explain(result)
        seeds = InputSeeds(root)
        secret = {root, seeds.salt, *(seeds.seed(r, p) for r in (*range(8), *range(7900, 7940))
                                      for p in ("check", "timing"))}
        assert any(msg.get("op") == "run" for msg in sent)
        found: list[Any] = []
        for msg in sent:
            _ints_and_texts(msg, found)
        assert not secret & {v for v in found if isinstance(v, int)}
        assert not [v for v in found if isinstance(v, str | bytes) and str(root) in str(v)]
        assert str(root) not in result.feedback and str(root) not in result.stdout


def test_fresh_roots_grow_no_cache_on_disk_or_in_the_evaluator(cpu_evaluator, tmp_path, monkeypatch):
    monkeypatch.setenv("WARPGYM_CACHE_DIR", str(tmp_path))
    task = get_task("math/add")
    memo = cpu_evaluator.caches.references.memo

    def state() -> tuple[list[tuple[str, int]], int]:
        files = sorted((str(p.relative_to(tmp_path)), p.stat().st_size)
                       for p in tmp_path.rglob("*") if p.is_file())
        return files, len(memo)

    cpu_evaluator.evaluate(task, task.solution_source(), DEV)
    before = state()
    roots = []
    for _ in range(3):
        result = cpu_evaluator.evaluate(task, task.solution_source(), DEV)
        assert result.correct is True, explain(result)
        roots.append(result.input_seed)
    assert len(set(roots)) == 3
    assert state() == before
    cpu_evaluator.evaluate(task, task.solution_source(), dataclasses.replace(DEV, input_seed=ROOT))
    assert len(memo) > before[1] or len(memo) == memo.size  # a chosen root's references are shared
