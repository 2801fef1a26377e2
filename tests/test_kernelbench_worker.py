"""An imported problem never reaches the worker: its file is closed there (also to a worker started before
the file was read), its ``Model`` and source are in no module of the worker, and a ``ModelNew`` gets only
values (constructor arguments, parameters by name, inputs). The worker keeps one instance per case, so a
candidate that reuses an earlier call's answer is caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.env.judge.pool import Worker
from warpgym.env.protocol import messages as m
from warpgym.tasks import Sampler
from warpgym.tasks.importers import import_suite

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench"
CANDIDATES = FIXTURES / "candidates"
MARKER = "Multiplies each row of a matrix by twice its index plus one."
"""A sentence of the problem's docstring: in the worker, no string may hold it."""

KERNEL = """
import os
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_rows(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask)
    tl.store(out_ptr + row * cols + offs, x * (2.0 * row + 1.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        report("call")
        out = torch.empty_like(x)
        rows, cols = x.shape
        _scale_rows[(rows, triton.cdiv(cols, 256))](x, out, cols, BLOCK=256)
        return out
"""

READS = """
def report(when):
    try:
        with open(PROBLEM) as f:
            print(when, "READ-PROBLEM", len(f.read()))
    except OSError as exc:
        print(when, "UNREADABLE-PROBLEM", type(exc).__name__)
    with open(CONTROL) as f:
        print(when, "READ-CONTROL", len(f.read()))
    seen = [k for k, v in os.environ.items() if PROBLEM in v or "kernelbench" in v.lower()]
    print(when, "ENVIRON", seen, any(PROBLEM in a for a in sys.argv))
"""

SNOOPS = """
def _strings(value, depth=0):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)) and depth < 2:
        for v in value:
            yield from _strings(v, depth + 1)


def snoop(when):
    try:
        __import__("warpgym.tasks.importers")
        print(when, "IMPORTED-IMPORTERS")
    except ImportError:
        print(when, "REFUSED-IMPORTERS")
    holders = []
    for name, module in list(sys.modules.items()):
        if name == __name__:
            continue  # this module holds the marker itself
        names = vars(module) if isinstance(getattr(module, "__dict__", None), dict) else {}
        if name.startswith("warpgym_problem") or "get_init_inputs" in names or "Model" in names:
            holders.append(name)
        if any(MARKER in s for v in list(names.values()) for s in _strings(v)):
            holders.append(name)
    print(when, "HOLDERS", sorted(set(holders)))
"""


def _probe(problem: Path, snoops: bool = False) -> str:
    """A correct ModelNew that tries to read the problem file at import and in forward (and, where no
    static scan runs first, to import the importers and find the problem in any loaded module)."""
    head = f"PROBLEM = {str(problem)!r}\nCONTROL = {str(CANDIDATES / 'scale_rows_ok.py')!r}\n"
    head += f"MARKER = {MARKER!r}\n"
    body = KERNEL.replace('        report("call")', '        report("call")\n        snoop("call")') \
        if snoops else KERNEL
    tail = 'report("import")\n' + ('snoop("import")\n' if snoops else "")
    return body + head + READS + (SNOOPS if snoops else "") + tail


@pytest.fixture(scope="module")
def evaluator():  # noqa: ANN201
    with Evaluator(device="cpu") as ev:
        yield ev


def _evaluate(evaluator: Evaluator, task, source: str):  # noqa: ANN001, ANN202
    return evaluator.evaluate(task, Candidate(source), EvalOptions(device="cpu", shape_sets=("dev",)))


def _assert_unreadable(log: str) -> None:
    for when in ("import", "call"):
        assert f"{when} UNREADABLE-PROBLEM" in log and f"{when} READ-PROBLEM" not in log, log
        assert f"{when} READ-CONTROL" in log, log  # the refusal is the problem's, not every file's
        assert f"{when} ENVIRON [] False" in log, log


def _spied(evaluator: Evaluator, task, source: str):  # noqa: ANN001, ANN202
    """The verdict, and every request the judge sent either worker during the evaluation."""
    sent: list[dict] = []
    workers = (evaluator.run_worker, evaluator.compile_worker)
    originals = [w.request for w in workers]
    for worker, original in zip(workers, originals, strict=True):
        worker.request = lambda msg, timeout, _send=original: (sent.append(msg), _send(msg, timeout))[1]
    try:
        return _evaluate(evaluator, task, source), sent
    finally:
        for worker, original in zip(workers, originals, strict=True):
            worker.request = original


def _texts(value):  # noqa: ANN001, ANN202
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts(v)


def test_a_model_new_cannot_read_the_problem_and_no_request_carries_it(evaluator) -> None:  # noqa: ANN001
    task = next(t for t in import_suite("kernelbench", FIXTURES / "level1").tasks
                if t.id.endswith("1_Scale_rows"))
    problem = Path(task.model.path).resolve()
    result, sent = _spied(evaluator, task, _probe(problem))
    _assert_unreadable(result.stdout)
    # The attempt is a verdict, not only a failed read; the answer itself was right on every check.
    assert result.correct is False and result.cases and all(c.passed for c in result.cases)
    assert any(str(problem) in v.message for v in result.violations), result.feedback
    source = problem.read_text()
    texts = [t for msg in sent for t in _texts({k: v for k, v in msg.items() if k != "source"})]
    assert {msg["op"] for msg in sent} >= {"load", "run"}
    assert not [t for t in texts if MARKER in t or str(problem) in t or "kernelbench/" in t]
    assert all(source not in msg.get("source", "") for msg in sent)


