"""The worker's Landlock layer: the filesystem rules, and with them TCP and signal scoping.

Landlock only allows, so the rules list what stays open: everything in the private directory, reads
and writes of device files, and reads everywhere but the protected trees (home directories, secrets)
and other processes' ``/proc`` entries. ``confine.py`` loads this file by path before the package is
imported (a ruleset binds only the threads that exist when it is applied), so it uses the standard
library only.
"""

from __future__ import annotations

import os
import sys
from typing import Any

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The folder that holds env/, tasks/, ...: Python needs to read it even inside a protected tree."""

# Landlock (linux/landlock.h). Syscall numbers are the same on x86-64 and arm64.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_VERSION = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_REMOVE_DIR, _FS_REMOVE_FILE, _FS_MAKE_CHAR, _FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_FS_MAKE_REG, _FS_MAKE_SOCK, _FS_MAKE_FIFO = 1 << 8, 1 << 9, 1 << 10
_FS_MAKE_BLOCK, _FS_MAKE_SYM = 1 << 11, 1 << 12
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_RULE_NET_PORT = 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE
_READ = _FS_READ_FILE | _FS_READ_DIR
_MAKE = _FS_MAKE_CHAR | _FS_MAKE_DIR | _FS_MAKE_REG | _FS_MAKE_SOCK | _FS_MAKE_FIFO | _FS_MAKE_BLOCK
_MAKE |= _FS_MAKE_SYM

SECRET_DIRS = ("/root", "/home", "/run/secrets", "/var/run/secrets")
"""Never readable by a candidate (plus the harness user's home, wherever it is)."""


class LandlockLayer:
    """The ``landlock`` step of ``confine.Sandbox``, which supplies the settings (``config``,
    ``workdir``), libc and the report; without Landlock it falls back on the mount namespace's
    read-only view (``isolation.IsolationLayer``)."""

    config: dict[str, Any]
    workdir: str
    applied: dict[str, str]
    skipped: dict[str, str]

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
            ports = self.config.get("tcp_ports") or []
            if net and ports:
                self._tcp_ports(ruleset, range(int(ports[0]), int(ports[1]) + 1), failed)
            if self.config.get("own_proc_writes"):
                # CUDA's initialisation writes in the process's own /proc entry (the H200 probe:
                # scripts/landlock_cuda_probe.py); the audit layer still refuses /proc/<pid>/mem.
                own = _READ | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
                self._rule(ruleset, f"/proc/{os.getpid()}", own, failed)
            if self.libc.syscall(_LL_RESTRICT, ruleset, 0) != 0:
                self._no("filesystem", f"landlock_restrict_self: {self._errno()}")
                self._fallback_filesystem()
                return
        finally:
            os.close(ruleset)
        note = f" ({len(failed)} paths could not be added: {', '.join(failed[:3])})" if failed else ""
        self._ok(
            "filesystem",
            f"Landlock ABI {abi}: writes only in {self.workdir}, to device files"
            f"{' and in its own /proc entry' if self.config.get('own_proc_writes') else ''}; no "
            f"reads in {', '.join(self.protected())} or other processes' /proc entries{note}",
        )
        ports = self.config.get("tcp_ports")
        if net and ports:
            self._ok("network", f"Landlock: TCP bind and connect only on ports {ports[0]}-{ports[1]} (the "
                                "profiler's; no network namespace, since the profiler talks to its target "
                                "over TCP; UDP is not covered)")
        elif net and "network" in self.applied:
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

    def _tcp_ports(self, ruleset: int, ports: range, failed: list[str]) -> None:
        """Bind and connect allowed on ``ports`` only (Landlock's net-port rules, ABI 4)."""
        attr = (self.ctypes.c_uint64 * 2)()
        for port in ports:
            attr[0], attr[1] = _NET_BIND_TCP | _NET_CONNECT_TCP, port
            if self.libc.syscall(_LL_ADD_RULE, ruleset, _RULE_NET_PORT, self.ctypes.byref(attr), 0) != 0:
                failed.append(f"tcp:{port}")

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
