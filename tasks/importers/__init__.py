"""Importers: suites that researchers already have, read from a path they give, as warpgym tasks.

An importer is a module with ``FORMAT`` (its name), ``problem_files(path) -> [(task id, file)]`` and
``build(task id, file) -> Task``; adding one to ``ADAPTERS`` is all a new format needs (docs/importers.md).
Nothing is downloaded: the files are the user's, executed in the judge's process only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from ..registry import register_imported
from ..spec import Task
from . import kernelbench
from .model_problem import ProblemError

ADAPTERS: dict[str, ModuleType] = {kernelbench.FORMAT: kernelbench}


class SuiteSourceError(ValueError):
    """A path or format that cannot be imported at all (a single bad problem is a ``failure`` instead)."""


@dataclass
class Imported:
    tasks: list[Task] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    """Problem file -> why it could not be imported."""


def import_suite(fmt: str, path: str | Path, register: bool = True) -> Imported:
    """Every problem under ``path`` as a Task (registered unless ``register`` is False)."""
    adapter = ADAPTERS.get(fmt)
    if adapter is None:
        raise SuiteSourceError(f"unknown suite format {fmt!r}; importers: {', '.join(sorted(ADAPTERS))}")
    root = Path(path).expanduser()
    if not root.exists():
        raise SuiteSourceError(f"no such file or folder: {root}")
    files = adapter.problem_files(root)
    if not files:
        raise SuiteSourceError(f"no {fmt} problem files under {root}")
    done = Imported()
    for task_id, file in files:
        try:
            done.tasks.append(adapter.build(task_id, file))
        except ProblemError as exc:
            done.failures[str(file)] = str(exc)
    if register:
        register_imported(done.tasks)
    return done


# ---------------------------------------------------------------------------------- saved sources
def sources_file() -> Path:
    """Where ``warpgym tasks import`` remembers what it imported (beside the evaluation caches)."""
    root = os.environ.get("WARPGYM_CACHE_DIR") or os.environ.get("WARPGYM_CACHE")
    return Path(root or Path.home() / ".cache" / "warpgym") / "imported_suites.json"


def saved_sources() -> dict[str, str]:
    try:
        data = json.loads(sources_file().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def save_source(fmt: str, path: str | Path) -> None:
    file = sources_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({**saved_sources(), fmt: str(Path(path).expanduser().resolve())}, indent=1))


ENV_PREFIX = "WARPGYM_SUITE_"
"""``WARPGYM_SUITE_KERNELBENCH=PATH`` names a source like ``[suites] kernelbench = "PATH"``."""


def configured_sources() -> dict[str, str]:
    """The sources in effect without an experiment file: those saved by ``tasks import``, then the
    environment's (which win)."""
    env = {
        k.removeprefix(ENV_PREFIX).lower(): v for k, v in os.environ.items() if k.startswith(ENV_PREFIX) and v
    }
    return {**saved_sources(), **env}


_active: dict[str, str] = {}


def use(sources: dict[str, str]) -> dict[str, Imported]:
    """Import and register each (format, path) not imported from that path already."""
    done = {}
    for fmt, path in sources.items():
        resolved = str(Path(path).expanduser().resolve())
        if _active.get(fmt) == resolved:
            continue
        done[fmt] = import_suite(fmt, resolved)
        _active[fmt] = resolved
    return done


def use_configured() -> None:
    """Register the saved and environment sources; one whose path is gone is skipped silently here (the
    command that names it reports it)."""
    for fmt, path in configured_sources().items():
        if fmt in ADAPTERS and Path(path).exists():
            use({fmt: path})


def active_sources() -> dict[str, str]:
    return dict(_active)
