"""Where evaluations run: worker processes on this host, or Ray actors on a cluster.

The runner asks an executor for verdicts and never sees processes, GPUs or nodes, so going from
one GPU to a cluster is one line of the experiment file (``run.executor``). Both executors give
each worker one evaluation at a time and may be called from many episode threads at once.

- ``LocalExecutor``: one ``Evaluator`` per entry of ``devices``. ``cuda:N`` pins it to GPU N: its
  worker process sees only that GPU, and its host-side work (references, baselines) runs with N
  as the current device. Listing a GPU k times (``run.workers_per_gpu = k``) gives it k evaluators:
  while one times, the others compile and check on the CPU cores. Timing takes the GPU's file lock
  (``env.common.timing.gpu_lock``), so two timings never overlap on one GPU. The lock covers timing only:
  another evaluator's correctness runs (small kernels) may still share the GPU with a timing.
- ``RayExecutor``: actors holding an ``Evaluator`` each, ``1 / workers_per_gpu`` of a GPU apiece
  (Ray sets each actor's ``CUDA_VISIBLE_DEVICES``), or one CPU apiece on a cluster without GPUs.
  A lost actor (killed, crashed, its node gone, or a message to it garbled) is replaced in the
  background and its evaluation resubmitted to whichever actor is free first. An evaluation is a pure
  function of (task, source, options), so running one again changes nothing, and the runner stores each
  turn once. An actor is a process of its own, which knows only the built-in tasks: it imports the
  driver's imported suites (format -> absolute path) before it takes an evaluation, from the same path
  on its own node.

Ray is imported only when a ``RayExecutor`` is made (``pip install 'warpgym[ray]'``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warpgym.env import EvalOptions, EvalResult
    from warpgym.env.candidate import Candidate
    from warpgym.env.evaluates import Evaluates
    from warpgym.tasks import Task

LOST_RETRIES = 3
"""Attempts per evaluation before it is given up (each after its worker was lost)."""


RAY_INIT: dict[str, Any] = {
    "include_dashboard": False,
    "log_to_driver": False,
    "logging_level": logging.WARNING,
}
"""How the runner starts or joins Ray: no dashboard, no actor output or INFO lines over the progress."""

log = logging.getLogger("warpgym.executors")


class ExecutorError(RuntimeError):
    """An executor that cannot start (no Ray, no cluster, no capacity), or that lost every worker."""


class Executor:
    """The interface the runner calls (an ``Evaluates`` that also accepts a task id). ``evaluate``
    blocks; ``submit`` returns a future."""

    kind: str = "cpu"
    """What evaluations run on, ``cuda`` or ``cpu`` (what the environment and the prompts are told)."""

    def __init__(self) -> None:
        self._threads: ThreadPoolExecutor | None = None
        self._threads_lock = threading.Lock()
        self._counts_lock = threading.Lock()
        self.evaluations = 0

    @property
    def slots(self) -> list[str]:
        """One label per worker (for the run's events and logs)."""
        raise NotImplementedError

    def evaluate(self, task: Task | str, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult:
        """The verdict on ``candidate`` for ``task`` (a ``Task`` or its id)."""
        raise NotImplementedError

    def submit(
        self, task: Task | str, candidate: str | Candidate, options: EvalOptions
    ) -> Future[EvalResult]:
        """``evaluate`` on a thread of the executor's own: for callers that fan out work themselves."""
        with self._threads_lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(max(1, len(self.slots)), thread_name_prefix="evaluate")
        return self._threads.submit(self.evaluate, task, candidate, options)

    def stats(self) -> dict[str, Any]:
        return {"executor": type(self).__name__, "workers": len(self.slots), "evaluations": self.evaluations}

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)

    def _count(self) -> None:
        with self._counts_lock:
            self.evaluations += 1

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _task(task: Task | str) -> Task:
    from warpgym.tasks import get_task

    return get_task(task) if isinstance(task, str) else task


@contextlib.contextmanager
def current_gpu(device: str) -> Iterator[None]:
    """Make GPU N this thread's current device for ``cuda:N`` (the CUDA current device is per thread),
    so host-side timing in the evaluator (baselines) uses and locks the evaluator's own GPU."""
    if not device.startswith("cuda:"):
        yield
        return
    import torch

    with torch.cuda.device(int(device.split(":", 1)[1])):
        yield


# --------------------------------------------------------------------------- local
class LocalExecutor(Executor):
    """Evaluators on this host, one per entry of ``devices`` (repeat a GPU to give it several)."""

    def __init__(self, devices: list[str], *, factory: Callable[[str], Evaluates] | None = None) -> None:
        super().__init__()
        if not devices:
            raise ExecutorError("no devices to evaluate on")
        if factory is None:
            from warpgym.env import Evaluator

            factory = Evaluator
        self.devices = list(devices)
        self.kind = "cuda" if self.devices[0].startswith("cuda") else "cpu"
        self.evaluators = [(d, factory(d)) for d in self.devices]
        self.free: queue.Queue[tuple[str, Evaluates]] = queue.Queue()
        for pair in self.evaluators:
            self.free.put(pair)

    @property
    def slots(self) -> list[str]:
        return list(self.devices)

    def evaluate(self, task: Task | str, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult:
        judged = _task(task)
        device, evaluator = self.free.get()
        try:
            self._count()
            with current_gpu(device):
                return evaluator.evaluate(judged, candidate, options)
        finally:
            self.free.put((device, evaluator))

    def close(self) -> None:
        super().close()
        for _, evaluator in self.evaluators:
            try:
                evaluator.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


# --------------------------------------------------------------------------- ray
def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError("executor = \"ray\" needs Ray: pip install 'warpgym[ray]'") from None
    return ray


class EvalActor:
    """A Ray actor holding one Evaluator (its worker processes live as long as the actor).

    ``suites`` are the driver's imported suites: an imported task id means nothing in this process until
    its suite is imported here, so they are imported before the actor reports ready or evaluates."""

    def __init__(self, device: str, suites: dict[str, str] | None = None) -> None:
        from warpgym.env import Evaluator

        self.evaluator = Evaluator(device)
        self.suites = dict(suites or {})
        self.suites_error: str | None = None
        self.registered = False

    def _register(self) -> str | None:
        """Import the suites once; why one could not be imported here, or None."""
        if self.registered:
            return self.suites_error
        self.registered = True
        from warpgym.tasks.importers import use

        for fmt, path in self.suites.items():
            try:
                use({fmt: path})
            except Exception as exc:  # noqa: BLE001 - reported to the driver, which stops this actor
                self.suites_error = (
                    f"the {fmt} suite at {path} could not be imported on {socket.gethostname()}: "
                    f"{exc} (each Ray node needs the suite's files at that path)"
                )
                break
        return self.suites_error

    def ready(self) -> dict[str, Any]:
        import ray

        info: dict[str, Any] = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "node": ray.get_runtime_context().get_node_id(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
        }
        error = self._register()
        if error is not None:
            info["error"] = error
        return info

    def evaluate(self, task_id: str, candidate: str | Candidate, options: EvalOptions,
                 fingerprint: str | None = None) -> dict[str, Any]:
        """The verdict as a dict: what crosses to the driver is plain data. The task is looked up here by
        its id; ``fingerprint`` (the driver's, tasks/fingerprint.py) must match this node's, or a node with
        another version of warpgym or of a suite would judge by other shapes, tolerances or references."""
        from warpgym.tasks import get_task
        from warpgym.tasks.fingerprint import task_fingerprint

        error = self._register()
        if error is not None:
            raise ExecutorError(error)
        task = get_task(task_id)
        if fingerprint is not None and task_fingerprint(task) != fingerprint:
            raise ExecutorError(
                f"{task_id} on {socket.gethostname()} is not the driver's task (its shapes, checks or "
                "reference differ): every Ray node needs the same warpgym and suite files"
            )
        return self.evaluator.evaluate(task, candidate, options).to_dict()

    def close(self) -> None:
        self.evaluator.close()


@dataclass
class Slot:
    """One actor: its place in the pool, how many times that place was refilled, where it runs."""

    index: int
    handle: Any
    generation: int = 0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        where = self.info.get("host", "?")
        gpus = self.info.get("gpus")
        return f"ray:{where}:{'gpu' + ','.join(gpus) if gpus else 'cpu'}#{self.index}.{self.generation}"


class RayExecutor(Executor):
    """Evaluations on Ray actors; a lost actor is replaced and its evaluation resubmitted.

    ``address``: the cluster to join (``auto``, ``HOST:PORT``, ``ray://HOST:10001``); ``None`` starts
    a local Ray instance (or joins ``$RAY_ADDRESS``). When Ray is already initialised in this
    process it is used as it is and left running on ``close``. ``suites``: the imported suites each
    actor imports (format -> absolute path); ``None`` takes those imported in this process now.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        devices: str | list[str] = "auto",
        workers: int | None = None,
        workers_per_gpu: int = 1,
        retries: int = LOST_RETRIES,
        start_timeout_s: float = 300.0,
        init_kwargs: dict[str, Any] | None = None,
        suites: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        ray = import_ray()
        self.ray = ray
        if suites is None:
            from warpgym.tasks.importers import active_sources

            suites = active_sources()
        self.suites = {fmt: str(Path(path).expanduser().resolve()) for fmt, path in suites.items()}
        self.retries = retries
        self.start_timeout_s = start_timeout_s
        self.on_dispatch: Callable[[Slot, Any], None] | None = None
        """Called after each evaluation is sent to an actor, with its slot and the call's ObjectRef."""
        self.owns_ray = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, **{**RAY_INIT, **(init_kwargs or {})})
            except Exception as exc:  # noqa: BLE001 - any failure to reach the cluster is the user's to fix
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise ExecutorError(f"could not start or join {where}: {type(exc).__name__}: {exc}") from None
            self.owns_ray = True
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        cpus = int(resources.get("CPU", 0))
        if isinstance(devices, list):
            raise ExecutorError('with executor = "ray" use devices = "auto", "cuda" or "cpu", not a list')
        if devices == "cuda" and not gpus:
            raise ExecutorError('devices = "cuda" but the Ray cluster has no GPU (see `ray status`)')
        if devices == "cuda" or (devices == "auto" and gpus):
            self.kind, count = "cuda", gpus * workers_per_gpu
            self.actor_options = {"num_gpus": 1.0 / workers_per_gpu, "num_cpus": 0}
        else:
            self.kind, count = "cpu", workers or max(1, cpus // 2)
            self.actor_options = {"num_cpus": 1}
        self.actor_class = ray.remote(max_restarts=0, max_task_retries=0)(EvalActor)
        self.lock = threading.Lock()
        self.free: queue.Queue[Slot] = queue.Queue()
        self.current: dict[int, Slot] = {}
        self.pending = 0
        self.lost = 0
        self.replaced = 0
        self.closed = False
        self._start([self._spawn(i) for i in range(count)])

    # ------------------------------------------------------------------ actors
    def _spawn(self, index: int, generation: int = 0) -> Slot:
        handle = self.actor_class.options(**self.actor_options).remote(self.kind, self.suites)
        return Slot(index, handle, generation)

    def _start(self, slots: list[Slot]) -> None:
        refs = {s.handle.ready.remote(): s for s in slots}
        done, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=self.start_timeout_s)
        suite_errors: list[str] = []
        for ref in done:
            slot = refs[ref]
            try:
                slot.info = self.ray.get(ref)
            except self.ray.exceptions.RayError:
                continue
            if slot.info.get("error"):
                suite_errors.append(slot.info["error"])
                continue
            self.current[slot.index] = slot
            self.free.put(slot)
        for slot in slots:
            if slot.index not in self.current:
                self._kill(slot)
        errors = list(dict.fromkeys(suite_errors))
        if errors and self.current:
            log.warning("%d of %d evaluation actors stopped: %s", len(suite_errors), len(slots),
                        "; ".join(errors))
        if not self.current:
            self._shutdown()
            if errors:
                raise ExecutorError("no evaluation actor could import the run's suites: " + "; ".join(errors))
            raise ExecutorError(
                f"no evaluation actor started within {self.start_timeout_s:g} s: the cluster has no free "
                f"{'GPU' if self.kind == 'cuda' else 'CPU'} for them (`ray status` shows its resources)"
            )

    def _kill(self, slot: Slot) -> None:
        with contextlib.suppress(Exception):
            self.ray.kill(slot.handle, no_restart=True)

    def _lost_errors(self) -> tuple[type[BaseException], ...]:
        """Failures of Ray, not of the evaluation: the actor, its node or an object gone, or a message that
        did not cross intact (``RaySystemError``: an argument the actor could not deserialize). The actor is
        replaced, since after a system error its state is unknown, and the evaluation resubmitted."""
        e = self.ray.exceptions
        return (e.RayActorError, e.WorkerCrashedError, e.NodeDiedError, e.ObjectLostError, e.RaySystemError)

    def _take(self) -> Slot:
        while True:
            try:
                return self.free.get(timeout=1.0)
            except queue.Empty:
                with self.lock:
                    if not self.current and not self.pending:
                        raise ExecutorError(
                            "every evaluation actor was lost; none could be replaced"
                        ) from None

    def _on_lost(self, slot: Slot) -> None:
        """Drop the slot's actor and start a fresh one in its place, off this thread."""
        with self.lock:
            self.lost += 1
            self.current.pop(slot.index, None)
            self.pending += 1
        self._kill(slot)
        name = f"ray-replace-{slot.index}"
        threading.Thread(target=self._replace, args=(slot,), daemon=True, name=name).start()

    def _replace(self, old: Slot) -> None:
        slot = None
        try:
            if not self.closed:
                slot = self._spawn(old.index, old.generation + 1)
                slot.info = self.ray.get(slot.handle.ready.remote(), timeout=self.start_timeout_s)
                if slot.info.get("error"):
                    log.warning("a replacement evaluation actor stopped: %s", slot.info["error"])
                    raise ExecutorError(slot.info["error"])
        except Exception:  # noqa: BLE001 - no capacity left (a node gone for good): the pool shrinks
            if slot is not None:
                self._kill(slot)
            slot = None
        with self.lock:
            self.pending -= 1
            if slot is not None and not self.closed:
                self.current[slot.index] = slot
                self.replaced += 1
                self.free.put(slot)
            elif slot is not None:
                self._kill(slot)

    # ------------------------------------------------------------------ evaluations
    @property
    def slots(self) -> list[str]:
        with self.lock:
            return [s.label for s in sorted(self.current.values(), key=lambda s: s.index)]

    def evaluate(self, task: Task | str, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult:
        from warpgym.env import EvalResult
        from warpgym.tasks.fingerprint import task_fingerprint

        task = _task(task)
        task_id, fingerprint = task.id, task_fingerprint(task)
        lost = self._lost_errors()
        failures: list[str] = []
        for _ in range(self.retries):
            slot = self._take()
            try:
                ref = slot.handle.evaluate.remote(task_id, candidate, options, fingerprint)
                if self.on_dispatch is not None:
                    self.on_dispatch(slot, ref)
                data = self.ray.get(ref)
            except lost as exc:
                first = next((line for line in str(exc).splitlines() if line.strip()), "")
                failures.append(f"{slot.label}: {type(exc).__name__}: {first[:200]}")
                self._on_lost(slot)
                continue
            except BaseException:
                self.free.put(slot)  # the actor is fine; the error is the evaluation's own
                raise
            self.free.put(slot)
            self._count()
            return EvalResult.from_dict(data)
        raise ExecutorError(
            f"the evaluation of a {task_id} candidate lost its worker {len(failures)} times: "
            + "; ".join(failures)
        )

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "lost": self.lost, "replaced": self.replaced}

    def close(self) -> None:
        super().close()
        with self.lock:
            self.closed = True
            slots = list(self.current.values())
            self.current.clear()
        refs = [s.handle.close.remote() for s in slots]
        if refs:
            with contextlib.suppress(Exception):
                self.ray.wait(refs, num_returns=len(refs), timeout=5)  # then killed
        for slot in slots:
            self._kill(slot)
        self._shutdown()

    def _shutdown(self) -> None:
        if self.owns_ray:
            self.owns_ray = False
            with contextlib.suppress(Exception):
                self.ray.shutdown()
