"""Parent side of the worker processes: start, ask with a deadline, kill, replace.

A worker is reused while healthy (a cold start costs seconds: Python, torch, Triton and a
CUDA context), and replaced after a crash, a timeout, a CUDA error, or a candidate that
tampered with the harness's globals.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from warpgym.env.common.device import physical_gpu
from warpgym.env.common.timing import gpu_lock_files
from warpgym.env.judge import crash
from warpgym.env.judge import sandbox as sandbox_mod
from warpgym.env.protocol import wire
from warpgym.env.protocol.violations import violation

WORKER_ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING",
    "VIRTUAL_ENV", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NUMEXPR_MAX_THREADS", "TORCH_CUDA_ARCH_LIST", "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING",
    "CUDA_CACHE_DISABLE", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
    "TRITON_LIBCUDA_PATH", "TRITON_DEFAULT_FP_FUSION",
})
"""The parent's variables a worker gets: what Python, CUDA, PyTorch and Triton need to find themselves
and behave. Everything else stays behind (an allowlist: a secret under a name nobody thought of, such as
``GEMINI_KEY`` or ``DATABASE_URL``, never reaches the candidate)."""
WORKER_ENV_PREFIXES = ("LC_", "WARPGYM_")
"""Locale settings, and warpgym's own (never secrets: keys go to the providers under their own names)."""
CREDENTIALS_IN_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]*@", re.I)
"""A value that carries a password in a URL (``scheme://user:password@host``) stays behind too."""
LOG_TAIL_BYTES = 4000


def sandbox_turned_off() -> bool:
    """WARPGYM_NO_SANDBOX=1: workers start without the sandbox, for a machine where it misbehaves (the
    results say so)."""
    return os.environ.get("WARPGYM_NO_SANDBOX", "") in ("1", "true", "yes")


