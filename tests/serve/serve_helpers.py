"""Servers for the serve tests: uvicorn in a thread over any executor, or `warpgym serve` as a process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from warpgym.env import EvalResult
from warpgym.env.protocol.violations import Violation
from warpgym.experiments.executors import Executor, ExecutorError
from warpgym.experiments.serve.server import build
from warpgym.experiments.serve.settings import Settings

TASK = "normalization/softmax"
TORCH_OP = "import torch\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n"
"""Rejected at the static stage (a PyTorch compute op in host code): judged in milliseconds, no worker."""


def static_rejects(count: int, marker: str) -> list[str]:
    """``count`` distinct candidates the static stage rejects, each unique to ``marker``."""
    return [TORCH_OP + f"# {marker} {i}\n" for i in range(count)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(result: dict[str, Any]) -> tuple[Any, ...]:
    """What must agree between the server's verdict and an in-process one (not seconds or paths)."""
    return (result["task"], result["stage"], result["compiled"], result["correct"],
            sorted(v["code"] for v in result["violations"]), result["required_features_met"],
            [(c["shape_set"], c["passed"]) for c in result["cases"]])


class ThreadServer:
    """The app over ``executor`` on a free loopback port, in this process."""

    def __init__(self, executor: Executor, journal: Path, **settings: Any) -> None:
        self.settings = replace(Settings(port=free_port(), journal=journal), **settings)
        self.service, app = build(self.settings, executor)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.settings.port, log_level="error",
                                lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.settings.port}"

    def stop(self) -> None:
        self.service.begin_drain()
        self.server.should_exit = True
        self.thread.join(30)
        self.service.close()


class GateExecutor(Executor):
    """Holds each evaluation until ``gate`` opens, records the order it was asked in, and fails the first
    ``failures`` calls as a lost Ray actor would. Verdicts: correct unless the source says ``wrong``."""

    kind = "cpu"

    def __init__(self, workers: int = 1, failures: int = 0) -> None:
        super().__init__()
        self.workers = workers
        self.gate = threading.Event()
        self.failures = failures
        self.calls: list[str] = []
        self.lock = threading.Lock()

    @property
    def slots(self) -> list[str]:
        return ["gate"] * self.workers

    def evaluate(self, task: Any, candidate: Any, options: Any, /) -> EvalResult:
        source = candidate if isinstance(candidate, str) else candidate.source
        with self.lock:
            self.calls.append(source)
            fail = self.failures > 0
            self.failures -= fail
        if not self.gate.wait(60):
            raise TimeoutError("the gate never opened")
        if fail:
            raise ExecutorError("the actor died (node lost)")
        correct = "wrong" not in source
        result = EvalResult(task=task.id, target=options.target, device="cpu", stage="done", compiled=True,
                            correct=correct)
        if not correct:
            result.violations.append(Violation("wrong", "it says so"))
        result.seconds = {"total": 0.01, "compile": 0.004, "correctness": 0.006}
        return result


class ProcessServer:
    """`warpgym serve` in its own process on a free port (CPU workers), until ``terminate``."""

    def __init__(self, journal: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = journal.with_suffix(f".{self.port}.log")
        command = [sys.executable, "-m", "warpgym.experiments.cli", "serve", "--port", str(self.port),
                   "--devices", "cpu", "--workers", "1", "--journal", str(journal), "--log-level", "info",
                   *args]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"warpgym serve exited ({self.proc.returncode}): {self.output()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"warpgym serve did not answer within 180 s: {self.output()}")
            time.sleep(0.3)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def worker_pids(self, mode: str = "run") -> list[int]:
        """The judge's worker processes of this server (its children started for ``mode``)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                environ = (entry / "environ").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.proc.pid and f"WARPGYM_WORKER_MODE={mode}".encode() in environ.split(b"\0"):
                pids.append(int(entry.name))
        return pids

    def terminate(self, timeout: float = 120) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
