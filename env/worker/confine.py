"""The worker's confinement: operating-system protections applied before any candidate code runs.

``pool.Worker`` starts ``python .../env/worker/confine.py FD`` (``sandbox.launch_command``) with its
settings in the environment variable ``WARPGYM_SANDBOX`` (JSON). This file runs as a plain script,
on the standard library only, because two of its protections bind only the threads that exist when
they are applied (Landlock, ``no_new_privs``): nothing that starts threads (torch, Triton) may be
imported first. It applies what this machine allows, each protection on its own so one failure never
blocks the others, installs the audit layer (``audit.py``, loaded by file path from this folder for
the same reason: the package must not load yet), sends a report as the first message on the
worker's socket, and then runs the worker (``warpgym.env.worker.main``) in the same process.

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
AUDIT_MODULE = "warpgym.env.worker.audit"

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38

# Landlock (linux/landlock.h). Syscall numbers are the same on x86-64 and arm64.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_VERSION = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_REMOVE_DIR, _FS_REMOVE_FILE, _FS_MAKE_CHAR, _FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_FS_MAKE_REG, _FS_MAKE_SOCK, _FS_MAKE_FIFO = 1 << 8, 1 << 9, 1 << 10
_FS_MAKE_BLOCK, _FS_MAKE_SYM = 1 << 11, 1 << 12
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE
_READ = _FS_READ_FILE | _FS_READ_DIR
_MAKE = _FS_MAKE_CHAR | _FS_MAKE_DIR | _FS_MAKE_REG | _FS_MAKE_SOCK | _FS_MAKE_FIFO | _FS_MAKE_BLOCK
_MAKE |= _FS_MAKE_SYM

PROTECTIONS = ("no-new-privileges", "network", "disk", "processes", "file-size", "cpu-time", "core-dumps",
               "open-files", "memory", "filesystem", "signals", "user", "environment")
"""Every protection the report speaks of (plus ``audit``, added when the hook is installed)."""

SECRET_DIRS = ("/root", "/home", "/run/secrets", "/var/run/secrets")
"""Never readable by a candidate (plus the harness user's home, wherever it is)."""


class Sandbox:
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

    def _unshare(self, flags: int) -> bool:
        return self.libc.unshare(flags) == 0

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

    def namespaces(self) -> None:
        """A network namespace, and a mount namespace for the disk quota (root, or a user namespace)."""
        want_net, want_mount = self.config.get("network", True), self.config.get("mount", True)
        if not want_net:
            self._no("network", self.config.get("off_reason", "turned off by the caller"))
        if not want_mount:
            self._no("disk", "turned off by the caller; only RLIMIT_FSIZE per file")
        if not (want_net or want_mount):
            return
        flags = (_CLONE_NEWNET if want_net else 0) | (_CLONE_NEWNS if want_mount else 0)
        how = ""
        root_error = ""
        if os.geteuid() == 0:
            if self._unshare(flags):
                how = "as root"
            else:
                root_error = f"unshare as root: {self._errno()}; "
        if not how and self._probe_user_namespace(flags):  # unprivileged, or root without CAP_SYS_ADMIN
            uid, gid = os.getuid(), os.getgid()
            if not self._unshare(_CLONE_NEWUSER | flags):
                self._no("network", f"unshare: {self._errno()}")
                return
            self._write("/proc/self/setgroups", "deny")
            self._write("/proc/self/uid_map", f"{uid} {uid} 1")
            self._write("/proc/self/gid_map", f"{gid} {gid} 1")
            how = "in a user namespace"
        if not how:
            why = root_error + "user namespaces are not allowed here"
            self._no("network", f"no network namespace ({why})")
            self._no("disk", f"no mount namespace ({why}); only RLIMIT_FSIZE per file")
            return
        if want_net:
            self._ok("network", f"own network namespace {how}: no interfaces, loopback down")
        if want_mount:
            self._mounts(how)

    def _probe_user_namespace(self, flags: int) -> bool:
        """Try in a throwaway child: a half-made user namespace cannot be left again."""
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            ok = self._unshare(_CLONE_NEWUSER | flags)
            try:
                self._write("/proc/self/setgroups", "deny")
                self._write("/proc/self/uid_map", f"{os.getuid()} {os.getuid()} 1")
            except OSError:
                ok = False
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    @staticmethod
    def _write(path: str, text: str) -> None:
        with open(path, "w") as f:
            f.write(text)

    def _mount(
        self, source: str | None, target: str, fstype: str | None, flags: int, data: str | None
    ) -> bool:
        enc = lambda s: s.encode() if s is not None else None
        return self.libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) == 0

    def _mounts(self, how: str) -> None:
        if not self._mount(None, "/", None, _MS_REC | _MS_PRIVATE, None):
            self._no("disk", f"making mounts private: {self._errno()}")
            return
        size = int(self.config.get("disk_bytes") or 0)
        uid = self._target_uid() if os.geteuid() == 0 else os.getuid()
        gid = uid if os.geteuid() == 0 and uid != 0 else os.getgid()
        options = f"size={size},mode=0700,uid={uid},gid={gid}"
        if size and self._mount("warpgym", self.workdir, "tmpfs", _MS_NOSUID | _MS_NODEV, options):
            os.chdir(self.workdir)  # the old directory is now underneath the tmpfs
            self._ok(
                "disk",
                f"the private directory is a {size >> 20} MiB tmpfs ({how}); "
                f"RLIMIT_FSIZE {int(self.config['file_bytes']) >> 20} MiB per file",
            )
        else:
            self._no("disk", f"tmpfs over the private directory: {self._errno()}")
        self.mount_namespace = True
        self._hide()

    def hidden(self) -> list[str]:
        """Folders inside the package a worker must not read. Not closed by Landlock, which could only do
        it by closing the listing of their parent packages (and so Python's imports from them): an empty
        tmpfs covers them, and the audit hook refuses opening anything in them."""
        return [os.path.realpath(p) for p in self.config.get("hide") or [] if os.path.isdir(p)]

    def _hide(self) -> None:
        """An empty, read-only tmpfs over each folder the worker must not see (the reference solutions)."""
        hidden, failed = [], []
        for path in self.hidden():
            flags = _MS_NOSUID | _MS_NODEV | _MS_RDONLY
            ok = self._mount("warpgym-hidden", path, "tmpfs", flags, "size=4k,mode=0555")
            (hidden if ok else failed).append(path)
        if hidden:
            self._ok("hidden", f"empty over {', '.join(hidden)} (the reference solutions, the judge's code)")
        if failed:
            self._no("hidden", f"could not cover {', '.join(failed)}: {self._errno()}")

    def _read_only_rest(self) -> bool:
        """Without Landlock: every mount but the private tmpfs, /dev, /proc and /sys becomes read-only."""
        if not getattr(self, "mount_namespace", False):
            return False
        keep = (self.workdir, "/dev", "/proc", "/sys")
        points = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split()[4].replace("\\040", " ")
                if not any(point == k or point.startswith(k + "/") for k in keep):
                    points.append(point)
        failed = [
            p for p in points if not self._mount(None, p, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY, None)
        ]
        return not failed or len(failed) < len(points) and "/" not in failed

    def cgroups(self) -> None:
        if not self.config.get("cgroup", True):
            self._no("processes", self.config.get("off_reason", "turned off by the caller"))
            return
        limit = int(self.config.get("tasks") or 0)
        for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
            if not os.path.exists(os.path.join(root, "cgroup.procs")) or not os.access(root, os.W_OK):
                continue
            if root == "/sys/fs/cgroup":
                try:
                    with open(os.path.join(root, "cgroup.controllers")) as f:
                        if "pids" not in f.read().split():
                            continue
                except OSError:
                    continue
            _remove_empty_cgroups(root)
            path = os.path.join(root, f"warpgym-worker-{os.getpid()}")
            try:
                os.mkdir(path)
                self._write(os.path.join(path, "pids.max"), str(limit))
                self._write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
            except OSError as exc:
                try:
                    os.rmdir(path)
                except OSError:
                    pass
                self._no("processes", f"pids cgroup under {root}: {exc.strerror}")
                continue
            self.cgroup = path
            self._ok(
                "processes",
                f"pids cgroup {path}: at most {limit} processes and threads; the harness kills "
                "every process in it when the worker is stopped",
            )
            return

    def limits(self) -> None:
        import resource

        def cap(name: str, which: int, value: int, detail: str) -> None:
            try:
                _, hard = resource.getrlimit(which)
                value = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (value, value))
                self._ok(name, detail.format(value))
            except (ValueError, OSError) as exc:
                self._no(name, f"setrlimit: {exc}")

        cap(
            "file-size",
            resource.RLIMIT_FSIZE,
            int(self.config["file_bytes"]),
            "RLIMIT_FSIZE: no file over {} bytes (writing past it fails with EFBIG)",
        )
        cap(
            "cpu-time",
            resource.RLIMIT_CPU,
            int(self.config["cpu_seconds"]),
            "RLIMIT_CPU: {} CPU seconds over the worker's life (wall-clock limits per request come first)",
        )
        cap("core-dumps", resource.RLIMIT_CORE, 0, "RLIMIT_CORE = {}: no core files")
        cap(
            "open-files",
            resource.RLIMIT_NOFILE,
            int(self.config["open_files"]),
            "RLIMIT_NOFILE: {} descriptors",
        )
        memory = self.config.get("memory_bytes")
        if memory:
            cap("memory", resource.RLIMIT_AS, int(memory), "RLIMIT_AS: {} bytes of address space")
        else:
            self._no(
                "memory",
                "no RLIMIT_AS on a CUDA worker: the driver reserves terabytes of virtual address "
                "space; device memory is bounded by the GPU, host memory is not limited",
            )
        if self.cgroup is None and self.config.get("cgroup", True):
            self._nproc(resource)

    def _nproc(self, resource: Any) -> None:
        budget = int(self.config.get("tasks") or 0)
        if os.geteuid() == 0 and not (self.config.get("drop_uid", True) and self._can_drop()):
            self._no(
                "processes",
                "no pids cgroup, and RLIMIT_NPROC never binds for root; the audit layer still "
                "refuses fork and subprocess",
            )
            return
        current = 0 if os.geteuid() == 0 else _tasks_of_uid(os.getuid())
        value = current + budget
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (value, value))
        except (ValueError, OSError) as exc:
            self._no("processes", f"setrlimit(RLIMIT_NPROC): {exc}")
            return
        self._ok(
            "processes", f"RLIMIT_NPROC: {budget} more processes and threads for this uid ({value} in all)"
        )

    # .................................................................. Landlock
    def landlock(self) -> None:
        self._no("signals", "needs Landlock ABI 6 (signal scoping); the audit layer refuses os.kill")
        if not self.config.get("landlock", True):
            self._no("filesystem", "Landlock " + self.config.get("off_reason", "turned off by the caller"))
            self._fallback_filesystem()
            return
        abi = self.libc.syscall(_LL_CREATE, None, 0, _LL_VERSION)
        if abi < 1:
            self._no("filesystem", f"Landlock unavailable: {self._errno()}")
            self._fallback_filesystem()
            return
        handled = _FS_WRITE_FILE | _READ | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _MAKE
        handled |= _FS_REFER if abi >= 2 else 0
        handled |= _FS_TRUNCATE if abi >= 3 else 0
        net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 and self.config.get("network", True) else 0
        scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0
        fields = [handled] + ([net] if abi >= 4 else []) + ([scoped] if abi >= 6 else [])
        attr = (self.ctypes.c_uint64 * len(fields))(*fields)
        ruleset = self.libc.syscall(_LL_CREATE, self.ctypes.byref(attr), self.ctypes.sizeof(attr), 0)
        if ruleset < 0:
            self._no("filesystem", f"landlock_create_ruleset: {self._errno()}")
            self._fallback_filesystem()
            return
        failed: list[str] = []
        try:
            everything = handled
            self._rule(ruleset, self.workdir, everything, failed)
            self._rule(ruleset, "/dev", _READ | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0), failed)
            for path in self.readable():
                self._rule(ruleset, path, _READ, failed)
            if self.libc.syscall(_LL_RESTRICT, ruleset, 0) != 0:
                self._no("filesystem", f"landlock_restrict_self: {self._errno()}")
                self._fallback_filesystem()
                return
        finally:
            os.close(ruleset)
        note = f" ({len(failed)} paths could not be added: {', '.join(failed[:3])})" if failed else ""
        self._ok(
            "filesystem",
            f"Landlock ABI {abi}: writes only in {self.workdir} and to device files; no "
            f"reads in {', '.join(self.protected())} or other processes' /proc entries{note}",
        )
        if net and "network" in self.applied:
            self.applied["network"] += "; and Landlock: no TCP bind or connect"
        elif net:
            why = self.skipped.get("network", "")
            self._ok("network", f"Landlock: no TCP bind or connect (UDP is not covered; {why})")
        if scoped:
            self._ok(
                "signals",
                "Landlock scope: no signals to processes outside the sandbox (the harness), no "
                "abstract unix sockets",
            )
        else:
            self._no(
                "signals",
                f"Landlock ABI {abi} has no signal scoping (needs 6); the audit layer refuses os.kill",
            )

    def _rule(self, ruleset: int, path: str, access: int, failed: list[str]) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                access &= _FILE_RIGHTS
            if not access:
                return
            rule = self.path_beneath(access, fd)
            if self.libc.syscall(_LL_ADD_RULE, ruleset, 1, self.ctypes.byref(rule), 0) != 0:
                failed.append(path)
        finally:
            os.close(fd)

    def readable(self) -> list[str]:
        if not hasattr(self, "_readable"):
            self._readable = readable_paths(self.workdir, self.protected())
        return self._readable

    def protected(self) -> list[str]:
        home = os.path.realpath(self.config.get("home") or "/root")
        extra = [os.path.realpath(p) for p in self.config.get("protect", [])]
        found = [p for p in (*SECRET_DIRS, home, *extra) if os.path.exists(p) and p != "/"]
        return sorted(set(found))

    def _fallback_filesystem(self) -> None:
        if self._read_only_rest():
            self._ok(
                "filesystem",
                "mount namespace: every filesystem but the private directory, /dev, /proc and "
                "/sys is read-only (reads are not confined without Landlock)",
            )
        else:
            self._no(
                "filesystem",
                self.skipped.get("filesystem", "no Landlock and no mount namespace")
                + "; writes elsewhere are refused only by the audit layer",
            )

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


