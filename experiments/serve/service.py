"""The server without HTTP: submissions in, verdicts out, through an executor's warm workers.

A submission is checked (task known, candidate within the limits, options allowed), written to the
journal, and then either answered at once (a verdict already known), joined to the same evaluation
already waiting or running, or queued. One dispatch thread per executor slot takes the most urgent
evaluation, runs it on the executor (the same call the experiment runner makes), writes the verdict and
tells whoever waits. An executor failure (a worker or actor lost) is tried again, up to
``settings.attempts`` times, and then answered with a verdict that says so; a candidate that kills or
hangs its worker gets the judge's own verdict on that, like any other.

Stopping (``close``): no new submissions and no new evaluations; evaluations in flight may finish for
``settings.drain_s`` seconds, and those that do not are cancelled (their workers killed) and left in the
journal with everything still queued, to run at the next start.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from warpgym.env.candidate import MAX_ATTACHMENT_BYTES, Candidate, CandidateError
from warpgym.tasks.fingerprint import task_fingerprint

from .cache import SERVER_ERROR, reusable, verdict_key
from .journal import Journal
from .models import Submission
from .queue import PendingQueue
from .settings import Settings
from .telemetry import Telemetry, outcome

if TYPE_CHECKING:
    from warpgym.env import EvalOptions
    from warpgym.experiments.executors import Executor
    from warpgym.tasks import Task

log = logging.getLogger("warpgym.serve")

Listener = Callable[[list[str] | None], None]
"""Told the ids just answered, or None when the service starts draining or cancels what runs."""


class Refused(Exception):
    """A request the service will not take: ``status`` is the HTTP code, ``message`` says why."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def eval_options(options: dict[str, Any], device: str) -> EvalOptions:
    from warpgym.env import EvalOptions, Limits

    timeouts = {k: v for k, v in (options.get("timeouts") or {}).items() if v is not None}
    return EvalOptions(target=options["target"], device=device, shape_sets=tuple(options["shape_sets"]),
                       timing=options["timing"], warmup=options["warmup"], reps=options["reps"],
                       limits=Limits(**timeouts), reveal_shapes=options["reveal_shapes"],
                       profile=options["profile"], memcheck=options["memcheck"])


def dumps(result: dict[str, Any]) -> str:
    """A verdict as JSON; NaN errors stay NaN (as Python's json writes them), never a made-up number."""
    return json.dumps(result, default=str)


