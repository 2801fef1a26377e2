"""``warpgym eval`` with attachments: ``--attach`` files or a candidate folder; every bad attachment is a
usage error (exit 2, one line), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warpgym.experiments.cli import main
from warpgym.experiments.cli.eval_cmd import read_candidate
from warpgym.tasks import get_task

ADD_SRC = get_task("math/add").solution_source()
NOTE = "// carried beside the module\n"
# Reads its attachment at import: judged correct only if the file reached the worker intact.
READS_NOTE = (f'from warpgym.loader import attachment\n\nassert attachment("note.cu") == {NOTE!r}\n\n'
              + ADD_SRC)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "candidate"
    path.mkdir()
    (path / "add.py").write_text(READS_NOTE)
    (path / "note.cu").write_text(NOTE)
    (path / "README.md").write_text("not carried")
    return path


def test_attach_and_folder_forms_build_the_same_candidate(folder: Path, tmp_path: Path):
    by_file = read_candidate(str(folder / "add.py"), [str(folder / "note.cu")])
    by_folder = read_candidate(str(folder), [])
    assert by_file == by_folder and by_file.source == READS_NOTE
    assert dict(by_file.attachments) == {"note.cu": NOTE}
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "more.ptx").write_text(".version 8.7\n")
    both = read_candidate(str(folder), [str(extra / "more.ptx")])
    assert sorted(both.attachments) == ["more.ptx", "note.cu"]
    assert not read_candidate(str(folder / "add.py"), []).attachments


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["eval", "math/add", *argv, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warpgym eval: error: ") and "Traceback" not in err and err.count("\n") == 1
    return err


def test_bad_attachments_are_usage_errors(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    module = str(folder / "add.py")
    assert "no such attachment file: " in _usage_error(capsys, module, "--attach", str(tmp_path / "nope.ptx"))
    (tmp_path / "notes.txt").write_text("text")
    assert "only .ptx, .cu, .cuh" in _usage_error(capsys, module, "--attach", str(tmp_path / "notes.txt"))
    (tmp_path / "blob.ptx").write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8 text" in _usage_error(capsys, module, "--attach", str(tmp_path / "blob.ptx"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.cu").write_text("another")
    assert "two attachments named 'note.cu'" in _usage_error(
        capsys, module, "--attach", str(folder / "note.cu"), str(other / "note.cu"))
    assert "already holds a file of that name" in _usage_error(
        capsys, str(folder), "--attach", str(other / "note.cu"))
    (folder / "second.py").write_text("")
    assert "exactly one .py module (found 2)" in _usage_error(capsys, str(folder))
    assert "no such file: " in _usage_error(capsys, str(tmp_path / "missing"))


# ---- the whole path: these need the evaluator to carry attachments into the worker -------------------
def test_eval_with_attach_reaches_the_worker(folder: Path, capsys: pytest.CaptureFixture[str]):
    argv = ["eval", "math/add", str(folder / "add.py"), "--attach", str(folder / "note.cu"), "--device",
            "cpu", "--shapes", "dev", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["correct"] is True
    assert main(["eval", "math/add", str(folder), "--device", "cpu", "--shapes", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["correct"] is True


def test_evaluate_takes_a_candidate_with_attachments(cpu_evaluator):
    from warpgym.env import EvalOptions
    from warpgym.env.candidate import Candidate

    task = get_task("math/add")
    options = EvalOptions(device="cpu", shape_sets=("dev",))
    assert cpu_evaluator.evaluate(task, Candidate(READS_NOTE, {"note.cu": NOTE}), options).correct
    wrong = cpu_evaluator.evaluate(task, Candidate(READS_NOTE, {"note.cu": "// another text\n"}), options)
    assert not wrong.correct
    missing = cpu_evaluator.evaluate(task, Candidate(READS_NOTE), options)
    assert not missing.correct and "note.cu" in missing.feedback



def test_eval_takes_and_reports_an_input_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    module = tmp_path / "add.py"
    module.write_text(ADD_SRC)
    argv = ["eval", "math/add", str(module), "--device", "cpu", "--shapes", "dev", "--input-seed", "77"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["input_seed"] == 77 and out["correct"] is True
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "77" not in captured.out and "--input-seed 77" in captured.err  # never in the feedback
    assert "input seed is an integer" in _usage_error(capsys, str(module), "--input-seed", "-5")