class WorkerError(Exception):
    """The worker died or overran; ``kind`` is ``timeout``, ``crash`` or ``protocol`` (a reply that was not
    the worker's answer to this request: the candidate wrote to the channel)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _passed_to_worker(name: str, value: str) -> bool:
    return (name in WORKER_ENV_NAMES or name.startswith(WORKER_ENV_PREFIXES)) and \
        not CREDENTIALS_IN_URL.search(value)


def clean_environment(device: str, mode: str, workdir: Path) -> dict[str, str]:
    """The allowlisted part of the parent's environment, with the worker's own settings."""
    env = {k: v for k, v in os.environ.items() if _passed_to_worker(k, v)}
    env.update({
        "WARPGYM_DEVICE": device,
        "WARPGYM_WORKER_MODE": mode,
        "TMPDIR": str(workdir),
        "WARPGYM_LOCK_DIR": os.environ.get("WARPGYM_LOCK_DIR", tempfile.gettempdir()),
        "HOME": str(workdir),
        "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor-cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "TRITON_DEFAULT_FP_FUSION": env.get("TRITON_DEFAULT_FP_FUSION", "1"),
    })
    if mode == "run" and device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # a CPU runs the candidate's kernels in Triton's interpreter
    if device.startswith("cuda") and ":" in device:
        env["CUDA_VISIBLE_DEVICES"] = physical_gpu(int(device.split(":", 1)[1]))
        env["WARPGYM_DEVICE"] = "cuda"
    return env


def _create_gpu_locks(env: dict[str, str]) -> None:
    """The timing lock files (timing.gpu_lock), made here: a sandboxed worker may open them but not create
    files outside its own directory."""
    if not env.get("WARPGYM_DEVICE", "cpu").startswith("cuda"):
        return
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else \
        [str(i) for i in range(torch.cuda.device_count())]
    for physical in ids:
        for name in gpu_lock_files(physical):
            try:
                open(os.path.join(env["WARPGYM_LOCK_DIR"], name), "a").close()  # noqa: SIM115
            except (OSError, KeyError):
                pass


class Worker:
    """One worker process. ``request`` sends a message and waits at most ``timeout`` seconds."""

    restarts = 0
    """Processes started in place of an earlier one, by every worker in this process (a server's metric)."""
    _restarts_lock = threading.Lock()

    def __init__(self, device: str = "cpu", mode: str = "run",
                 sandbox: bool | dict[str, Any] | None = None, wrapper: list[str] | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.device = device
        self.mode = mode
        self.wrapper = list(wrapper or [])
        """A tool that runs the worker's command (a profiler: ``ncu ... python confine.py FD``), outside the
        confinement, which the worker applies to itself."""
        self.extra_env = dict(extra_env or {})
        if sandbox is None:
            sandbox = not sandbox_turned_off()
        self.sandbox = sandbox
        """False: no sandbox; True: the defaults (``sandbox.defaults``); a dict: overrides of them."""
        self.sandbox_report: dict[str, Any] | None = None
        self.incidents: list[list[str]] = []
        """[code, message] pairs: what the sandbox refused, and replies that were not the worker's own."""
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.workdir: Path | None = None
        self.started_at = 0.0
        self.requests = 0
        self.command: list[str] = []
        self.protected: frozenset[str] = frozenset()
        """The paths the running process keeps closed to candidates (``sandbox.protected_by``)."""
        self._dir_fd: int | None = None

    def _close_dir(self) -> None:
        if self._dir_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._dir_fd)
            self._dir_fd = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.started_at:
            with Worker._restarts_lock:
                Worker.restarts += 1
        self.workdir = Path(tempfile.mkdtemp(prefix="warpgym-worker-"))
        self._close_dir()
        self._dir_fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        parent_sock, child_sock = socket.socketpair()
        # appending: after the judge truncates the log (log_tail), the next line starts at its beginning
        log = open(self.workdir / "output.log", "ab")  # noqa: SIM115 - the child owns it
        env = clean_environment(self.device, self.mode, self.workdir)
        env.update(self.extra_env)
        command = [sys.executable, "-m", "warpgym.env.worker.main", str(child_sock.fileno())]
        if self.sandbox is not False:
            _create_gpu_locks(env)
            removed = sum(1 for k, v in os.environ.items() if not _passed_to_worker(k, v))
            env = sandbox_mod.configure(env, str(self.workdir), self.device, self.mode, removed,
                                        self.sandbox if isinstance(self.sandbox, dict) else None)
            self.protected = sandbox_mod.protected_by(env)
            command = sandbox_mod.launch_command(child_sock.fileno())
        self.command = [*self.wrapper, *command]
        self.proc = subprocess.Popen(
            self.command, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(child_sock.fileno(),), start_new_session=True,
        )
        log.close()
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.started_at = time.perf_counter()
        self.requests = 0
        self.sandbox_report = None
        if self.sandbox is not False:
            self._read_sandbox_report()

    def _read_sandbox_report(self, timeout: float = 60.0) -> None:
        """The sandbox's first message: what it applied, sent before any candidate code can run."""
        assert self.conn is not None
        hello: Any = None
        ready = False
        try:
            ready = self.conn.poll(timeout)
            hello = wire.recv(self.conn) if ready else None
        except (EOFError, OSError, ValueError):
            pass
        if not isinstance(hello, dict) or "__sandbox__" not in hello:
            tail = self.log_tail()
            self.kill()
            raise WorkerError("crash", "the worker's sandbox did not start" + ("" if ready else " in time")
                              + (f": {tail}" if tail else ""))
        self.sandbox_report = hello["__sandbox__"]

    def ensure(self) -> None:
        if not self.alive:
            self.stop()
            self.start()

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.ensure()
        assert self.conn is not None
        self.requests += 1
        try:
            if self.conn.poll(0):
                self._forged("the worker's channel held data nobody asked for (written by the candidate, "
                             "or a reply sent twice)")
            msg = {**msg, "id": secrets.randbits(62)}
            wire.send(self.conn, msg)
            if not self.conn.poll(timeout):
                self.kill()
                raise WorkerError("timeout", f"no answer within {timeout:g} s (an infinite loop, in Python "
                                             "or in a kernel, or work far too slow); the worker was killed")
            try:
                reply = wire.recv(self.conn)
            except wire.FramingError as exc:
                self._forged(f"the worker's channel held bytes out of the protocol's framing ({exc}): "
                             "written by the candidate")
            if not isinstance(reply, dict) or reply.get("id") != msg["id"]:
                self._forged("a reply did not answer the request it came back for (the candidate wrote to "
                             "the worker's channel)")
            self.incidents.extend(reply.pop("sandbox_denied", None) or [])
            reply.pop("id", None)
            return reply
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = self.proc.wait(timeout=5) if self.proc is not None else None
            log = self.log_tail(clear=True)  # told once, here: not again as the candidate's output
            self.kill()
            raise WorkerError("crash", crash.describe(code, log)) from exc

    def _forged(self, detail: str) -> None:
        found = violation("forged-reply", detail=detail)
        self.incidents.append([found.code, found.message])
        self.kill()
        raise WorkerError("protocol", found.message)

    def take_incidents(self) -> list[list[str]]:
        out, self.incidents = self.incidents, []
        return out

    def log_tail(self, clear: bool = False) -> str:
        """What the candidate printed since the last clear, trimmed to the end.

        The log lies in a directory the worker can write, so it is opened as hostile: relative to the
        directory opened when the worker started (renaming the directory changes nothing), never through
        a link, never blocking (a FIFO), and only when it is a regular file; at most ``LOG_TAIL_BYTES``
        are read, and it is truncated through the descriptor that was checked.
        """
        if self._dir_fd is None:
            return ""
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open("output.log", flags, dir_fd=self._dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                self.incidents.append(["hostile-file", "the worker's output log was replaced by a link or a "
                                                       f"device ({exc.strerror}); it was not read"])
            return ""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.incidents.append(["hostile-file", "the worker's output log was replaced by something "
                                                       "that is not a regular file"])
                return ""
            start = max(0, info.st_size - LOG_TAIL_BYTES)
            text = os.pread(fd, LOG_TAIL_BYTES, start).decode("utf-8", "replace")
            if clear:
                os.ftruncate(fd, 0)
        except OSError:
            return ""
        finally:
            os.close(fd)
        return text.strip()

    def finish(self, timeout: float) -> int | None:
        """Close the channel so the worker returns from its loop and exits on its own (a profiler that runs
        it writes its report then), wait at most ``timeout`` seconds, then stop it; the exit status."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code = None
        self.stop()
        return code

    def kill(self) -> None:
        """Kill the whole process group: kernels' helper processes and threads go with it."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait(timeout=10)
        for pid in sandbox_mod.cgroup_pids(self.sandbox_report):  # children that left the process group
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.conn is not None:
            self.conn.close()
        self.proc, self.conn = None, None

    def stop(self) -> None:
        self.kill()
        if self.sandbox_report and self.sandbox_report.get("cgroup"):
            deadline = time.monotonic() + 2
            while sandbox_mod.cgroup_pids(self.sandbox_report) and time.monotonic() < deadline:
                time.sleep(0.01)
            sandbox_mod.remove_cgroup(self.sandbox_report)
        self._close_dir()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.stop()
        except Exception:  # noqa: BLE001
            pass