class EvalService:
    def __init__(self, executor: Executor, journal: Journal, settings: Settings, *, where: str) -> None:
        self.executor = executor
        self.journal = journal
        self.settings = settings
        self.where = where
        """What the server judges on (device kind and name, version): part of every verdict key."""
        self.kind = executor.kind
        self.telemetry = Telemetry()
        self.queue = PendingQueue(settings.max_queue)
        self.lock = threading.Lock()
        self.running: dict[str, float] = {}
        self.enqueued: dict[str, float] = {}
        self.listeners: list[Listener] = []
        self.threads: list[threading.Thread] = []
        self.draining = False
        self.cancelled = False
        self.mean_eval_s = 5.0
        self.resumed = self._resume()

    # ------------------------------------------------------------------ starting and stopping
    def _resume(self) -> int:
        """Put the submissions an earlier server accepted and never answered back on the queue."""
        self.journal.requeue()
        rows = self.journal.unanswered()
        now = time.monotonic()
        for row in rows:
            known = self.journal.verdict(row.key) if self.settings.cache else None
            if known is not None:
                self.journal.finish(row.key, known, remember=False)
                continue
            self.queue.push(row.key, row.priority, row.seq, force=True)
            self.enqueued.setdefault(row.key, now)
        return len(rows)

    def start(self) -> None:
        for i in range(max(1, len(self.executor.slots))):
            thread = threading.Thread(target=self._dispatch, name=f"serve-dispatch-{i}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def begin_drain(self) -> None:
        """Take no more submissions and start no more evaluations (those queued stay in the journal)."""
        if self.draining:
            return
        self.draining = True
        self.queue.close()
        self._tell(None)

    def close(self) -> None:
        self.begin_drain()
        deadline = time.monotonic() + self.settings.drain_s
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        cut = [t for t in self.threads if t.is_alive()]
        if cut:
            with self.lock:
                self.cancelled = True
                keys = len(self.running)
            log.warning("cancelled %d evaluation(s) still running after %g s; they run again at the next "
                        "start", keys, self.settings.drain_s)
            self._tell(None)
        self.executor.close()
        for thread in cut:
            thread.join(10)
        if cut:
            self.executor.close()  # any worker an interrupted evaluation started again goes too
        self.journal.close()

    # ------------------------------------------------------------------ submissions
    def _check(self, sub: Submission, where: str) -> Task:
        from warpgym.env.environment import MAX_SOURCE_CHARS
        from warpgym.tasks import UnknownTaskError, get_task

        try:
            task = get_task(sub.task)
        except UnknownTaskError as exc:
            raise Refused(422, f"{where}{exc}") from None
        if len(sub.source) > MAX_SOURCE_CHARS:
            raise Refused(413, f"{where}the module's source is {len(sub.source):,} characters; at most "
                               f"{MAX_SOURCE_CHARS:,} are judged")
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in sub.attachments.values())
        if size > MAX_ATTACHMENT_BYTES:
            raise Refused(413, f"{where}the attachments total {size:,} bytes; at most "
                               f"{MAX_ATTACHMENT_BYTES:,} travel with a candidate")
        try:
            Candidate(sub.source, sub.attachments)
        except CandidateError as exc:
            raise Refused(422, f"{where}{exc}") from None
        for name, value in sub.options.timeouts.model_dump().items():
            if value is not None and value > self.settings.max_timeout_s:
                raise Refused(422, f"{where}options.timeouts.{name} = {value:g} s; this server allows "
                                   f"at most {self.settings.max_timeout_s:g} s")
        return task

    def retry_after(self) -> float:
        """Seconds until the queue has room again, roughly: what waits, over the workers, at recent speed."""
        workers = max(1, len(self.executor.slots))
        return float(min(60, max(1, math.ceil(len(self.queue) * self.mean_eval_s / workers))))

    def submit(self, subs: list[Submission]) -> list[dict[str, Any]]:
        """Accept every submission or none: each one's id and state (``done`` when answered at once)."""
        if self.draining:
            raise Refused(503, "the server is shutting down; submit again once it is back", retry_after=5)
        many = len(subs) > 1
        keyed = []
        for i, sub in enumerate(subs):
            task_print = task_fingerprint(self._check(sub, f"items[{i}]: " if many else ""))
            key = verdict_key(sub, self.where, eval_options(sub.options.model_dump(mode="json"), self.kind),
                              task_print)
            if not self.settings.cache:
                key = f"{key}:{secrets.token_hex(8)}"
            keyed.append((sub, key, task_print))
        rows, answers, fresh = [], [], set()
        with self.lock:
            for sub, key, task_print in keyed:
                known = self.journal.verdict(key) if self.settings.cache else None
                if known is not None:
                    how = "cached"
                elif key in fresh or key in self.queue or key in self.running:
                    how = "joined"
                else:
                    how = "queued"
                    fresh.add(key)
                state = "done" if known else "running" if key in self.running else "queued"
                rows.append({"id": secrets.token_urlsafe(12), "key": key, "task": sub.task,
                             "priority": sub.priority, "state": state, "result": known,
                             "request": {**sub.model_dump(mode="json"), "task_print": task_print}})
                answers.append(how)
            if len(fresh) > self.queue.room():
                self.telemetry.count("warpgym_serve_rejected_total", reason="queue_full")
                room = self.queue.room()
                raise Refused(429, f"the queue is full ({len(self.queue)} evaluations wait; room for {room}, "
                                   f"{len(fresh)} asked); retry later", retry_after=self.retry_after())
            seqs = self.journal.add(rows)
            now = time.monotonic()
            for row, seq in zip(rows, seqs, strict=True):
                if row["state"] == "queued":
                    self.queue.push(row["key"], row["priority"], seq, force=True)
                    self.enqueued.setdefault(row["key"], now)
        for how in answers:
            self.telemetry.count("warpgym_serve_submissions_total", how=how)
        return [{"id": r["id"], "state": r["state"], "cached": how == "cached"}
                for r, how in zip(rows, answers, strict=True)]

    # ------------------------------------------------------------------ reading
    def get(self, submission_id: str) -> dict[str, Any] | None:
        row = self.journal.get(submission_id)
        if row is None:
            return None
        row.pop("key")
        text = row.pop("result")
        if text is not None:
            row["result"] = json.loads(text)
        return row

    def states(self, ids: list[str]) -> dict[str, str]:
        return self.journal.states(ids)

    def status(self) -> dict[str, Any]:
        counts = self.journal.counts()
        with self.lock:
            running = len(self.running)
        return {"status": "draining" if self.draining else "ok", "kind": self.kind,
                "workers": len(self.executor.slots), "queued": len(self.queue), "running": running,
                "waiting_submissions": counts.get("queued", 0) + counts.get("running", 0),
                "answered": counts.get("done", 0), "resumed": self.resumed}

    def metrics_text(self) -> str:
        from warpgym.env.judge.pool import Worker

        status = self.status()
        restarts = Worker.restarts + float(self.executor.stats().get("replaced", 0))
        gauges = {
            "warpgym_serve_queue_length": ("distinct evaluations waiting for a worker", status["queued"]),
            "warpgym_serve_running": ("evaluations on a worker now", status["running"]),
            "warpgym_serve_waiting_submissions": ("submissions accepted and not yet answered",
                                                  status["waiting_submissions"]),
            "warpgym_serve_workers": ("evaluation workers (executor slots)", status["workers"]),
            "warpgym_serve_draining": ("1 while the server shuts down", int(self.draining)),
            "warpgym_serve_journal_bytes": ("size of the journal on disk", self.journal.size_bytes()),
        }
        counters = {
            "warpgym_serve_worker_restarts_total": ("worker processes (or Ray actors) started in place of "
                                                    "one that died, hung or was retired", restarts),
        }
        return self.telemetry.render(gauges, counters, gpus=self.kind == "cuda")

    # ------------------------------------------------------------------ listeners
    def listen(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def _tell(self, ids: list[str] | None) -> None:
        for listener in list(self.listeners):
            try:
                listener(ids)
            except Exception:  # noqa: BLE001 - a listener gone (its event loop closed) must not stop dispatch
                log.exception("a result listener failed")

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self) -> None:
        while not self.draining:
            if not self.queue.wait(0.5):
                continue
            with self.lock:
                key = self.queue.pop()
                if key is None:
                    continue
                request = self.journal.start(key)
                if request is None:
                    continue
                self.running[key] = time.monotonic()
                waited = self.running[key] - self.enqueued.pop(key, self.running[key])
            self.telemetry.observe("queue", waited)
            result, server_error = self._judge(request)
            with self.lock:
                if self.cancelled:
                    return  # left running in the journal: the next start runs it again
                ids = self.journal.finish(key, dumps(result), self.settings.cache and reusable(result))
                started = self.running.pop(key)
            elapsed = time.monotonic() - started
            self.mean_eval_s = 0.8 * self.mean_eval_s + 0.2 * elapsed
            self.telemetry.evaluated()
            self.telemetry.count("warpgym_serve_evaluations_total", outcome=outcome(result, server_error))
            self._tell(ids)

    def _judge(self, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The verdict on one request, and whether the server (not the judge) gave up on it."""
        from warpgym.tasks import UnknownTaskError, get_task

        try:
            task = get_task(request["task"])
        except UnknownTaskError as exc:  # accepted by an earlier start that had the task's suite
            return self._unknown(request, exc), True
        if request.get("task_print") not in (None, task_fingerprint(task)):
            changed = ("the task changed since this submission was accepted (the server restarted with "
                       "another version of its suite); submit it again")
            return self._unknown(request, changed), True
        attachments = request.get("attachments") or {}
        candidate: str | Candidate = Candidate(request["source"], attachments) if attachments \
            else request["source"]
        options = eval_options(request["options"], self.kind)
        failures: list[str] = []
        for attempt in range(self.settings.attempts):
            if self.cancelled:
                break
            if attempt:
                self.telemetry.count("warpgym_serve_retries_total")
            t0 = time.monotonic()
            try:
                result = self.executor.evaluate(task, candidate, options)
            except Exception as exc:  # noqa: BLE001 - whatever the executor raised, the client gets a verdict
                failures.append(f"{type(exc).__name__}: {str(exc)[:300]}")
                log.warning("evaluation of a %s candidate failed (attempt %d): %s", task.id, attempt + 1,
                            failures[-1])
                continue
            self.telemetry.observe("evaluation", time.monotonic() - t0)
            for stage, seconds in result.seconds.items():
                self.telemetry.observe(stage, seconds)
            return result.to_dict(), False
        return self._gave_up(task, options, failures), True

    def _gave_up(self, task: Task, options: EvalOptions, failures: list[str]) -> dict[str, Any]:
        from warpgym.env import EvalResult
        from warpgym.env.judge import feedback

        result = EvalResult(task=task.id, target=options.target, device=self.kind, correct=False)
        result.runtime_error = (f"{SERVER_ERROR} after {len(failures)} attempt(s): " + "; ".join(failures)
                                if failures else f"{SERVER_ERROR}: the server was stopping")
        result.feedback = feedback.render(result, task, options.reveal_shapes)
        return result.to_dict()

    def _unknown(self, request: dict[str, Any], exc: Exception | str) -> dict[str, Any]:
        from warpgym.env import EvalResult

        result = EvalResult(task=request["task"], target=request["options"]["target"], device=self.kind,
                            correct=False)
        result.runtime_error = (f"{SERVER_ERROR}: {exc}" if isinstance(exc, str) else
                                f"{SERVER_ERROR}: {exc}; this server was started without the suite it "
                                "comes from (warpgym serve --suite FORMAT=PATH)")
        result.feedback = result.runtime_error
        return result.to_dict()
