"""One evaluation's own state, the typed protocol between judge and worker, and candidates' attachments."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from warpgym.env import Candidate, CandidateError, EvalOptions, Evaluator
from warpgym.env.judge.evaluation import Evaluation
from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import CODES, message
from warpgym.tasks import get_task

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
ADD = get_task("math/add")
ADD_SRC = ADD.solution_source()
WRONG_SRC = ADD_SRC.replace("x + y, mask=mask", "x - y, mask=mask", 1)
ENV = Path(__file__).resolve().parents[1] / "env"


def _marked(source: str, marker: str) -> str:
    return f"print({marker!r})\n" + source


# ----------------------------------------------------------------------------- one object per evaluation
def test_two_threads_through_one_evaluator_each_get_their_own_verdict(monkeypatch):
    """Both evaluations are in flight at once (a barrier holds each until the other has started): each is
    lent its own workers and keeps its own candidate, checks and verdict."""
    assert WRONG_SRC != ADD_SRC
    started = threading.Barrier(2, timeout=120)
    original = Evaluation.evaluate

    def together(self):
        started.wait()
        return original(self)

    monkeypatch.setattr(Evaluation, "evaluate", together)
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def judge(name: str, source: str) -> None:
        try:
            results[name] = evaluator.evaluate(ADD, _marked(source, f"candidate {name}"), DEV)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with Evaluator("cpu") as evaluator:
        threads = [threading.Thread(target=judge, args=("right", ADD_SRC)),
                   threading.Thread(target=judge, args=("wrong", WRONG_SRC))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        right, wrong = results["right"], results["wrong"]
        assert right.correct is True, right.feedback
        assert wrong.correct is False and wrong.errors, wrong.feedback
        assert "candidate right" in right.stdout and "candidate wrong" not in right.stdout
        assert "candidate wrong" in wrong.stdout and "candidate right" not in wrong.stdout
        assert len(evaluator._spares) == 1, "the second evaluation was lent a pair of its own"
        # Afterwards, alone, the evaluator's own workers serve as before.
        monkeypatch.undo()
        assert evaluator.evaluate(ADD, ADD_SRC, DEV).correct


# ----------------------------------------------------------------------------- attachments
ATTACHED = '''from warpgym.loader import attachment

BLOCK = int(attachment("block.cuh").split()[-1])
print("attached block", BLOCK)
'''


def test_a_candidate_reads_its_attachment_by_name_in_the_worker(cpu_evaluator):
    source = ATTACHED + ADD_SRC.replace("block = ", "block = BLOCK if BLOCK else ", 1)
    assert "BLOCK if BLOCK" in source, "the reference changed; update the edit"
    candidate = Candidate(source, {"block.cuh": "// block size\n#define BLOCK 256"})
    result = cpu_evaluator.evaluate(ADD, candidate, DEV)
    assert result.correct, result.feedback
    assert "attached block 256" in result.stdout


def test_a_missing_attachment_is_an_import_error_naming_those_that_travelled(cpu_evaluator):
    candidate = Candidate(ATTACHED.replace("block.cuh", "other.cuh") + ADD_SRC, {"block.cuh": "// 1"})
    result = cpu_evaluator.evaluate(ADD, candidate, DEV)
    assert result.correct is not True and not result.compiled
    text = "\n".join(result.compile_errors)
    assert "no attachment named 'other.cuh'" in text and "block.cuh" in text, text


def test_attachments_are_part_of_the_offline_compile_key():
    from warpgym.env.judge.cache import fingerprint

    spec = {"kernel": "add_kernel"}
    plain, attached = Candidate(ADD_SRC), Candidate(ADD_SRC, {"k.cu": "// 1"})
    assert fingerprint(plain.to_dict(), spec) != fingerprint(attached.to_dict(), spec)


@pytest.mark.parametrize("name", ["../escape.cu", "/etc/passwd.cu", "notes.txt", "a/b.cu"])
def test_a_bad_attachment_name_is_refused_before_any_worker_starts(name):
    forged = Candidate(ADD_SRC)
    object.__setattr__(forged, "attachments", {name: "// x"})  # past the constructor's check
    with Evaluator("cpu") as evaluator:
        with pytest.raises(CandidateError, match="attachment"):
            evaluator.evaluate(ADD, forged, DEV)
        assert evaluator.run_worker.proc is None and evaluator.compile_worker.proc is None


# ----------------------------------------------------------------------------- the typed protocol
def test_a_malformed_reply_is_a_harness_error_and_the_worker_is_replaced():
    with Evaluator("cpu") as evaluator:
        original = evaluator.run_worker.request
        pids = []

        def forging(msg, timeout):
            reply = original(msg, timeout)
            if msg["op"] == "run":
                pids.append(evaluator.run_worker.proc.pid)
                reply = {"ok": True, "launches": "many"}  # no outputs, and a count that is no number
            return reply

        evaluator.run_worker.request = forging
        result = evaluator.evaluate(ADD, ADD_SRC, DEV)
        assert result.correct is not True and not result.compiled
        assert "the harness failed" in result.runtime_error, result.runtime_error
        assert "reply to 'run' is malformed" in result.runtime_error
        assert "launches: Input should be a valid integer" in result.runtime_error
        assert pids and not evaluator.run_worker.alive
        assert result.harness_failure is not None


def test_the_harness_running_out_of_memory_is_named_so_a_later_attempt_may_retry(monkeypatch):
    """Memory another evaluation on the GPU holds is no fault of the candidate's: the verdict names the
    failure's type, so the suite check and the server's cache can try again rather than keep it."""
    import torch

    def short_of_memory(self):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB")

    monkeypatch.setattr(Evaluation, "_stages", short_of_memory)
    with Evaluator("cpu") as evaluator:
        result = evaluator.evaluate(ADD, ADD_SRC, DEV)
    assert result.correct is not True and result.harness_failure == "OutOfMemoryError"
    assert "Tried to allocate 32.00 GiB" in result.runtime_error


@pytest.mark.parametrize(("op", "reply", "problem"), [
    ("run", [1, 2], "list, not a message"),
    ("time_block", {"ok": True, "event_ms": "fast"}, "event_ms"),
    ("load", {"ok": False}, "no error text"),
    ("ping", {"ok": True, "pid": 1, "smuggled": "x"}, "smuggled"),
    ("modules", {"ok": True, "modules": [{"name": "m"}]}, "modules.0.target"),
    ("compile", {"ok": True, "kernels": [{"ok": True}]}, "kernels.0.kernel"),
])
def test_replies_that_do_not_fit_their_operation_are_refused_by_name(op, reply, problem):
    with pytest.raises(m.ProtocolError, match=re.escape(problem)):
        m.parse_reply(op, reply)


def test_every_worker_operation_has_a_request_and_a_reply_type():
    from warpgym.env.worker.main import HANDLERS

    assert set(HANDLERS) == set(m.REQUESTS) == set(m.REPLIES)
    for op, request in m.REQUESTS.items():
        assert request.model_fields["op"].default == op


def test_the_worker_imports_no_judge_module():
    code = "import sys, warpgym.env.worker.main; print(sorted(m for m in sys.modules if 'judge' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"WARPGYM_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}).stdout
    judged = set(eval(out.strip().splitlines()[-1]))  # noqa: S307 - our own subprocess's list
    # The toolchain's loader still disassembles through judge/instructions.py; nothing else may load.
    assert judged <= {"warpgym.env.judge", "warpgym.env.judge.instructions"}, judged


# ----------------------------------------------------------------------------- violation codes
def _codes_raised_in_source() -> set[str]:
    pattern = re.compile(r"""(?:Violation|violation|flag|\bcode =)\(?\s*["']([a-z][a-z0-9-]+)["']""")
    table = re.compile(r"""\(\s*["'](sandbox-[a-z]+|introspection)["'],""")
    found: set[str] = set()
    for path in ENV.rglob("*.py"):
        text = path.read_text()
        found |= set(pattern.findall(text)) | set(table.findall(text))
    return found


def test_every_violation_code_raised_anywhere_is_defined_once():
    raised = _codes_raised_in_source()
    assert {"tampering", "inconsistent", "forbidden-import", "sandbox-network", "forged-reply"} <= raised
    assert raised <= set(CODES), raised - set(CODES)


def test_a_code_without_a_template_or_not_listed_cannot_be_worded():
    assert "seed 3" in message("stale-output", seed=3)
    with pytest.raises(KeyError):
        message("made-up-code")
    with pytest.raises(ValueError, match="words it"):
        message("syntax")
