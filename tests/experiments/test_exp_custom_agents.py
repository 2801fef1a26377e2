"""Agents from the experiment file: loops from the user's own module, file or entry point, per-agent
parameters checked against the loop's own, and a run that resumes from the CLI by importing the loop
again. The worked example (experiments/examples/best_of_n.py) runs end to end.

Most answers here are ones the judge rejects before any worker starts (no code, a PyTorch op in host
code), so those tests take about a second; the worked example judges real kernels in the interpreter.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from exp_helpers import NO_CODE, TASK, TORCH_OP, fenced
from warpgym.agents import LOOPS
from warpgym.experiments import config
from warpgym.experiments.cli import main
from warpgym.experiments.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "experiments" / "examples"
RESUME = ("--max-tokens", "100000", "--quiet", "--no-report")


def _replay(path: Path, texts: list[str], loop: str | None = None) -> Path:
    with open(path, "w") as f:
        for turn, text in enumerate(texts, 1):
            row: dict[str, Any] = {"task": TASK, "sample": 0, "turn": turn, "text": text}
            row["input_tokens"] = 1000
            if loop:
                row["loop"] = loop
            f.write(json.dumps(row) + "\n")
    return path


def _experiment(tmp_path: Path, agents: str, *, max_turns: int = 3, extra: str = "") -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "agents"
tasks = ["{TASK}"]
models = [{{ spec = "replay:rec.jsonl", name = "rec" }}]
max_turns = {max_turns}
{agents}

[run]
devices = "cpu"
workers = 1
concurrency = 1
heldout = false

[metrics]
pass_k = [1]
{extra}""")
    return path


