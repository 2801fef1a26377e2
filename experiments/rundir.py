"""Run directories: where a run's store, configs and report live, found by path or by name.

A run directory holds ``store.sqlite`` (everything played), ``config.toml`` (the experiment file
as given) and ``config.resolved.json`` (the experiment with every default filled in). Opening one
that exists resumes it, and its stored experiment decides the grid.
"""

from __future__ import annotations

import shutil
import time
from datetime import datetime
from pathlib import Path

from . import config as config_mod
from .config import Experiment
from .store import Store

STORE_NAME = "store.sqlite"


class RunError(Exception):
    """A run that cannot start or resume (bad run directory, changed grid, missing API key)."""


def new_run_dir(exp: Experiment, root: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{exp.name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"{exp.name}-{stamp}-{n}"
    return path


def find_run(run: str | Path, root: Path | None = None) -> Path:
    """A run directory by path, or by name under ``root`` (default ``runs/``)."""
    path = Path(run)
    if (path / STORE_NAME).is_file():
        return path
    if path.name == STORE_NAME and path.is_file():
        return path.parent
    if root is not None and (root / run / STORE_NAME).is_file():
        return root / run
    raise RunError(f"no run at {run} (a run directory holds {STORE_NAME})")


def open_run(exp: Experiment | None, run_dir: Path) -> tuple[Experiment, Store, bool]:
    """Create the run directory or reopen it; returns (experiment, store, resumed).

    On resume the stored experiment is authoritative for the grid; the given one may change
    only ``run`` and ``budget`` (and must otherwise match, so a resumed run means one thing).
    """
    store_path = run_dir / STORE_NAME
    if store_path.is_file():
        store = Store(store_path)
        stored = store.get_meta("config")
        if stored is None:
            raise RunError(f"{store_path} holds no experiment; not a warpgym run")
        saved = config_mod.from_resolved(stored)
        if exp is not None:
            a, b = saved.identity(), exp.identity()
            changed = [k for k in a if a[k] != b[k]]
            if changed:
                store.close()
                raise RunError(
                    f"{run_dir} was started with a different experiment ({', '.join(changed)} "
                    "differ); resume it with its own config (omit CONFIG) or start a new run"
                )
            saved.run, saved.budget = exp.run, exp.budget
        return saved, store, True
    if exp is None:
        raise RunError(f"no run at {run_dir}; give an experiment file to start one")
    run_dir.mkdir(parents=True, exist_ok=True)
    if exp.source_path:
        shutil.copyfile(exp.source_path, run_dir / "config.toml")
    store = Store(store_path)
    from warpgym import __version__

    store.set_meta("config", exp.model_dump())
    store.set_meta("versions", _versions(__version__))
    store.set_meta("created", time.time())
    return exp, store, False


def _versions(warpgym_version: str) -> dict[str, str]:
    import platform

    import torch
    import triton

    return {
        "warpgym": warpgym_version,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def save_resolved(exp: Experiment, run_dir: Path) -> None:
    (run_dir / "config.resolved.json").write_text(exp.to_json() + "\n")