def _remove_empty_cgroups(root: str) -> None:
    """Workers that died without being stopped leave their (empty) cgroups behind: clear them."""
    try:
        names = [n for n in os.listdir(root) if n.startswith("warpgym-worker-")]
    except OSError:
        return
    for name in names:
        try:
            os.rmdir(os.path.join(root, name))  # refused while any process is in it
        except OSError:
            pass


def _tasks_of_uid(uid: int) -> int:
    """Processes and threads that count against RLIMIT_NPROC for ``uid`` now."""
    total = 0
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return total


def readable_paths(workdir: str, protected: list[str]) -> list[str]:
    """Everything readable except the protected trees and other processes' /proc entries.

    Landlock only allows, so this lists, for each directory on the way to a protected path,
    its other children; then the places Python and this package need that lie inside a
    protected tree (a virtualenv in a home directory), but never a protected path itself or a
    directory above one.
    """
    closed = set(protected) | {"/proc"}
    above: set[str] = set()
    for path in closed:
        parent = os.path.dirname(path)
        while True:
            above.add(parent)
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    allowed: list[str] = []
    me = str(os.getpid())
    for directory in sorted(above):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            full = os.path.join(directory, name)
            if full in closed or full in above:
                continue
            allowed.append(full)
    try:
        proc = [n for n in os.listdir("/proc") if not n.isdigit()]
    except OSError:  # no procfs (not Linux): nothing to open there
        proc = []
    allowed += [os.path.join("/proc", n) for n in proc] + [f"/proc/{me}"]

    def reopens(path: str) -> bool:
        """A rule binds to where a path resolves: a symlink (``pytest-current``) could point into a closed
        tree or above one."""
        real = os.path.realpath(path)
        if real.startswith("/proc/"):
            pid = real.split("/")[2]
            return pid.isdigit() and pid != me
        return real in above or any(real == c or real.startswith(c + "/") for c in closed)

    allowed = [p for p in allowed if not reopens(p)]
    needed = {sys.prefix, sys.base_prefix, sys.exec_prefix, PACKAGE_ROOT, workdir}
    needed.update(p for p in sys.path if p and os.path.isdir(p))
    for path in needed:
        path = os.path.realpath(path)
        if any(path == c or c.startswith(path.rstrip("/") + "/") for c in closed):
            continue  # would open a protected tree (a sys.path entry that is a home directory)
        allowed.append(path)
    return sorted(set(allowed))


def _send_frame(fd: int, payload: bytes) -> None:
    """One message in ``multiprocessing.connection``'s framing (a 4-byte big-endian length)."""
    import struct

    data = struct.pack("!i", len(payload)) + payload
    while data:
        data = data[os.write(fd, data) :]


def _load_audit() -> Any:
    """``audit.py`` by file path, registered under its package name: the worker's ``from
    warpgym.env.worker import audit`` then finds this module, with the hook's state, instead of a fresh
    copy without it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(AUDIT_MODULE, os.path.join(HERE, "audit.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[AUDIT_MODULE] = module
    spec.loader.exec_module(module)
    return module


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
