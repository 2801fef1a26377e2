"""The worker's environment is built from an allowlist, and files the worker can write are read as hostile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from warpgym.env.judge.pool import Worker, clean_environment


def test_only_allowlisted_variables_reach_the_worker(monkeypatch, tmp_path):
    planted = {"GEMINI_KEY": "g-123", "DATABASE_URL": "postgres://user:hunter2@db/prod", "MY_NOTES": "x",
               "HF_TOKEN": "hf_abc", "PYTHONPATH": "https://user:pw@example.invalid/site"}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = clean_environment("cpu", "run", tmp_path)
    assert not set(planted) & set(env), "a planted variable reached the worker"
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    assert env["HOME"] == str(tmp_path) and env["WARPGYM_DEVICE"] == "cpu"


def test_only_a_cpu_run_worker_gets_triton_s_interpreter(monkeypatch, tmp_path):
    """The judge turns the interpreter on where a CPU runs kernels; a compile worker and a GPU worker never
    get it, whatever the parent has, and importing the worker's module changes no environment."""
    import subprocess
    import sys

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert clean_environment("cpu", "run", tmp_path)["TRITON_INTERPRET"] == "1"
    assert "TRITON_INTERPRET" not in clean_environment("cpu", "compile", tmp_path)
    assert "TRITON_INTERPRET" not in clean_environment("cuda", "run", tmp_path)
    monkeypatch.delenv("TRITON_INTERPRET")
    code = "import os, warpgym.env.worker.main; print(os.environ.get('TRITON_INTERPRET'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "WARPGYM_DEVICE": "cpu", "WARPGYM_WORKER_MODE": "run"})
    assert out.stdout.strip() == "None"


def _started(tmp_path: Path) -> Worker:
    worker = Worker("cpu", sandbox=False)
    worker.workdir = tmp_path
    worker._dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    return worker


def test_the_log_is_read_and_cleared_through_a_checked_descriptor(tmp_path):
    worker = _started(tmp_path)
    (tmp_path / "output.log").write_text("x" * 10_000 + "the end")
    tail = worker.log_tail(clear=True)
    assert tail.endswith("the end") and len(tail) <= 4000
    assert (tmp_path / "output.log").stat().st_size == 0
    worker._close_dir()


@pytest.mark.parametrize("replacement", ["symlink", "fifo", "directory"])
def test_a_replaced_log_is_never_followed_read_or_truncated(tmp_path, replacement):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "harness-secret.txt"
    victim.write_text("keep me")
    workdir = tmp_path / "work"
    workdir.mkdir()
    worker = _started(workdir)
    log = workdir / "output.log"
    if replacement == "symlink":
        log.symlink_to(victim)
    elif replacement == "fifo":
        os.mkfifo(log)  # a blocking open would hang the harness
    else:
        log.mkdir()
    assert worker.log_tail(clear=True) == ""
    assert victim.read_text() == "keep me"
    assert [code for code, _ in worker.take_incidents()] == ["hostile-file"]
    worker._close_dir()


def test_a_renamed_work_directory_does_not_redirect_the_read(tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    worker = _started(workdir)
    (workdir / "output.log").write_text("mine")
    workdir.rename(tmp_path / "moved")
    decoy = tmp_path / "work"
    decoy.mkdir()
    (decoy / "output.log").write_text("decoy")
    assert worker.log_tail() == "mine"
    worker._close_dir()