def test_a_worker_started_before_the_import_is_replaced(evaluator, tmp_path: Path) -> None:  # noqa: ANN001
    honest = (CANDIDATES / "scale_rows_ok.py").read_text()
    first = import_suite("kernelbench", FIXTURES / "level1" / "1_Scale_rows.py", register=False).tasks[0]
    assert _evaluate(evaluator, first, honest).correct is True  # the workers are running now
    (tmp_path / "level1").mkdir()
    copy = tmp_path / "level1" / "1_Scale_rows.py"
    shutil.copy(FIXTURES / "level1" / "1_Scale_rows.py", copy)
    late = import_suite("kernelbench", copy, register=False).tasks[0]
    workers = evaluator.run_worker, evaluator.compile_worker
    # Both running workers were started before the copy was read: they do not close it.
    assert all(w.alive and str(copy.resolve()) not in w.protected for w in workers)
    result = _evaluate(evaluator, late, _probe(copy.resolve()))
    _assert_unreadable(result.stdout)
    assert any(str(copy.resolve()) in v.message for v in result.violations), result.feedback


def _raw_run(task, problem: Path, sandbox: bool) -> tuple[str, list[list[str]]]:  # noqa: ANN001
    """The snooping probe loaded and called once in a worker of its own: its log and the incidents."""
    worker = Worker("cpu", "run", sandbox=sandbox)
    try:
        load = m.parse_reply("load", worker.request(m.LoadRequest(
            source=_probe(problem, snoops=True), entrypoint="ModelNew", params=["x"], model=True).wire(),
            timeout=300))
        assert load.ok, load.error
        case = task.cases("dev")[0]
        inputs = task.make_inputs(case, Sampler(0, "problem", "cpu"))
        call = m.ModelCall(key="dev", init_inputs=task.model.init_inputs(case), state=task.model.state(case))
        reply = m.parse_reply("run", worker.request(m.RunRequest(inputs=inputs, model=call).wire(), 300))
        assert reply.ok, reply.error
        return worker.log_tail(), worker.take_incidents()
    finally:
        worker.stop()


def test_past_the_static_scan_the_worker_still_holds_nothing_of_the_problem() -> None:
    """A raw worker (no static scan) loads a ModelNew that tries imports and walks every loaded module."""
    task = import_suite("kernelbench", FIXTURES / "level1" / "1_Scale_rows.py", register=False).tasks[0]
    problem = Path(task.model.path).resolve()
    unconfined, _ = _raw_run(task, problem, sandbox=False)
    assert "import READ-PROBLEM" in unconfined  # the probe would see the file where nothing closes it
    log, incidents = _raw_run(task, problem, sandbox=True)
    _assert_unreadable(log)
    for when in ("import", "call"):
        assert f"{when} REFUSED-IMPORTERS" in log and "IMPORTED-IMPORTERS" not in log, log
        assert f"{when} HOLDERS []" in log, log
    assert any(str(problem) in message for _, message in incidents), incidents


def test_a_candidate_that_reuses_its_first_answer_is_caught(evaluator) -> None:  # noqa: ANN001
    task = import_suite("kernelbench", FIXTURES / "level1" / "1_Scale_rows.py", register=False).tasks[0]
    result = _evaluate(evaluator, task, (CANDIDATES / "scale_rows_reuse.py").read_text())
    assert result.correct is False and result.cases[0].passed and not result.cases[1].passed, result.feedback


MODEL_NEW = """
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        return x.clone()  # a new tensor: an output may not share its input's memory
"""


def test_parameters_travel_once_per_case_and_an_unknown_case_is_a_clear_error() -> None:
    """A raw worker: the first call of a case carries the parameters, later ones name the instance."""
    worker = Worker("cpu", "run")
    try:
        load = m.parse_reply("load", worker.request(m.LoadRequest(
            source="import torch\n" + MODEL_NEW, entrypoint="ModelNew", params=["x"], model=True).wire(),
            timeout=120))
        assert load.ok, load.error
        x = torch.randn(3, 4)
        scale = torch.full((4,), 3.0)
        calls = [m.ModelCall(key="features=4", init_inputs=[4], state={"scale": scale}),
                 m.ModelCall(key="features=4"), m.ModelCall(key="features=8")]
        replies = [m.parse_reply("run", worker.request(m.RunRequest(inputs={"x": x}, model=c).wire(), 120))
                   for c in calls]
        assert replies[0].ok and replies[1].ok, (replies[0].error, replies[1].error)
        assert torch.equal(replies[1].outputs[0], x)
        assert not replies[2].ok and "no model was built for features=8" in (replies[2].error or "")
        wrong = m.ModelCall(key="features=4", init_inputs=[4], state={"weight": scale})
        reply = m.parse_reply("run", worker.request(m.RunRequest(inputs={"x": x}, model=wrong).wire(), 120))
        assert not reply.ok and "missing weight" in reply.error and "not in Model: scale" in reply.error
    finally:
        worker.stop()
