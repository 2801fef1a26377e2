"""The CPU half of scripts/kernelbench_side_by_side.py: the candidates it writes in KernelBench's format
keep Model's parameter names (warpgym loads the reference's values by name), and warpgym's side judges
them as the script's labels say, strict and with PyTorch calls allowed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from script_module import load_script
from warpgym.env import EvalOptions, Evaluator
from warpgym.tasks.importers import import_suite

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "tests" / "fixtures" / "kernelbench" / "level2" / "1_Linear_bias_tanh.py"


@pytest.fixture(scope="module")
def script():  # noqa: ANN201
    sys.path.insert(0, str(ROOT / "scripts"))
    return load_script("kernelbench_side_by_side")


def test_the_candidates_keep_models_parameter_names(script, tmp_path: Path) -> None:  # noqa: ANN001
    written = script.candidates(PROBLEM)
    assert set(written) == set(script.WRAPPED)  # not an elementwise problem: no strict kernel
    task = import_suite("kernelbench", PROBLEM, register=False).tasks[0]
    case = task.cases("dev")[0]
    names = set(task.model.state(case))
    for label, source in written.items():
        file = tmp_path / f"{label.replace('-', '_')}.py"  # Triton reads a kernel's source from its file
        file.write_text(source)
        spec = importlib.util.spec_from_file_location(file.stem, file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = module.ModelNew(*task.model.init_inputs(case))
        assert set(model.state_dict()) == names, label


def test_warpgym_judges_them_as_labelled(script) -> None:  # noqa: ANN001
    task = import_suite("kernelbench", PROBLEM, register=False).tasks[0]
    written = script.candidates(PROBLEM)
    allowed = EvalOptions(device="cpu", shape_sets=("dev",), allow_torch=True)
    with Evaluator("cpu") as evaluator:
        correct = script.warpgym_verdict(evaluator, task, written["correct"], allowed)
        strict = script.warpgym_verdict(evaluator, task, written["correct"],
                                        EvalOptions(device="cpu", shape_sets=("dev",)))
        zeros = script.warpgym_verdict(evaluator, task, written["exploit-zeros"], allowed)
        reuse = script.warpgym_verdict(evaluator, task, written["exploit-reuse"], allowed)
    assert correct["correct"] is True and correct["mode"] == "allow-torch", correct
    assert strict["correct"] is not True and strict["mode"] == "strict", strict  # refused before it runs
    assert {"torch-compute", "torch-op"} & set(strict["violations"]), strict
    assert zeros["correct"] is False and zeros["first_failure"], zeros
    assert reuse["correct"] is False and reuse["first_failure"], reuse


def test_the_selection_puts_elementwise_problems_first(script, tmp_path: Path) -> None:  # noqa: ANN001
    level1 = tmp_path / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    for stem in ("1_Square_matmul", "19_ReLU", "2_Other", "30_Softsign"):
        (level1 / f"{stem}.py").write_text("")
    assert [p.stem for p in script.chosen_problems(tmp_path, 2, 0, [])] == ["19_ReLU", "30_Softsign"]
    assert [p.stem for p in script.chosen_problems(tmp_path, 3, 0, [])] == ["1_Square_matmul", "19_ReLU",
                                                                            "30_Softsign"]
    assert [p.stem for p in script.chosen_problems(tmp_path, 20, 0, ["2_Other"])] == ["2_Other"]


ROUNDED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)

    def forward(self, x):
        y = self.proj(x)
        return y.bfloat16().float() if y.dtype == torch.float32 else y  # {what}, like TF32: float32 only


n = 64


def get_inputs():
    return [torch.randn(32, n)]


def get_init_inputs():
    return [n]
'''


def test_the_precision_probe_counts_elements_outside_the_float32_bound(script, tmp_path: Path) -> None:  # noqa: ANN001
    exact = tmp_path / "1_Exact.py"
    exact.write_text(ROUNDED.replace(".bfloat16().float()", "").replace("{what}", "exact"))
    rounded = tmp_path / "2_Rounded.py"
    rounded.write_text(ROUNDED.replace("{what}", "rounded to bf16"))

    def probe(path: Path) -> dict:
        task = import_suite("kernelbench", path, register=False).tasks[0]
        return script.precision_probe(task, device="cpu")

    clean = probe(exact)
    assert clean == {"elements": 32 * 64, "outside_tf32_on": 0, "outside_tf32_off": 0}
    lossy = probe(rounded)
    assert lossy["outside_tf32_on"] == lossy["outside_tf32_off"] > 32 * 64 // 4  # no TF32 on a CPU
    assert torch.backends.cudnn.allow_tf32 is True  # the switch is put back
