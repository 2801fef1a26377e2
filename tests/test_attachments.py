"""Attachments in the worker's process: what the worker installs is what a candidate reads by name, and
a reference solution comes with the files it reads."""

from __future__ import annotations

import pytest
from warpgym.env.candidate import Candidate
from warpgym.env.toolchain import attachments
from warpgym.tasks import get_task

from warpgym import loader


@pytest.fixture(autouse=True)
def _cleared():
    yield
    attachments.clear()


def test_a_candidate_reads_what_was_installed_through_the_public_loader():
    attachments.install({"gemm.ptx": ".version 8.7\n", "tile.cuh": "#define TILE 64\n"})
    assert loader.attachment("gemm.ptx") == ".version 8.7\n"
    assert loader.attachment("tile.cuh") == "#define TILE 64\n"
    assert loader.attachment_names() == ["gemm.ptx", "tile.cuh"]
    assert "attachment" in loader.__all__ and "attachment_names" in loader.__all__


def test_install_replaces_the_whole_set_and_keeps_its_own_copy():
    given = {"a.ptx": "first"}
    attachments.install(given)
    given["a.ptx"] = "changed after install"
    given["b.ptx"] = "added after install"
    assert attachments.attachment("a.ptx") == "first" and attachments.names() == ["a.ptx"]
    attachments.install({"b.ptx": "second"})
    assert attachments.names() == ["b.ptx"]
    with pytest.raises(FileNotFoundError):
        attachments.attachment("a.ptx")
    attachments.clear()
    assert attachments.names() == []


def test_a_missing_name_says_which_names_there_are():
    attachments.install({"gemm.ptx": "", "other.cu": ""})
    with pytest.raises(FileNotFoundError, match=r"'gemm\.PTX'.*'gemm\.ptx', 'other\.cu'"):
        loader.attachment("gemm.PTX")
    attachments.clear()
    with pytest.raises(FileNotFoundError, match="carries: none"):
        loader.attachment("gemm.ptx")
    with pytest.raises(FileNotFoundError):
        loader.attachment(["not", "a", "name"])  # type: ignore[arg-type]


def test_install_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="file names to text"):
        attachments.install({"gemm.ptx": b"bytes"})  # type: ignore[dict-item]
    assert attachments.names() == []


def test_a_triton_reference_is_a_module_without_attachments():
    task = get_task("math/add")
    assert task.solution_root == task.solution_path and task.solution_path.suffix == ".py"
    assert task.solution_candidate() == Candidate(task.solution_source())


def test_a_ptx_reference_carries_the_ptx_its_launcher_reads():
    task = get_task("ptx/gemm-fp8")
    candidate = task.solution_candidate()
    assert candidate.source == task.solution_source()
    for target in ("sm_90a", "sm_100a"):
        name = f"gemm_fp8_128x128x128_w4s4.{target}.ptx"
        assert f".target {target}\n" in candidate.attachments[name]
    assert Candidate.from_dict(candidate.to_dict()) == candidate
