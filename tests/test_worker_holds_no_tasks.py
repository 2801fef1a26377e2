"""The worker never holds a task: each call's inputs come from the judge, and the judge's side of the
package (tasks, solutions, the judge) is neither loaded nor importable in the worker, nor readable by
path (env/worker/audit.py, env/judge/sandbox.py)."""

from __future__ import annotations

import socket
from multiprocessing.connection import Connection

import pytest
import torch
from warpgym.env.judge.pool import Worker
from warpgym.env.protocol import messages as m
from warpgym.env.protocol import wire
from warpgym.tasks import Sampler, get_task
from warpgym.tasks.spec import SOLUTIONS_DIR

PROBE = f"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def report(when):
    loaded = sorted(name for name in sys.modules if name.startswith(("warpgym.tasks", "warpgym.env.judge")))
    print(when, "LOADED", loaded)
    for name in ("warpgym.tasks", "warpgym.env.judge.references", "warpgym.experiments"):
        try:
            __import__(name)
            print(when, "IMPORTED", name)
        except ImportError as exc:
            print(when, "REFUSED", name, exc)
    try:
        with open({str(SOLUTIONS_DIR / "math" / "add.py")!r}) as f:
            print(when, "READ", len(f.read()))
    except OSError as exc:
        print(when, "UNREADABLE", type(exc).__name__)


report("import")


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
    report("call")
    return out
"""


@pytest.fixture(scope="module")
def probed():
    worker = Worker("cpu", "run")
    try:
        load = m.parse_reply("load", worker.request(
            m.LoadRequest(source=PROBE, entrypoint="add", params=["x", "y"]).wire(), timeout=300))
        assert load.ok, load.error
        task = get_task("math/add")
        case = task.shapes["dev"][0]
        inputs = task.make_inputs(case, Sampler(0, "normal", "cpu"))
        reply = m.parse_reply("run", worker.request(m.RunRequest(inputs=inputs).wire(), timeout=300))
        yield worker, reply, inputs, worker.log_tail(), worker.take_incidents()
    finally:
        worker.stop()


def test_the_worker_computes_on_the_inputs_the_judge_sent(probed):
    _, reply, inputs, log, _ = probed
    assert reply.ok, reply.error
    assert torch.equal(reply.outputs[0], inputs["x"] + inputs["y"])


def test_no_task_module_is_loaded_after_a_load_and_a_case(probed):
    _, _, _, log, _ = probed
    assert "import LOADED []" in log and "call LOADED []" in log, log


def test_tasks_and_the_judge_are_not_importable_and_the_attempt_is_reported(probed):
    _, _, _, log, incidents = probed
    for name in ("warpgym.tasks", "warpgym.env.judge.references", "warpgym.experiments"):
        assert f"call REFUSED {name}" in log, log
    assert "IMPORTED" not in log, log
    refused = [message for code, message in incidents if code == "forbidden-import"]
    assert any("warpgym.tasks" in message and "not importable" in message for message in refused), incidents


def test_a_solution_file_cannot_be_read_by_path(probed):
    _, _, _, log, _ = probed
    assert "call UNREADABLE" in log and "READ " not in log.replace("UNREADABLE", ""), log


def test_the_wire_carries_a_calls_inputs_exactly():
    """Tensors of every kind a task draws, dtypes as values, numbers and flags."""
    a, b = socket.socketpair()
    sender, receiver = Connection(a.detach()), Connection(b.detach())
    inputs = {"x": torch.randn(3, 5).to(torch.bfloat16), "idx": torch.randperm(7),
              "empty": torch.empty(0, 4),
              "qdtype": torch.int8, "scale": float("inf"), "n": 7, "flag": True, "none": None}
    wire.send(sender, {"op": "run", "inputs": inputs})
    got = m.parse_request(wire.recv(receiver)).inputs
    assert got["qdtype"] is torch.int8 and got["scale"] == float("inf") and got["n"] == 7
    assert got["flag"] is True and got["none"] is None
    for name in ("x", "idx", "empty"):
        assert got[name].dtype == inputs[name].dtype and torch.equal(got[name], inputs[name])
    sender.close()
    receiver.close()
