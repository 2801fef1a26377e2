"""The worker's confinement: operating-system protections applied before any candidate code runs.

``pool.Worker`` starts ``python .../env/worker/confine.py FD`` (``sandbox.launch_command``) with its
settings in the environment variable ``WARPGYM_SANDBOX`` (JSON). This file runs as a plain script,
on the standard library only, because two of its protections bind only the threads that exist when
they are applied (Landlock, ``no_new_privs``): nothing that starts threads (torch, Triton) may be
imported first. It applies what this machine allows, each protection on its own so one failure never
blocks the others, installs the audit layer (``audit.py``, loaded by file path from this folder for
the same reason: the package must not load yet), sends a report as the first message on the
worker's socket, and then runs the worker (``warpgym.env.worker.main``) in the same process. The
layers live beside it and are loaded the same way (``BY_PATH``): namespaces, mounts, the pids cgroup
and the rlimits in ``isolation.py``, the Landlock rules in ``landlock.py``; this file keeps the order,
the report, ``no_new_privs`` and the uid drop.

Layers, strongest first, each reported as applied or not with the reason:
- network: a fresh network namespace (no interfaces but a downed loopback); else Landlock's TCP
  rules; the audit layer refuses sockets in any case;
- filesystem: Landlock (writes only in the private directory and to device files; reads
  everywhere but home directories and other processes' ``/proc`` entries); without Landlock, a
  mount namespace with everything else remounted read-only;
- disk: a size-limited tmpfs over the private directory, plus ``RLIMIT_FSIZE`` per file;
- processes: a pids cgroup, or ``RLIMIT_NPROC`` where it binds (it never binds for root);
- privileges: ``no_new_privs``, and a drop to an unused uid when started as root and the Python
  installation is readable by others;
- resources: ``RLIMIT_CPU``, ``RLIMIT_AS`` on CPU workers (CUDA reserves terabytes of virtual
  space), ``RLIMIT_CORE`` = 0, ``RLIMIT_NOFILE``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

ENV_VAR = "WARPGYM_SANDBOX"
HERE = os.path.dirname(os.path.abspath(__file__))  # env/worker: this script's folder
PACKAGE_ROOT = os.path.dirname(os.path.dirname(HERE))  # the folder that holds env/, tasks/, ...
PACKAGE = "warpgym.env.worker"
AUDIT_MODULE = f"{PACKAGE}.audit"
BY_PATH = ("isolation", "landlock", "audit")
"""The files of this folder that are loaded by path before the package, on the standard library only."""


def _load(stem: str) -> Any:
    """``stem.py`` from this folder by file path, registered under its package name: importing the
    package would pull in torch, and a later ``from warpgym.env.worker import stem`` then finds this
    module, with its state (the audit hook's), instead of a fresh copy without it."""
    name = f"{PACKAGE}.{stem}"
    if name in sys.modules:
        return sys.modules[name]
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"{stem}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_isolation = _load("isolation")
_landlock = _load("landlock")
IsolationLayer = _isolation.IsolationLayer
LandlockLayer = _landlock.LandlockLayer
SECRET_DIRS: tuple[str, ...] = _landlock.SECRET_DIRS
readable_paths = _landlock.readable_paths

_PR_SET_NO_NEW_PRIVS = 38

PROTECTIONS = ("no-new-privileges", "network", "disk", "processes", "file-size", "cpu-time", "core-dumps",
               "open-files", "memory", "filesystem", "signals", "user", "environment")
"""Every protection the report speaks of (plus ``audit``, added when the hook is installed)."""


class Sandbox(IsolationLayer, LandlockLayer):
    """Applies the protections in order and keeps the report."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.workdir = os.path.realpath(config["workdir"])
        self.applied: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.cgroup: str | None = None
        self.uid: int | None = None
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)

        class PathBeneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

        self.path_beneath = PathBeneath

    # .................................................................. helpers
    def _ok(self, name: str, detail: str) -> None:
        self.applied[name] = detail
        self.skipped.pop(name, None)

    def _no(self, name: str, why: str) -> None:
        if name not in self.applied:
            self.skipped[name] = why

    def _errno(self) -> str:
        err = self.ctypes.get_errno()
        return f"{os.strerror(err)} (errno {err})"

    # .................................................................. steps
    def run(self) -> dict[str, Any]:
        import signal

        # A file past RLIMIT_FSIZE then fails with EFBIG (an error the candidate sees) instead of killing us.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        steps = (
            self.no_new_privs,
            self.namespaces,
            self.cgroups,
            self.limits,
            self.landlock,
            self.drop_privileges,
        )
        for step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - one protection failing must not stop the others
                self._no(step.__name__.replace("_", "-"), f"{type(exc).__name__}: {exc}")
        removed = self.config.get("removed_env", 0)
        self._ok(
            "environment",
            f"secrets removed from the environment ({removed} variables); "
            "HOME and TMPDIR point into the private directory",
        )
        failed_steps = {k: v for k, v in self.skipped.items() if k not in PROTECTIONS}
        for name in PROTECTIONS:
            if name not in self.applied and name not in self.skipped:
                self.skipped[name] = "not attempted" + (f" ({failed_steps})" if failed_steps else "")
        return {
            "applied": self.applied,
            "not_applied": self.skipped,
            "cgroup": self.cgroup,
            "uid": os.getuid(),
            "workdir": self.workdir,
        }

    def no_new_privs(self) -> None:
        if self.libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
            self._ok("no-new-privileges", "prctl(PR_SET_NO_NEW_PRIVS): setuid programs gain nothing")
        else:
            self._no("no-new-privileges", self._errno())


    # .................................................................. identity
    def _target_uid(self) -> int:
        if self.uid is None:
            self.uid = int(self.config.get("uid") or (2_000_000_000 + os.getpid() % 100_000_000))
        return self.uid

    def _can_drop(self) -> bool:
        """Another uid can run us only if Python, its packages and this package are world-readable."""
        return not self._unreadable()

    def _unreadable(self) -> list[str]:
        needed = {sys.prefix, sys.base_prefix, PACKAGE_ROOT}
        needed.update(p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) != HERE)
        bad = []
        for path in sorted(needed):
            path = os.path.realpath(path)
            parts = path.split("/")
            for i in range(2, len(parts) + 1):
                sub = "/".join(parts[:i]) or "/"
                try:
                    mode = os.stat(sub).st_mode
                except OSError:
                    break
                if not mode & 0o001 or (sub == path and not mode & 0o004):
                    bad.append(sub)
                    break
        return sorted(set(bad))

    def drop_privileges(self) -> None:
        if os.geteuid() != 0:
            self._ok("user", f"runs as uid {os.getuid()} (not root)")
            return
        if not self.config.get("drop_uid", True):
            self._no("user", "runs as root: dropping privileges turned off by the caller")
            return
        bad = self._unreadable()
        if bad:
            self._no(
                "user", f"runs as root: the Python installation is not readable by another user ({bad[0]})"
            )
            return
        uid = self._target_uid()
        groups: list[int] = []
        if self.config.get("device", "cpu").startswith("cuda"):
            for dev in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"):
                try:
                    st = os.stat(dev)
                except OSError:
                    continue
                if st.st_mode & 0o006 != 0o006:
                    groups.append(st.st_gid)
        if not getattr(self, "mount_namespace", False) or "disk" not in self.applied:
            os.chown(self.workdir, uid, uid)
            for name in os.listdir(self.workdir):
                os.chown(os.path.join(self.workdir, name), uid, uid)
        os.setgroups(sorted(set(groups)))
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        # The uid has no passwd entry: name it, or getpass.getuser() (which torch calls while importing
        # its compiler on some versions) raises KeyError inside the candidate's first tensor operation.
        os.environ["USER"] = os.environ["LOGNAME"] = f"warpgym-{uid}"
        self._ok("user", f"dropped root for the unused uid {uid}: no capabilities, other users' files closed")




def _send_frame(fd: int, payload: bytes) -> None:
    """One message in ``multiprocessing.connection``'s framing (a 4-byte big-endian length)."""
    import struct

    data = struct.pack("!i", len(payload)) + payload
    while data:
        data = data[os.write(fd, data) :]


def _load_audit() -> Any:
    """``audit.py``, loaded like the layers: the worker's ``from warpgym.env.worker import audit`` finds
    the module that holds the hook's state."""
    return _load("audit")


def _main() -> None:
    """Child side: apply, report on the socket, run the worker here."""
    if sys.path and os.path.realpath(sys.path[0]) == HERE:
        sys.path.pop(0)  # the script's folder holds modules named like stdlib ones would be shadowed
    config = json.loads(os.environ.pop(ENV_VAR, "{}") or "{}")
    fd = int(sys.argv[1])
    sandbox = Sandbox(config)
    protected, readable = sandbox.protected(), sandbox.readable()  # listed before Landlock closes /proc
    report = sandbox.run()
    if config.get("audit", True):
        _load_audit().install_audit(
            sandbox.workdir, protected + sandbox.hidden(),
            [p for p in readable if any(p.startswith(c + "/") for c in protected)]
        )
        report["applied"]["audit"] = (
            "PEP 578 audit hook: sockets, processes, signals, ctypes, gc walks, frame "
            "introspection and writes outside the private directory are refused and "
            "reported"
        )
    else:
        report["not_applied"]["audit"] = config.get("off_reason", "turned off by the caller")
    _send_frame(fd, json.dumps({"__sandbox__": report}).encode())
    import runpy

    sys.argv = [os.path.join(HERE, "main.py"), str(fd)]
    runpy.run_module("warpgym.env.worker.main", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _main()
