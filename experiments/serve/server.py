"""Running the server: which workers, the journal, uvicorn, and what SIGTERM does.

SIGTERM or Ctrl-C: the listening socket closes and new submissions get 503; evaluations in flight
finish (for up to ``drain_s`` seconds; past that they are cancelled and run again at the next start);
streams send what finished and then a ``shutdown`` line naming the submissions still queued, which stay
in the journal for the next start. The process then exits with status 0.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .settings import Settings, check

if TYPE_CHECKING:
    from warpgym.experiments.executors import Executor

    from .service import EvalService

log = logging.getLogger("warpgym.serve")


@dataclass(frozen=True)
class Workers:
    """Where evaluations run: ``devices`` auto, cpu, cuda or a list (cuda:0,cuda:1); ``workers`` CPU
    evaluators (or, with Ray on CPUs, actors); ``per_gpu`` evaluators on each GPU."""

    devices: str = "auto"
    workers: int | None = None
    per_gpu: int = 1
    executor: str = "local"
    ray_address: str | None = None


def local_devices(spec: Workers) -> list[str]:
    """One entry per local evaluator: every visible GPU ``per_gpu`` times (interleaved), or CPU entries."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    devices = spec.devices
    if devices == "auto":
        devices = "cuda" if gpus else "cpu"
    if devices == "cpu":
        return ["cpu"] * (spec.workers or max(1, min(4, (os.cpu_count() or 2) // 2)))
    listed = [d.strip() for d in devices.split(",") if d.strip()] if devices != "cuda" else \
        [f"cuda:{i}" for i in range(gpus)]
    for d in listed:
        if not d.startswith("cuda:") or not d.split(":", 1)[1].isdigit():
            raise ValueError(f"device {d!r}: use auto, cpu, cuda, or a list such as cuda:0,cuda:1")
        if int(d.split(":", 1)[1]) >= gpus:
            raise ValueError(f"device {d} is not visible here ({gpus} GPUs)")
    if not listed:
        raise ValueError('devices = "cuda" but no CUDA GPU is visible here; use cpu or auto')
    return [d for _ in range(spec.per_gpu) for d in listed]


def make_executor(spec: Workers) -> Executor:
    """Local evaluators, or Ray actors that import the suites imported here (``use_suites`` first)."""
    from warpgym.experiments.executors import LocalExecutor, RayExecutor

    if spec.executor == "ray":
        if spec.devices not in ("auto", "cuda", "cpu"):
            raise ValueError("with --executor ray use --devices auto, cuda or cpu")
        return RayExecutor(address=spec.ray_address, devices=spec.devices, workers=spec.workers,
                           workers_per_gpu=spec.per_gpu)
    return LocalExecutor(local_devices(spec))


def where(executor: Executor) -> str:
    """What verdicts from this executor depend on beyond the request: device kind and name, version."""
    from warpgym import __version__

    name = "cpu"
    if executor.kind == "cuda":
        import torch

        name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cuda"
    return f"{executor.kind}:{name}:{__version__}"


def use_suites(settings: Settings) -> dict[str, str]:
    """Import the suites the server judges besides the built-in ones: those ``warpgym tasks import`` saved,
    ``WARPGYM_SUITE_<FORMAT>``'s, then ``settings.suites`` (which win). Before the executor is made, so
    Ray actors get them too. Returns format -> path of every suite imported in this process."""
    from warpgym.tasks.importers import active_sources, use, use_configured

    use_configured()
    use(settings.suites)
    return active_sources()


def build(settings: Settings, executor: Executor) -> tuple[EvalService, Any]:
    """The service (its queue resumed from the journal, dispatch started) and the ASGI app over it."""
    from warpgym.tasks import all_tasks

    from .app import create_app
    from .journal import Journal
    from .service import EvalService

    use_suites(settings)  # before the journal's unanswered submissions are queued again
    all_tasks()  # the registry, loaded before the first request rather than by it
    journal = Journal(settings.journal)
    try:
        service = EvalService(executor, journal, settings, where=where(executor))
    except BaseException:
        journal.close()
        raise
    service.start()
    return service, create_app(service, settings)


def serve(settings: Settings, executor: Executor, *, log_level: str = "warning",
          on_ready: Callable[[EvalService, int], None] | None = None) -> int:
    """Run until SIGTERM or SIGINT; then drain (see the module's docstring) and return 0. ``on_ready`` is
    told the service and the port once the socket listens."""
    import uvicorn

    check(settings)
    try:
        service, app = build(settings, executor)
    except BaseException:
        executor.close()
        raise

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if on_ready is not None and self.started:
                on_ready(service, self.servers[0].sockets[0].getsockname()[1])

        async def shutdown(self, sockets: Any = None) -> None:
            service.begin_drain()  # before uvicorn waits on open streams: they end once in-flight work does
            await super().shutdown(sockets)

    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level=log_level,
                            timeout_graceful_shutdown=int(settings.drain_s) + 5, lifespan="on",
                            access_log=False, server_header=False)
    server = Server(config)
    # uvicorn re-raises the signal it caught once it is done; this handler makes that a no-op, so the
    # process exits with 0 after a clean drain rather than dying of the signal.
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)} if main \
        else {}
    try:
        server.run()
    finally:
        service.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