def _records(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    with Store(run_dir / "store.sqlite", readonly=True) as store:
        agent = {e["id"]: e["agent"] for e in store.episodes()}
        out: dict[str, list[dict[str, Any]]] = {}
        for episode_id, record in store.all_turn_records():
            out.setdefault(agent[episode_id], []).append(record)
    return out


def _user_package(tmp_path: Path, loop_name: str) -> str:
    """A package of the user's own with one loop (every turn a fresh answer, or a fix), importable from
    ``tmp_path``; returns the package's name."""
    package = f"userpkg_{loop_name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "loops.py").write_text(f'''
from warpgym.agents import LOOPS
from warpgym.agents.loops import build_graph


@LOOPS.register("{loop_name}", fresh=True)
def beam(ep, *, is_async=False, checkpointer=None, fresh=True):
    """Every turn answers the task afresh (fresh=True), or fixes the last answer."""
    ep.route = lambda ep, record: "generate" if fresh else "fix"
    return build_graph(ep, is_async=is_async, checkpointer=checkpointer)
''')
    return package


def _forget(package: str, loop_name: str) -> None:
    """What a new process starts without: the user's modules and the loops they registered."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    LOOPS._specs.pop(loop_name, None)


def test_a_loop_from_the_users_module_runs_and_resumes_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_name = f"fresh-{tmp_path.name[-12:]}".lower()
    package = _user_package(tmp_path, loop_name)
    monkeypatch.syspath_prepend(str(tmp_path))
    _replay(tmp_path / "rec.jsonl", [NO_CODE, fenced(TORCH_OP), NO_CODE])
    exp = _experiment(tmp_path, f'agents = ["{package}.loops:beam"]', extra="[budget]\nmax_tokens = 1500\n")
    try:
        parsed = config.load(exp)
        assert parsed.agents == ["beam"]
        assert parsed.agent("beam").model_dump() == {"loop": loop_name, "module": f"{package}.loops",
                                                     "file": None, "entry_point": None,
                                                     "params": {"fresh": True}, "history": None}
        run_dir = tmp_path / "run"
        assert main(["run", str(exp), "--run-dir", str(run_dir), "--quiet", "--no-report"]) == 0
        assert len(_records(run_dir)["beam"]) == 2  # the token cap stopped the episode after turn 2
        saved = json.loads((run_dir / "config.resolved.json").read_text())["resolved_agents"]["beam"]
        assert saved["module"] == f"{package}.loops" and saved["loop"] == loop_name
        _forget(package, loop_name)
        assert main(["run", "--resume", str(run_dir), *RESUME]) == 0
        assert loop_name in LOOPS  # imported again from the resolved config
        records = _records(run_dir)["beam"]
        assert [r["phase"] for r in records] == ["generate"] * 3
        assert all(len(r["messages"]) == 2 for r in records)  # each turn saw the task alone
    finally:
        _forget(package, loop_name)


def test_a_loop_registered_from_python_is_found_again_by_its_module(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    loop_name = f"py-{tmp_path.name[-12:]}".lower()
    package = _user_package(tmp_path, loop_name)
    monkeypatch.syspath_prepend(str(tmp_path))
    _replay(tmp_path / "rec.jsonl", [NO_CODE])
    try:
        __import__(f"{package}.loops")  # registered by the user's Python, then named by its name alone
        agent = config.load(_experiment(tmp_path, f'agents = ["{loop_name}"]')).agent(loop_name)
        assert (agent.loop, agent.module) == (loop_name, f"{package}.loops")
    finally:
        _forget(package, loop_name)


def test_a_resume_whose_module_is_gone_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    loop_name = f"gone-{tmp_path.name[-12:]}".lower()
    package = _user_package(tmp_path, loop_name)
    monkeypatch.syspath_prepend(str(tmp_path))
    _replay(tmp_path / "rec.jsonl", [NO_CODE] * 3)
    exp = _experiment(tmp_path, f'agents = ["{package}.loops:beam"]', extra="[budget]\nmax_tokens = 1500\n")
    run_dir = tmp_path / "run"
    try:
        assert main(["run", str(exp), "--run-dir", str(run_dir), "--quiet", "--no-report"]) == 0
        _forget(package, loop_name)
        (tmp_path / package / "loops.py").unlink()
        capsys.readouterr()
        assert main(["run", "--resume", str(run_dir), "--max-tokens", "100000", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"agent 'beam': agent loop {package}.loops:{loop_name}: cannot import it: " in err
        assert "ModuleNotFoundError" in err
        assert "make it importable again" in err
    finally:
        _forget(package, loop_name)


def test_an_entry_point_names_a_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop_name = f"ep-{tmp_path.name[-12:]}".lower()
    package = _user_package(tmp_path, loop_name)
    dist = tmp_path / f"{package}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[warpgym.agents]\nredraw-{loop_name} = {package}.loops:beam\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _replay(tmp_path / "rec.jsonl", [NO_CODE] * 2)
    exp = _experiment(tmp_path, f'[agents.mine]\nloop = "redraw-{loop_name}"\nfresh = false\n', max_turns=2)
    try:
        parsed = config.load(exp)
        agent = parsed.agent("mine")
        assert (agent.loop, agent.entry_point) == (loop_name, f"redraw-{loop_name}")
        assert agent.params == {"fresh": False}
        assert main(["run", str(exp), "--run-dir", str(tmp_path / "run"), "--quiet", "--no-report"]) == 0
        assert [r["phase"] for r in _records(tmp_path / "run")["mine"]] == ["generate", "fix"]
    finally:
        _forget(package, loop_name)


def test_per_agent_parameters_are_checked_with_their_lines(tmp_path: Path) -> None:
    _replay(tmp_path / "rec.jsonl", [NO_CODE])
    exp = _experiment(tmp_path, """
[agents.fix-retry]
optimize = false
keep_optimising = "yes"

[agents.bon]
loop = "../nowhere/best_of_n.py:best-of-n"

[agents.other]
loop = "warpgym.agents.loops:beam"
""")
    text = exp.read_text().splitlines()
    at = {key: next(i for i, t in enumerate(text, 1) if t.startswith(key)) for key in
          ("optimize", "keep_optimising", 'loop = "..', 'loop = "warpgym')}
    missing_file, wrong_module = at['loop = "..'], at['loop = "warpgym']
    with pytest.raises(config.ConfigError) as err:
        config.load(exp)
    lines = str(err.value).splitlines()
    assert lines[0].endswith(f"line {at['optimize']}: agents.fix-retry.optimize: loop 'fix-retry' has no "
                             "parameter 'optimize'; did you mean 'optimise'?")
    assert (f"line {at['keep_optimising']}: agents.fix-retry.keep_optimising: loop 'fix-retry': "
            "keep_optimising is true or false, not 'yes'") in lines[1]
    assert f"line {missing_file}: agents.bon.loop: agent loop " in lines[2] and "no such file" in lines[2]
    assert f"line {wrong_module}: agents.other.loop:" in lines[3]
    assert "no loop 'beam' there (it registers fix-retry, one-shot)" in lines[3]


def test_per_agent_parameters_reach_the_loop(tmp_path: Path) -> None:
    """Two agents on one loop, told apart by their labels (the replay answers each by its own)."""
    with open(tmp_path / "rec.jsonl", "w") as f:
        for loop, text in (("solve-once", fenced(TORCH_OP)), ("keep-going", NO_CODE)):
            for turn in (1, 2):
                row = {"task": TASK, "sample": 0, "turn": turn, "loop": loop, "text": text}
                f.write(json.dumps(row) + "\n")
    exp = _experiment(tmp_path, """
[agents.solve-once]
loop = "one-shot"

[agents.keep-going]
loop = "fix-retry"
history = "last"
""", max_turns=2)
    assert main(["run", str(exp), "--run-dir", str(tmp_path / "run"), "--quiet", "--no-report"]) == 0
    records = _records(tmp_path / "run")
    assert [r["response"] for r in records["solve-once"]] == [fenced(TORCH_OP)]
    assert [r["response"] for r in records["keep-going"]] == [NO_CODE, NO_CODE]
    assert records["keep-going"][1]["phase"] == "fix"


def test_best_of_n_drafts_independently_then_builds_on_the_best(tmp_path: Path) -> None:
    """The worked example's routing, on answers judged without a worker: the PyTorch op (rejected at the
    static stage) got further than the answer with no code, so turn 3 continues from it."""
    _replay(tmp_path / "rec.jsonl", [NO_CODE, fenced(TORCH_OP), NO_CODE], loop="best-of-2")
    loop = EXAMPLES / "best_of_n.py"
    exp = _experiment(tmp_path, f'[agents.best-of-2]\nloop = "{loop}:best-of-n"\nn = 2\n',
                      extra="[budget]\nmax_tokens = 1500\n")
    run_dir = tmp_path / "run"
    assert main(["run", str(exp), "--run-dir", str(run_dir), "--quiet", "--no-report"]) == 0
    assert len(_records(run_dir)["best-of-2"]) == 2  # stopped after the drafts: the rest plays on resume
    assert main(["run", "--resume", str(run_dir), *RESUME]) == 0
    first, second, third = _records(run_dir)["best-of-2"]
    assert [r["phase"] for r in (first, second, third)] == ["generate", "generate", "fix"]
    assert first["messages"] == second["messages"] and len(first["messages"]) == 2
    assert third["messages"][:2] == first["messages"]
    assert third["messages"][2] == {"role": "assistant", "content": fenced(TORCH_OP)}
    assert "torch.softmax" in third["messages"][3]["content"]  # the verdict on the best draft


@pytest.mark.slow  # one cold evaluation worker judging two kernels: ~15 s on an idle 2-core machine
def test_the_worked_example_runs_as_shipped(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert main(["run", str(EXAMPLES / "best-of-n.toml"), "--run-dir", str(run_dir), "--quiet"]) == 0
    records = _records(run_dir)
    best = records["best-of-2"]
    assert [r["phase"] for r in best] == ["generate", "generate", "fix"]
    assert [bool((r["result"] or {}).get("correct")) for r in best] == [False, False, True]
    assert best[2]["messages"][2]["content"] == best[0]["response"]  # built on draft 1, not draft 2
    assert [r["phase"] for r in records["fix-retry"]] == ["generate", "fix", "fix"]
    report = (run_dir / "report.md").read_text()
    assert "| best-of-2 |" in report and "6 replayed from recordings" in report
