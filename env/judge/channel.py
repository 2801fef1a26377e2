"""Talking to an evaluation's workers: typed requests, validated replies, and recovery from crashes.

Every reply is validated against its operation's type before the judge reads it
(``protocol.messages.parse_reply``); one that does not fit stops the worker and ends the evaluation
as a harness error. A worker kept from earlier evaluations that crashes gets one retry in a new
process, since the damage may be an earlier candidate's.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any, Literal

import torch
from warpgym.env.common.device import release_cached_memory
from warpgym.env.judge import findings, shipped
from warpgym.env.judge.plan import Check
from warpgym.env.judge.pool import Worker, WorkerError
from warpgym.env.judge.references import itemsize
from warpgym.env.judge.static import names_load_inline
from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import Violation
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation


def ask(worker: Worker, request: m.Message, timeout: float) -> Any:
    """``request``'s typed reply; WorkerError when the worker died or overran, ProtocolError (and the
    worker stopped) when its reply does not fit the operation's type."""
    op = request.wire()["op"]
    raw = worker.request(request.wire(), timeout=timeout)
    try:
        return m.parse_reply(op, raw)
    except m.ProtocolError:
        worker.stop()  # never reuse a process that answers out of protocol
        raise


def worker_pid(worker: Worker) -> int | None:
    proc = getattr(worker, "proc", None)
    return proc.pid if proc is not None and worker.alive else None


def load_request(ev: Evaluation, mode: Literal["run", "compile"] = "run") -> m.LoadRequest:
    """The import of the candidate; the compile worker's imports it only to find its kernels."""
    run = mode == "run"
    return m.LoadRequest(source=ev.candidate.source, entrypoint=ev.task.entrypoint,
                         params=ev.params if run else [], target=ev.options.target if run else None,
                         mode=mode, attachments=dict(ev.candidate.attachments),
                         model=run and ev.task.model is not None)


def close_problem_file(ev: Evaluation) -> None:
    """An imported problem's file is closed to the workers that start after it was read
    (``sandbox.problem_files``); a worker kept from before is replaced before the candidate reaches it."""
    if ev.task.model is None:
        return
    path = os.path.realpath(ev.task.model.path)
    for worker in (ev.workers.run, ev.workers.compile):
        if getattr(worker, "sandbox", False) is not False and worker.alive \
                and path not in getattr(worker, "protected", frozenset()):
            worker.stop()


def load_seconds(ev: Evaluation) -> float:
    """The import's time limit: a module that builds a CUDA extension waits for the compiler too."""
    limits = ev.options.limits
    return max(limits.load, limits.compile) if names_load_inline(ev.candidate.source) else limits.load


def retire_native(ev: Evaluation) -> None:
    """A worker that loaded a candidate's native code (a CUDA extension) serves no other candidate: what
    that code left behind (threads, patched memory) would be in the next one's evidence."""
    if ev.extensions:
        ev.workers.run.stop()


def load(ev: Evaluation) -> bool:
    """Import the candidate into the run worker; False (with the reason recorded) when it cannot be."""
    result, worker = ev.result, ev.workers.run
    ev.models_sent.clear()  # a load starts the worker's instances afresh
    pid = worker_pid(worker)
    try:
        reply: m.LoadReply = ask(worker, load_request(ev), load_seconds(ev))
    except WorkerError as exc:
        if exc.kind == "crash" and pid is not None and pid == ev.inherited:
            ev.inherited = None  # the damage was an earlier candidate's: import into a new worker
            return load(ev)
        result.compile_errors.append(f"importing the module: {exc}")
        return False
    result.stdout = worker.log_tail(clear=True)
    ev.loaded = worker_pid(worker)
    ev.extensions = result.extensions = list(reply.extensions)
    if not reply.ok:
        if reply.kind == "needs-gpu" and names_load_inline(ev.candidate.source):
            result.skipped_checks.append(f"{reply.error}: nothing was built or checked on this machine")
            return False
        if reply.kind == "needs-gpu":  # a module that builds no extension cannot have been refused one
            reply.error = "the module failed as it was imported, and its source builds no CUDA extension"
        if reply.kind in ("missing-entrypoint", "signature"):
            result.violations.append(Violation(reply.kind, reply.error or ""))
            result.stage = "static"
        else:
            result.compile_errors.append(f"importing the module failed:\n{reply.error}")
        return False
    if reply.tampered:
        findings.tampered(ev, reply.tampered)
        return False
    found = len(result.violations)
    findings.host_compute(ev, reply.forbidden_ops)
    findings.torch_ops(ev, reply.forbidden_ops, when="while the module was imported, ")
    return len(result.violations) == found


def _died_between_calls(ev: Evaluation) -> str | None:
    """Why the run worker holding the candidate is gone, if it went while idle (killed from outside, or
    stopped after an earlier failure): the next request would start a fresh worker that holds nothing."""
    worker = ev.workers.run
    if ev.loaded is None or worker_pid(worker) == ev.loaded:
        return None
    proc = getattr(worker, "proc", None)
    code = proc.poll() if proc is not None else None
    if proc is None:
        return "the worker holding the candidate was stopped after an earlier failure"
    if code is None:
        return "the worker holding the candidate was replaced between calls"
    worker.kill()
    how = f"killed by signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit {code}"
    return f"the worker process died between calls ({how})"


