"""Talking to an evaluation's workers: typed requests, validated replies, and recovery from crashes.

Every reply is validated against its operation's type before the judge reads it
(``protocol.messages.parse_reply``); one that does not fit stops the worker and ends the evaluation
as a harness error. A worker kept from earlier evaluations that crashes gets one retry in a new
process, since the damage may be an earlier candidate's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from warpgym.env.judge import findings, shipped
from warpgym.env.judge.plan import Check
from warpgym.env.judge.pool import Worker, WorkerError
from warpgym.env.judge.references import itemsize
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


def load(ev: Evaluation) -> bool:
    """Import the candidate into the run worker; False (with the reason recorded) when it cannot be."""
    result, worker = ev.result, ev.workers.run
    pid = worker_pid(worker)
    try:
        reply: m.LoadReply = ask(worker, load_request(ev), ev.options.limits.load)
    except WorkerError as exc:
        if exc.kind == "crash" and pid is not None and pid == ev.inherited:
            ev.inherited = None  # the damage was an earlier candidate's: import into a new worker
            return load(ev)
        result.compile_errors.append(f"importing the module: {exc}")
        return False
    result.stdout = worker.log_tail(clear=True)
    if not reply.ok:
        if reply.kind in ("missing-entrypoint", "signature"):
            result.violations.append(Violation(reply.kind, reply.error or ""))
            result.stage = "static"
        else:
            result.compile_errors.append(f"importing the module failed:\n{reply.error}")
        return False
    if reply.tampered:
        findings.tampered(ev, reply.tampered)
        return False
    return True


def _send_run(ev: Evaluation, request: m.RunRequest) -> m.RunReply:
    """One run request; a dead or overrunning worker becomes a failed reply of that kind."""
    try:
        with ev.gpu_shared():
            return ask(ev.workers.run, request, ev.options.limits.run)
    except WorkerError as exc:
        return m.RunReply(ok=False, kind=exc.kind, error=str(exc))


def run(ev: Evaluation, check: Check) -> m.RunReply | None:
    """Run the candidate on ``check``'s inputs and record what the reply shows beyond its outputs."""
    result, worker = ev.result, ev.workers.run
    _, meta = ev.reference(check)
    poison_bytes = 2 * sum(itemsize(t) for t in meta)
    request = m.RunRequest(task=ev.task.id, case=check.case, seed=check.seed, distribution=check.distribution,
                           poison_bytes=max(poison_bytes, 1 << 20),
                           max_output_bytes=2 * poison_bytes + (16 << 20),
                           contiguous_outputs=ev.task.contiguous_outputs, layout=ev.task.layout,
                           **shipped.run_fields(ev, check.case, check.seed, check.distribution))
    pid = worker_pid(worker)
    reply = _send_run(ev, request)
    if reply.kind == "crash" and pid is not None and pid == ev.inherited:
        ev.inherited = None  # once: a crash in a worker of its own is the candidate's
        if ev.load():
            reply = _send_run(ev, request)
    out = worker.log_tail(clear=True)
    if out:
        result.stdout = (result.stdout + "\n" + out).strip()[-4000:]
    if reply.cuda_error:
        worker.stop()  # a CUDA error poisons the context
    if reply.tampered:
        findings.tampered(ev, reply.tampered)
    findings.run_findings(ev, reply)
    if reply.device_trace is not None:
        ev.device_traces.append((case_label(check.case), reply.device_trace))
    if not ev.options.allow_torch:
        findings.torch_ops(ev, reply.forbidden_ops)
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
            if worker.alive and ask(worker, m.PingRequest(), 30).tampered:
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
