"""The worker's namespaces, mounts, process cgroup and resource limits.

A network namespace leaves the worker without interfaces; a mount namespace puts a size-limited
tmpfs over the private directory and empty ones over hidden folders (and, without Landlock, makes the
rest read-only); a pids cgroup, or ``RLIMIT_NPROC``, bounds processes and threads; rlimits bound file
size, CPU time, core files, descriptors and address space. ``confine.py`` loads this file by path
before the package is imported, so it uses the standard library only.
"""

from __future__ import annotations

import os
from typing import Any

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


class IsolationLayer:
    """The ``namespaces``, ``cgroups`` and ``limits`` steps of ``confine.Sandbox``, which supplies the
    settings (``config``, ``workdir``), libc, the report and the uid a root worker drops to."""

    config: dict[str, Any]
    workdir: str
    cgroup: str | None

    def _unshare(self, flags: int) -> bool:
        return self.libc.unshare(flags) == 0

    def namespaces(self) -> None:
        """A network namespace, and a mount namespace for the disk quota (root, or a user namespace)."""
        want_net, want_mount = self.config.get("network", True), self.config.get("mount", True)
        if want_net and self.config.get("tcp_ports"):
            # A profiler's target talks to the profiler over loopback TCP: a namespace of its own would cut
            # it off (ncu then waits for ever). Landlock keeps TCP to the profiler's ports instead.
            self._no("network", "no network namespace under a profiler, which talks to its target over TCP")
            want_net = False
        elif not want_net:
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
            what = "the tasks and their reference solutions, the judge's code"
            self._ok("hidden", f"empty over {', '.join(hidden)} ({what})")
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
