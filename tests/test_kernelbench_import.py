"""Imported KernelBench-format problems (fixtures written for these tests) and ModelNew candidates, judged
on the CPU in Triton's interpreter: import, sizes, the triviality audit, strict and allow-torch verdicts,
and an experiment over imported tasks with replayed answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.env.judge import triviality
from warpgym.tasks.importers import SuiteSourceError, import_suite, scaling

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench"
CANDIDATES = FIXTURES / "candidates"


@pytest.fixture(scope="module")
def suite():  # noqa: ANN201
    done = import_suite("kernelbench", FIXTURES)
    return {t.id: t for t in done.tasks}, done.failures


@pytest.fixture(scope="module")
def evaluator():  # noqa: ANN201
    with Evaluator(device="cpu") as ev:
        yield ev


def _judge(evaluator: Evaluator, task, name: str, **options):  # noqa: ANN001, ANN202
    source = (CANDIDATES / name).read_text()
    return evaluator.evaluate(
        task, Candidate(source), EvalOptions(device="cpu", shape_sets=("dev",), **options)
    )


def test_import_names_sizes_and_counts(suite) -> None:  # noqa: ANN001
    tasks, failures = suite
    assert sorted(tasks) == [
        "kernelbench/level1/1_Scale_rows",
        "kernelbench/level1/2_Softsign_huge",
        "kernelbench/level1/3_Tiny_mean_abs",
        "kernelbench/level1/4_Clamp_fixed",
        "kernelbench/level2/1_Linear_bias_tanh",
    ]
    huge = tasks["kernelbench/level1/2_Softsign_huge"]
    assert huge.cases("bench") == [{"batch": 16384, "features": 1 << 20}]  # its own sizes, for the GPU
    dev, heldout = huge.cases("dev")[0], huge.cases("heldout")[0]
    assert dev != heldout
    assert 2 * dev["batch"] * dev["features"] <= scaling.DEV_ELEMENTS  # input and output, CPU-sized
    linear = tasks["kernelbench/level2/1_Linear_bias_tanh"]
    case = linear.cases("dev")[0]
    assert linear.model is not None and linear.model.init_inputs(case)[2] == (case["out_features"],)
    assert linear.flops(case) == 2 * case["batch_size"] * case["in_features"] * case["out_features"]
    assert set(linear.model.state(case)) == {"proj.weight", "proj.bias", "shift"}
    assert "shifted right by" in linear.model.sizes_note
    clamp = tasks["kernelbench/level1/4_Clamp_fixed"]
    assert clamp.cases("dev") == clamp.cases("bench") == [{}]
    assert "no module-level size constants" in clamp.model.sizes_note
    assert "class Model(nn.Module)" in clamp.statement() and "ModelNew" in clamp.statement()
    (broken,) = failures.values()
    assert "5_Broken_import.py" in broken and "a_module_that_does_not_exist" in broken


def test_the_statement_a_model_reads_never_describes_the_held_out_sizes(suite, capsys) -> None:  # noqa: ANN001
    """The sizes rule says how heldout was derived ("heldout: by 1"): with the dev sizes and the problem's
    own, that is the held-out sizes. ``tasks show`` prints it, marked, after the statement."""
    from warpgym.env.environment import KernelEnv
    from warpgym.experiments.cli import main

    task = suite[0]["kernelbench/level2/1_Linear_bias_tanh"]
    env = KernelEnv(task, device="cpu", evaluator=object())  # reset never evaluates
    obs, info = env.reset(seed=0)
    heldout = task.cases("heldout")[0]
    assert "heldout" in task.model.sizes_note
    for text in (obs["task"], info["statement"]):
        assert "heldout" not in text.lower() and task.model.sizes_note not in text
        assert "shifted right" not in text and ", ".join(f"{k}={v}" for k, v in heldout.items()) not in text
    assert main(["tasks", "show", task.id]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(obs["task"])
    assert f"Sizes (not shown to a model): {task.model.sizes_note}." in shown


def test_inputs_are_the_problems_own_and_seeded(suite) -> None:  # noqa: ANN001
    from warpgym.tasks import Sampler

    task = suite[0]["kernelbench/level1/1_Scale_rows"]
    case = task.cases("dev")[0]
    a, b = (task.make_inputs(case, Sampler(s, "problem", "cpu"))["x"] for s in (0, 1))
    assert a.shape == (case["rows"], case["cols"]) and not a.equal(b)
    assert a.equal(task.make_inputs(case, Sampler(0, "problem", "cpu"))["x"])


def test_bad_paths_give_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from warpgym.experiments.cli import main

    with pytest.raises(SuiteSourceError, match="no such file"):
        import_suite("kernelbench", tmp_path / "missing")
    with pytest.raises(SuiteSourceError, match="no kernelbench problem files"):
        import_suite("kernelbench", tmp_path)
    with pytest.raises(SuiteSourceError, match="unknown suite format"):
        import_suite("tritonbench", tmp_path)
    assert main(["tasks", "import", "kernelbench", str(tmp_path / "missing"), "--no-save"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_the_triviality_audit(suite) -> None:  # noqa: ANN001
    tasks = suite[0]
    assert triviality.audit(tasks["kernelbench/level1/4_Clamp_fixed"])["trivial"] == ["input"]
    assert triviality.audit(tasks["kernelbench/level1/1_Scale_rows"])["trivial"] == []
    # Outputs near 1e-7: zeros are within any absolute bound, but not the norm-wise one.
    assert triviality.audit(tasks["kernelbench/level1/3_Tiny_mean_abs"])["trivial"] == []


def test_an_answer_that_passes_one_check_flags_the_task_with_its_count(suite, monkeypatch) -> None:  # noqa: ANN001
    """Inputs are drawn afresh for every evaluation: an answer passing one check's draw passes some
    evaluations outright, so one check is enough to flag the task."""
    task = suite[0]["kernelbench/level1/1_Scale_rows"]
    real, zeros_seen = triviality.compare_outputs, []

    def zeros_pass_the_first_check(outputs, expected, meta, task_):  # noqa: ANN001, ANN202
        if all(not isinstance(o, torch.Tensor) or not o.any() for o in outputs):
            zeros_seen.append(1)
            if len(zeros_seen) == 1:
                return {"passed": True}
        return real(outputs, expected, meta, task_)

    monkeypatch.setattr(triviality, "compare_outputs", zeros_pass_the_first_check)
    result = triviality.audit(task)
    assert result["checks"] == len(zeros_seen) > 1
    assert result["trivial"] == ["zeros"] and result["passed"]["zeros"] == 1
    assert triviality.describe(result) == f"TRIVIAL: passed by zeros (1 of {result['checks']} checks)"


def test_a_correct_triton_model_is_accepted(suite, evaluator) -> None:  # noqa: ANN001
    result = _judge(evaluator, suite[0]["kernelbench/level1/1_Scale_rows"], "scale_rows_ok.py")
    assert result.correct is True and result.mode == "strict", result.feedback


def test_parameters_are_copied_by_name(suite, evaluator) -> None:  # noqa: ANN001
    task = suite[0]["kernelbench/level2/1_Linear_bias_tanh"]
    result = _judge(evaluator, task, "linear_tanh_ok.py")  # builds its layers in another order
    assert result.correct is True, result.feedback
    renamed = _judge(evaluator, task, "linear_tanh_renamed.py")
    assert renamed.correct is False and "missing proj.bias, proj.weight" in renamed.feedback


def test_a_constructor_cannot_compute_on_the_parameters_it_will_be_given(suite, evaluator) -> None:  # noqa: ANN001
    """The constructor runs unwatched, but not under the reference's seed: what it derives from its own fresh
    parameters (a bias folded into a plain attribute) does not match the parameters later loaded."""
    result = _judge(evaluator, suite[0]["kernelbench/level2/1_Linear_bias_tanh"], "linear_tanh_ctor_fold.py")
    assert result.correct is False and any(c.passed is False for c in result.cases), result.feedback


def test_a_constructor_that_reseeds_the_generator_is_refused(suite, evaluator) -> None:  # noqa: ANN001
    """Seeding with the reference's seed would rebuild its parameters, and the fold would then match."""
    task = suite[0]["kernelbench/level2/1_Linear_bias_tanh"]
    result = _judge(evaluator, task, "linear_tanh_ctor_reseed.py")
    assert result.correct is not True and "rng-seeded" in {v.code for v in result.violations}, result.feedback


