"""scripts/triton_ref_sweep.py off the GPU: which config it picks, and that --apply writes exactly that
constant into the solution file (and refuses a file without it)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[1]
REL = "tasks/solutions/convolution/conv2d.py"


@pytest.fixture(scope="module")
def sweep():
    return load_script("triton_ref_sweep")


def _variant(name, override, ratio, err=1e-3):
    return {"variant": name, "override": override, "ms": 1.0 / ratio, "vs_best_baseline": ratio,
            "rel_l2_vs_eager": err}


def test_the_choice_is_the_best_geomean_over_shapes_of_a_correct_config(sweep):
    big = {"TAPS_LARGE": (128, 256, 64, 8, 3)}
    wrong = {"TAPS_LARGE": (256, 128, 64, 8, 3)}
    entry = {"shapes": [
        {"variants": [_variant("old", {}, 5.0), _variant("committed", {}, 0.7), _variant("big", big, 0.9),
                      _variant("wrong", wrong, 3.0, err=0.5)]},
        {"variants": [_variant("old", {}, 5.0), _variant("committed", {}, 0.8), _variant("big", big, 0.75),
                      _variant("wrong", wrong, 3.0, err=0.5), {"variant": "broken", "override": {},
                                                                "error": "OutOfResources"}]},
    ]}
    choice = sweep.choose(entry)
    assert choice["variant"] == "big", "old references and wrong outputs are never chosen"
    assert choice["geomean_vs_best_baseline"] == pytest.approx((0.9 * 0.75) ** 0.5)


def test_apply_sets_the_chosen_constant_and_nothing_else(sweep, tmp_path):
    target = tmp_path / REL
    target.parent.mkdir(parents=True)
    shutil.copy(ROOT / REL, target)
    before = target.read_text()
    results = tmp_path / "sweep.json"
    results.write_text(json.dumps({"tasks": [
        {"task": "convolution/conv2d", "file": REL,
         "choice": {"variant": "x", "set": {"TAPS_LARGE": [128, 256, 64, 8, 4]}}},
        {"task": "index/gather", "file": "tasks/solutions/index/gather.py", "choice": None},
    ]}))
    assert sweep.apply(results, root=tmp_path) == [f"{REL}: TAPS_LARGE = (128, 256, 64, 8, 4)"]
    after = target.read_text()
    assert "TAPS_LARGE: Tiles = (128, 256, 64, 8, 4)\n" in after
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("TAPS_LARGE: Tiles = (")


def test_apply_refuses_a_constant_the_file_lacks(sweep, tmp_path):
    target = tmp_path / REL
    target.parent.mkdir(parents=True)
    shutil.copy(ROOT / REL, target)
    results = tmp_path / "sweep.json"
    results.write_text(json.dumps({"tasks": [
        {"task": "convolution/conv2d", "file": REL,
         "choice": {"variant": "x", "set": {"LARGE": [1, 2, 3, 4, 5]}}},
    ]}))
    with pytest.raises(SystemExit, match="no line 'LARGE: Tiles"):
        sweep.apply(results, root=tmp_path)


def test_every_override_names_a_constant_of_its_reference(sweep):
    for task_id, overrides in sweep.SWEEP.items():
        from warpgym.tasks import get_task

        text = get_task(task_id).solution_path.read_text()
        for override in overrides:
            for attr, value in override.items():
                assert f"\n{attr}: Tiles = (" in text, (task_id, attr)
                committed = ast.literal_eval(text.split(f"\n{attr}: Tiles = ")[1].split("\n")[0])
                assert len(value) == len(committed), (task_id, attr)


def test_old_references_come_from_a_folder_where_the_copy_has_no_git_history(sweep, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "ROOT", tmp_path)
    (tmp_path / "old" / "tasks/solutions/math").mkdir(parents=True)
    (tmp_path / "old" / "tasks/solutions/math/add.py").write_text("OLD = 1\n")
    assert sweep.old_source(Path("tasks/solutions/math/add.py"), "old") == "OLD = 1\n"
    assert sweep.old_source(Path("tasks/solutions/math/sub.py"), "old") is None


def test_several_outputs_are_judged_by_the_worst_of_them(sweep):
    import torch

    ref = (torch.ones(4), torch.ones(4))
    assert sweep.rel_l2((torch.ones(4), torch.ones(4)), ref) == 0.0
    assert sweep.rel_l2((torch.ones(4), torch.zeros(4)), ref) == pytest.approx(1.0)


def test_the_summary_sets_the_chosen_variant_beside_the_old_reference_and_the_best_baseline(sweep, tmp_path):
    results = tmp_path / "sweep.json"
    committed = {**_variant("committed", {}, 0.5), "tflops": 10.0, "tbps": 1.0}
    chosen = {**_variant("big", {"LARGE": [1]}, 2.0), "tflops": 40.0, "tbps": 4.0}
    results.write_text(json.dumps({"tasks": [
        {"task": "matmul/matmul", "choice": {"variant": "big"}, "shapes": [
            {"shape": "m=1", "baselines": {"eager": 3.0, "vendor": 1.0},
             "variants": [{"variant": "old (abc)", "ms": 7.0}, committed, chosen]}]},
        {"task": "math/add", "choice": None, "shapes": [
            {"shape": "n=1", "baselines": {"eager": 1.0},
             "variants": [{"variant": "committed", "override": {}, "error": "OutOfResources"}]}]},
    ]}))
    header, rule, matmul, add = sweep.summary(results)
    assert matmul == "| matmul/matmul | m=1 | 1 (vendor) | 7 | big | 0.5 | 2.00x | 40.0 | 4.00 |"
    assert add.startswith("| math/add | n=1 | | | committed | OutOfResources |")
