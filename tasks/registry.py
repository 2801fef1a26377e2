"""The task registry: every suite module registers its tasks on import."""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import pkgutil
import threading

from .spec import Task

_TASKS: dict[str, Task] = {}
_SUITE_PACKAGES = ("warpgym.tasks.triton", "warpgym.tasks.ptx")
_loaded = False
_loading = False
_load_lock = threading.RLock()


class UnknownTaskError(KeyError):
    """A task id that no suite declares; the message lists the nearest ids."""

    def __str__(self) -> str:  # KeyError quotes its message; this one is read by people.
        return str(self.args[0])


def register(task: Task) -> Task:
    if task.id in _TASKS:
        raise ValueError(f"task {task.id} registered twice")
    _TASKS[task.id] = task
    return task


def register_imported(tasks: list[Task]) -> None:
    """Tasks of an imported suite (``warpgym.tasks.importers``): importing the same suite again replaces
    its tasks; an id of a built-in suite is never replaced."""
    _load()
    for task in tasks:
        kept = _TASKS.get(task.id)
        if kept is not None and kept.model is None:
            raise ValueError(f"imported task {task.id} would replace a built-in task")
        _TASKS[task.id] = task


def _load() -> None:
    """Import every suite module once. Threads that ask meanwhile wait for the whole registry (a server's
    first requests come at once); a suite module that asks while loading gets what is registered so far."""
    global _loaded, _loading
    if _loaded:
        return
    with _load_lock:
        if _loaded or _loading:
            return
        _loading = True
        try:
            for package_name in _SUITE_PACKAGES:
                package = importlib.import_module(package_name)
                for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                    importlib.import_module(f"{package_name}.{info.name}")
            _loaded = True
        finally:
            _loading = False


def get_task(task_id: str) -> Task:
    _load()
    try:
        return _TASKS[task_id]
    except KeyError:
        near = difflib.get_close_matches(task_id, list(_TASKS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else "; `warpgym tasks list` shows them all"
        raise UnknownTaskError(f"unknown task id {task_id!r}{hint}") from None


def all_tasks(suite: str | None = None, category: str | None = None, dtype: str | None = None) -> list[Task]:
    _load()
    return [
        t for t in sorted(_TASKS.values(), key=lambda t: t.id)
        if (suite is None or t.suite == suite)
        and (category is None or t.category == category)
        and (dtype is None or dtype in t.dtypes)
    ]


def select(patterns: list[str]) -> list[Task]:
    """Tasks matching ids, globs (``fusion/*``), categories (``matmul``) or suites (``suite:ptx``)."""
    _load()
    chosen: dict[str, Task] = {}
    for pattern in patterns:
        if pattern.startswith("suite:"):
            found = all_tasks(suite=pattern.removeprefix("suite:"))
        elif any(ch in pattern for ch in "*?["):
            found = [t for t in all_tasks() if fnmatch.fnmatch(t.id, pattern)]
        elif "/" in pattern:
            found = [get_task(pattern)]
        else:
            found = all_tasks(category=pattern)
        if not found:
            raise UnknownTaskError(f"no task matches {pattern!r}")
        chosen.update((t.id, t) for t in found)
    return list(chosen.values())