def test_a_constructor_cannot_rebuild_the_reference_s_parameters_from_a_generator_of_its_own(
        suite, evaluator) -> None:  # noqa: ANN001
    """Each evaluation draws the reference model's parameters under a seed derived from its secret root: what
    a constructor rebuilds from seed 0 on a private generator no longer matches what it is given."""
    task = suite[0]["kernelbench/level2/1_Linear_bias_tanh"]
    result = _judge(evaluator, task, "linear_tanh_ctor_private_generator.py")
    assert result.correct is False and any(c.passed is False for c in result.cases), result.feedback


def test_each_evaluation_draws_the_reference_model_s_parameters_under_its_own_seed(suite) -> None:  # noqa: ANN001
    from warpgym.tasks.importers.model_problem import parameters_drawn_with

    task = suite[0]["kernelbench/level2/1_Linear_bias_tanh"]
    case = task.shapes["dev"][0]
    outside = task.model.state(case)["proj.weight"]
    with parameters_drawn_with(12345):
        first = task.model.state(case)["proj.weight"]
        assert torch.equal(first, task.model.state(case)["proj.weight"])  # one evaluation: one set
    with parameters_drawn_with(67890):
        second = task.model.state(case)["proj.weight"]
    assert not torch.equal(first, second) and not torch.equal(first, outside)
    assert torch.equal(outside, task.model.state(case)["proj.weight"])


