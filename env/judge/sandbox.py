"""The worker's sandbox as the harness sees it: the settings a worker starts with, the command that
starts it confined, the report it sends back, and the cleanup of its process cgroup.

The protections themselves are applied in the worker by ``env/worker/confine.py`` (operating-system
layers, run as a plain script before the package is imported) and ``env/worker/audit.py`` (the
in-process audit hook); this module runs in the judge's process, beside ``pool.py``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from warpgym.env.worker import confine
from warpgym.env.worker.confine import ENV_VAR

CONFINE_SCRIPT = os.path.abspath(confine.__file__)


def defaults(device: str, mode: str) -> dict[str, Any]:
    """The limits a worker gets unless the caller says otherwise."""
    cpu_only = not device.startswith("cuda")
    config = {
        "file_bytes": 1 << 30,
        "disk_bytes": 2 << 30,
        "cpu_seconds": 24 * 3600,
        "memory_bytes": _default_memory() if cpu_only else None,
        "tasks": 1024 + 8 * (os.cpu_count() or 1),
        "open_files": 4096,
        "network": True,
        "landlock": True,
        "mount": True,
        "cgroup": True,
        "drop_uid": True,
        "audit": True,
        "hide": hidden_from_workers(),
        "protect": problem_files(),
    }
    if not cpu_only:
        # On the H200 (2026-12-01, scripts/landlock_cuda_probe.py) CUDA failed to initialise under the
        # worker's Landlock rules and under every grant but one that covers writes in the process's own
        # /proc entry; with that grant alone it ran.
        config["own_proc_writes"] = True
    return config


def hidden_from_workers() -> list[str]:
    """Folders a worker never needs and a candidate must not read: the tasks (their references, cases,
    held-out shapes and reference solutions) and the judge's own code. Each is covered by an empty tmpfs
    in the worker's mount namespace (so also where Landlock is off), and the audit hook refuses reading
    anything in them; the worker's finder refuses importing them (``env/worker/audit.py``)."""
    from warpgym.tasks.spec import SOLUTIONS_DIR

    return [str(SOLUTIONS_DIR.resolve().parent), str(Path(__file__).resolve().parent)]  # solutions: in tasks/


def problem_files() -> list[str]:
    """The imported problem files this process has read (a KernelBench checkout's ``Model`` classes and
    input builders): trusted data of the judge, as closed to a worker as a home directory (Landlock and
    the audit hook), wherever the user keeps them."""
    from warpgym.tasks.importers.model_problem import problem_files as read

    return read()


def protected_by(env: dict[str, str]) -> frozenset[str]:
    """The paths a worker started with ``env`` (``configure``) keeps closed beyond the defaults' folders."""
    return frozenset(json.loads(env.get(ENV_VAR) or "{}").get("protect") or [])


def _default_memory() -> int:
    """Address space for a CPU worker: most of the machine, at least 8 GiB (the interpreter maps a lot)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30
    return max(8 << 30, int(total * 0.75))


def launch_command(fd: int) -> list[str]:
    """Run ``confine.py`` as a script: the package (and torch) is imported only after the protections."""
    return [sys.executable, CONFINE_SCRIPT, str(fd)]


def configure(
    env: dict[str, str],
    workdir: str,
    device: str,
    mode: str,
    removed: int,
    overrides: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Put the sandbox's settings into the worker's environment."""
    config = defaults(device, mode)
    protect = [*config["protect"], *(overrides or {}).get("protect", [])]
    config.update(overrides or {})
    config["protect"] = sorted(set(protect))  # an override adds closed paths, never reopens one
    config.update(
        {
            "workdir": workdir,
            "device": device,
            "mode": mode,
            "removed_env": removed,
            "home": os.path.expanduser("~"),
            "parent": os.getpid(),
        }
    )
    env = dict(env)
    env[ENV_VAR] = json.dumps(config)
    return env


def not_applied(report: dict[str, Any] | None) -> list[str]:
    """One line per protection that could not be applied here, for a reader of the verdict."""
    if not report:
        return ["sandbox: the worker ran without a sandbox"]
    return [
        f"sandbox: {name} not applied ({why})" for name, why in sorted(report.get("not_applied", {}).items())
    ]


def cgroup_pids(report: dict[str, Any] | None) -> list[int]:
    path = (report or {}).get("cgroup")
    if not path:
        return []
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def remove_cgroup(report: dict[str, Any] | None) -> None:
    path = (report or {}).get("cgroup")
    if path:
        try:
            os.rmdir(path)
        except OSError:
            pass
