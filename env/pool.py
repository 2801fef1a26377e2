"""Parent side of the worker processes: start, ask with a deadline, kill, replace.

A worker is reused while healthy (a cold start costs seconds: Python, torch, Triton and a
CUDA context), and replaced after a crash, a timeout, a CUDA error, or a candidate that
tampered with the harness's globals.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from . import wire

SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY|AUTH|SESSION)", re.I)
SECRET_PREFIXES = ("AWS_", "AZURE_", "GCP_", "GOOGLE_APPLICATION", "HF_", "HUGGING", "OPENAI", "ANTHROPIC", "GH_",
                   "GITHUB_", "SSH_")
LOG_TAIL_BYTES = 4000


class WorkerError(Exception):
    """The worker died or overran; ``kind`` is ``timeout`` or ``crash``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def clean_environment(device: str, mode: str, workdir: Path) -> dict[str, str]:
    """The parent's environment without secrets, with the worker's own settings."""
    env = {k: v for k, v in os.environ.items()
           if not SECRET_NAME.search(k) and not k.upper().startswith(SECRET_PREFIXES)}
    env.pop("TRITON_INTERPRET", None)
    env.update({
        "KERNELGYM_DEVICE": device,
        "KERNELGYM_WORKER_MODE": mode,
        "TMPDIR": str(workdir),
        "HOME": str(workdir),
        "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "TRITON_DEFAULT_FP_FUSION": env.get("TRITON_DEFAULT_FP_FUSION", "1"),
    })
    if device.startswith("cuda") and ":" in device:
        env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
        env["KERNELGYM_DEVICE"] = "cuda"
    return env


class Worker:
    """One worker process. ``request`` sends a message and waits at most ``timeout`` seconds."""

    def __init__(self, device: str = "cpu", mode: str = "run") -> None:
        self.device = device
        self.mode = mode
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.workdir: Path | None = None
        self.started_at = 0.0
        self.requests = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="kernelgym-worker-"))
        parent_sock, child_sock = socket.socketpair()
        log = open(self.workdir / "output.log", "wb")  # noqa: SIM115 - the child owns it
        env = clean_environment(self.device, self.mode, self.workdir)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelgym.env.worker", str(child_sock.fileno())],
            cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            pass_fds=(child_sock.fileno(),), start_new_session=True,
        )
        log.close()
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.started_at = time.perf_counter()
        self.requests = 0

    def ensure(self) -> None:
        if not self.alive:
            self.stop()
            self.start()

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.ensure()
        assert self.conn is not None
        self.requests += 1
        try:
            wire.send(self.conn, msg)
            if not self.conn.poll(timeout):
                self.kill()
                raise WorkerError("timeout", f"no answer within {timeout:g} s (an infinite loop, in Python or "
                                             "in a kernel, or work far too slow); the worker was killed")
            return wire.recv(self.conn)
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = self.proc.wait(timeout=5) if self.proc is not None else None
            tail = self.log_tail()
            self.kill()
            how = f"killed by signal {-code} ({signal.Signals(-code).name})" if code and code < 0 else f"exit {code}"
            raise WorkerError("crash", f"the worker process died ({how}){': ' + tail if tail else ''}") from exc

    def log_tail(self, clear: bool = False) -> str:
        """What the candidate printed since the last clear, trimmed to the end."""
        if self.workdir is None:
            return ""
        path = self.workdir / "output.log"
        try:
            size = path.stat().st_size
            with open(path, "rb") as f:
                f.seek(max(0, size - LOG_TAIL_BYTES))
                text = f.read().decode("utf-8", "replace")
            if clear:
                os.truncate(path, 0)
        except OSError:
            return ""
        return text.strip()

    def kill(self) -> None:
        """Kill the whole process group: kernels' helper processes and threads go with it."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait(timeout=10)
        if self.conn is not None:
            self.conn.close()
        self.proc, self.conn = None, None

    def stop(self) -> None:
        self.kill()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.stop()
        except Exception:  # noqa: BLE001
            pass