def test_the_worker_refuses_a_constructor_that_reseeds_whatever_the_scan_saw() -> None:
    from warpgym.env.protocol import messages as m
    from warpgym.env.worker import models

    class Reseeding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.proj = torch.nn.Linear(4, 4)

    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

    state = {k: v.clone() for k, v in Plain().state_dict().items()}
    with pytest.raises(models.ModelBuildError, match="constructor seeded PyTorch's random generator"):
        models.build(Reseeding, m.ModelCall(key="k", state=state), "cpu")
    model, refused = models.build(Plain, m.ModelCall(key="k", state=state), "cpu")
    assert refused == {} and torch.equal(model.proj.weight, state["proj.weight"])


@pytest.mark.parametrize(("problem", "name"), [
    ("kernelbench/level2/1_Linear_bias_tanh", "linear_tanh_sequential_forward.py"),
    ("kernelbench/level1/1_Scale_rows", "scale_rows_fx_forward.py"),
])
def test_a_forward_made_of_pytorch_s_own_layers_or_generated_code_is_watched(suite, evaluator, problem: str,
                                                                               name: str) -> None:
    """No frame of the candidate's file runs between the model wrapper and PyTorch's ops (an
    ``nn.Sequential`` or a ``torch.fx`` module set as the instance's ``forward``): they count all the same."""
    result = _judge(evaluator, suite[0][problem], name)
    codes = {v.code for v in result.violations}
    assert result.correct is not True and codes & {"torch-op", "torch-internals"}, result.feedback
    if name == "linear_tanh_sequential_forward.py":  # PyTorch's own layers get past the scan
        assert result.stage != "static" and "torch-op" in codes, result.feedback


@pytest.mark.parametrize("name", ["scale_rows_off_by_one.py", "scale_rows_zeros.py"])
def test_wrong_models_are_rejected(suite, evaluator, name: str) -> None:  # noqa: ANN001
    result = _judge(evaluator, suite[0]["kernelbench/level1/1_Scale_rows"], name)
    assert result.correct is False and any(c.passed is False for c in result.cases), result.feedback


def test_strict_refuses_torch_compute_and_allow_torch_accepts_it(suite, evaluator) -> None:  # noqa: ANN001
    task = suite[0]["kernelbench/level1/1_Scale_rows"]
    strict = _judge(evaluator, task, "scale_rows_torch.py")
    assert not strict.correct and {v.code for v in strict.violations} & {"torch-compute", "torch-op"}
    allowed = _judge(evaluator, task, "scale_rows_torch.py", allow_torch=True)
    assert allowed.correct is True and allowed.mode == "allow-torch", allowed.feedback
    assert any("cannot be measured" in s for s in allowed.skipped_checks)


def test_an_experiment_over_imported_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replayed answers on two imported problems: the trivial one is left out of the grid, the other is
    played (wrong, then fixed), reported, and the saved run resolves its tasks again."""
    from warpgym.experiments import config as config_mod
    from warpgym.experiments.cli import main

    monkeypatch.setenv("WARPGYM_CACHE_DIR", str(tmp_path / "cache"))
    answers = [
        (1, (CANDIDATES / "scale_rows_off_by_one.py").read_text()),
        (2, (CANDIDATES / "scale_rows_ok.py").read_text()),
    ]
    replay = tmp_path / "answers.jsonl"
    replay.write_text(
        "".join(
            json.dumps(
                {
                    "task": "kernelbench/level1/1_Scale_rows",
                    "sample": 0,
                    "turn": turn,
                    "text": f"```python\n{text}\n```\n",
                    "input_tokens": 100,
                    "output_tokens": 100,
                    "cost_usd": 0.0,
                }
            )
            + "\n"
            for turn, text in answers
        )
    )
    exp_file = tmp_path / "kb.toml"
    exp_file.write_text(f"""