def _send_run(ev: Evaluation, request: m.RunRequest) -> m.RunReply:
    """One run request; a dead or overrunning worker becomes a failed reply of that kind."""
    gone = _died_between_calls(ev)
    if gone is not None:
        return m.RunReply(ok=False, kind="crash", error=gone)
    try:
        with ev.gpu_shared():
            return ask(ev.workers.run, request, ev.options.limits.run)
    except WorkerError as exc:
        return m.RunReply(ok=False, kind=exc.kind, error=str(exc))


def call_inputs(ev: Evaluation, case: dict[str, Any], seed: int, distribution: str,
                device: str | None = None, purpose: str = "check") -> m.Inputs:
    """One call's arguments, drawn by the judge (on its device, like the references) and sent with the
    request: the worker never holds a task, its reference, its other cases or its held-out shapes. ``seed``
    is a role: the values come from the seed the evaluation derives for it (judge/seeds.py), never sent."""
    return ev.task.make_inputs(case, ev.seeds.sampler(seed, distribution, device or ev.device, purpose))


def poison_bytes(outputs: list[Any]) -> int:
    """Memory poisoned before a call whose reference outputs are ``outputs`` (real or meta tensors): twice
    theirs, so a call's fresh outputs land in NaN, whether the call is checked or timed."""
    return max(2 * sum(itemsize(t) for t in outputs), 1 << 20)


def stage_inputs(ev: Evaluation, case: dict[str, Any], seeds: list[int], timeout: float) -> m.StageReply:
    """One input set per seed (a role, as the baselines' sets: ``Baselines``) kept in the worker for the
    timing requests that follow; the judge's copies are freed before they start (a bench case's sets take
    gigabytes)."""
    from warpgym.env.judge.references import output_meta

    sets = [call_inputs(ev, case, seed, "normal", purpose="timing") for seed in seeds]
    meta = output_meta(ev.task, sets[0], case)
    stage = m.StageRequest(input_sets=sets, poison_bytes=poison_bytes(meta),
                           output_bytes=[itemsize(t) for t in meta], model=shipped.model_call(ev, case),
                           layout=ev.task.layout, host_moves=ev.task.host_moves)
    del sets
    staged: m.StageReply = ask(ev.workers.run, stage, timeout)
    del stage
    release_cached_memory(ev.device)
    return staged


def run(ev: Evaluation, check: Check, settle_ms: float = 0.0) -> m.RunReply | None:
    """Run the candidate on ``check``'s inputs and record what the reply shows beyond its outputs; on a GPU,
    ``settle_ms`` of spinning first brings an idle GPU's clock up."""
    result, worker = ev.result, ev.workers.run
    _, meta = ev.reference(check)
    poisoned = poison_bytes(meta)
    # On the host before the request: the judge's GPU copy is freed while the worker runs (the wire would
    # copy each tensor to the host anyway).
    inputs = {k: v.to("cpu") if isinstance(v, torch.Tensor) else v
              for k, v in call_inputs(ev, check.case, check.seed, check.distribution,
                                      purpose=check.purpose).items()}

    def request() -> m.RunRequest:  # the model call depends on what the worker holds: made per send
        return m.RunRequest(inputs=inputs, poison_bytes=poisoned, output_bytes=[itemsize(t) for t in meta],
                            max_output_bytes=4 * sum(itemsize(t) for t in meta) + (16 << 20),
                            contiguous_outputs=ev.task.contiguous_outputs, layout=ev.task.layout,
                            host_moves=ev.task.host_moves,
                            model=shipped.model_call(ev, check.case), settle_ms=settle_ms)

    pid = ev.loaded
    reply = _send_run(ev, request())
    if reply.kind == "crash" and pid is not None and pid == ev.inherited:
        ev.inherited = None  # once: a crash in a worker of its own is the candidate's
        if ev.load():
            reply = _send_run(ev, request())
    out = worker.log_tail(clear=True)
    if out:
        result.stdout = (result.stdout + "\n" + out).strip()[-4000:]
    if reply.cuda_error:
        worker.stop()  # a CUDA error poisons the context
    if reply.tampered:
        findings.tampered(ev, reply.tampered)
    findings.torch_ops(ev, reply.forbidden_ops)  # first: what host code computed explains what follows
    findings.run_findings(ev, reply)
    if reply.device_trace is not None:
        ev.device_traces.append((case_label(check.case), reply.device_trace))
    if reply.mutated:
        ev.flag("mutated-input", names=", ".join(reply.mutated))
    return reply


def integrity(ev: Evaluation) -> None:
    """After every evaluation: flush each worker's channel, and turn what the sandbox refused and any
    forged reply into violations. A worker that saw either is replaced."""
    result = ev.result
    # Threads left running, or memory written past an input's end, leave the process itself unsound.
    unsound = any(v.code in ("background-work", "out-of-bounds") for v in result.violations)
    for worker in (ev.workers.run, ev.workers.compile):
        try:
            pong = ask(worker, m.PingRequest(), 30) if worker.alive else None
            if pong is not None and (pong.tampered or pong.changed_state):
                worker.stop()  # patched by a candidate's import (the compile worker runs it too)
        except Exception:  # noqa: BLE001 - a worker that cannot answer a ping is replaced, not trusted
            worker.stop()
        incidents = worker.take_incidents()
        for code, message in incidents:
            if not any(v.code == code and v.message == message for v in result.violations):
                result.violations.append(Violation(code, message))
        if incidents or (unsound and worker is ev.workers.run):
            result.correct = False
            worker.stop()  # never reuse a process a candidate fought with, or left threads in
    report = ev.workers.run.sandbox_report or ev.workers.compile.sandbox_report
    if report is not None or result.stage != "static":
        result.sandbox = report or {"not_applied": {"sandbox": "the workers ran without a sandbox"}}