name = "kb"
tasks = ["kernelbench/level1/1_Scale_rows", "kernelbench/level1/4_Clamp_fixed"]
agents = ["fix-retry"]
models = [{{ spec = "replay:{replay.name}", name = "rec" }}]
max_turns = 2

[suites]
kernelbench = "{FIXTURES}"

[run]
devices = "cpu"
workers = 1
concurrency = 1

[metrics]
pass_k = [1]
""")
    exp = config_mod.load(exp_file)
    assert exp.resolved_tasks == ["kernelbench/level1/1_Scale_rows"]
    assert exp.suites == {"kernelbench": str(FIXTURES.resolve())}
    run_dir = tmp_path / "run"
    assert main(["run", str(exp_file), "--run-dir", str(run_dir), "--quiet", "--no-cache"]) == 0
    import sqlite3

    with sqlite3.connect(run_dir / "store.sqlite") as db:
        rows = db.execute("select task, status, solved, best_turn, n_turns from episodes").fetchall()
    assert rows == [("kernelbench/level1/1_Scale_rows", "finished", 1, 2, 2)]
    report = next(run_dir.glob("report*.md")).read_text()
    assert "kernelbench" in report
    saved = config_mod.from_resolved(json.loads(json.dumps(exp.model_dump())))
    assert saved.suites == exp.suites


SCHEDULED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        # a schedule read with .item(), as Swin's stochastic depth: no meta tensor can answer it
        self.rates = [r.item() for r in torch.linspace(0, 0.5, 4)]
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return self.proj(x) * self.rates[-1]


batch = 4096
features = 2048


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
"""


def test_importing_draws_no_parameters_and_reads_schedules(tmp_path: Path) -> None:
    """Sizes and dtypes are found on meta tensors: no model with real parameters is built or kept by an
    import (a suite's level-3 models would hold gigabytes), and a constructor that needs real values is
    built once on the CPU for that, then dropped."""
    from warpgym.tasks.importers import model_problem

    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_Scheduled.py").write_text(SCHEDULED)
    done = import_suite("kernelbench", tmp_path, register=False)
    (task,) = done.tasks
    linear = import_suite("kernelbench", FIXTURES / "level2", register=False).tasks[0]
    ids = {t.model.state.__self__._id for t in (task, linear)}
    assert not [key for key in model_problem._BUILT if key[0] in ids]
    case = task.cases("dev")[0]
    assert case["features"] < 2048 and task.flops(case) == 2 * case["batch"] * case["features"] ** 2
    assert set(task.model.state(case)) == {"proj.weight", "proj.bias"}
    assert len(model_problem._BUILT) <= model_problem.MAX_BUILT


UNPACKED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, widths):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, 3, padding=1)
        self.norm = nn.LayerNorm(widths[-1])  # needs W == widths[-1]: both must shrink together
        self.widths = widths

    def forward(self, x):
        return self.norm(self.conv(x))


batch_size = 64
channels = 64
D, H, W = 32, 64, 256
widths = [1024, 256]
kernel = 3


def get_inputs():
    return [torch.randn(batch_size, channels, D, H, W)]


def get_init_inputs():
    return [channels, widths]
"""


def test_unpacked_and_list_sizes_shrink_with_the_rest(tmp_path: Path) -> None:
    """``D, H, W = ...`` and a list of widths are size constants: left at their own values, the LayerNorm's
    width would stop matching the shrunk input and no shift but 0 would run (dev at the own sizes)."""
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "1_Unpacked.py").write_text(UNPACKED)
    (task,) = import_suite("kernelbench", tmp_path, register=False).tasks
    dev = task.cases("dev")[0]
    assert dev["W"] == dev["widths"][-1] < 256 and "kernel" not in dev, dev  # 3 is not a size
    assert isinstance(dev["widths"], tuple) and task.model.init_inputs(dev)[1] == list(dev["widths"])
    assert task.model.elements(dev) * 1000 < task.model.elements(task.cases("bench")[0])
    assert "shifted right by" in task.model.sizes_note and "by 0 bits" not in task.model.sizes_note


def test_the_audit_skips_tasks_too_large_for_the_cpu(suite, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    task = suite[0]["kernelbench/level1/4_Clamp_fixed"]  # flagged at its real size (above)
    monkeypatch.setattr(triviality, "MAX_ELEMENTS", 10)
    skipped = triviality.audit(task)
    assert skipped["trivial"] == [] and "tensor elements" in skipped["skipped"]
    assert triviality.describe(skipped).startswith("not audited")
