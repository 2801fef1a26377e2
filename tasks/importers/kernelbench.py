"""KernelBench's problem files: ``level<N>/<number>_<Name>.py``, each with ``class Model``, ``get_inputs()``
and ``get_init_inputs()``; a candidate is ``class ModelNew`` with Model's constructor.

``PATH`` may be a checkout (its ``KernelBench/`` folder holds the levels), the folder of levels, one level
folder, or one problem file. Task ids are ``kernelbench/<level>/<file stem>``.
"""

from __future__ import annotations

import re
from pathlib import Path

from .model_problem import Names, build_task

FORMAT = "kernelbench"
NAMES = Names(model="Model", inputs="get_inputs", init_inputs="get_init_inputs", candidate="ModelNew")
_LEVEL = re.compile(r"^level\d+$")


def problem_files(path: Path) -> list[tuple[str, Path]]:
    """(task id, file) of every problem under ``path``, sorted by level and problem number."""
    if path.is_file():
        level = path.parent.name if _LEVEL.match(path.parent.name) else "problems"
        return [(f"{FORMAT}/{level}/{path.stem}", path)]
    root = path / "KernelBench" if (path / "KernelBench").is_dir() else path
    levels = (
        [root]
        if _LEVEL.match(root.name)
        else sorted(d for d in root.iterdir() if d.is_dir() and _LEVEL.match(d.name))
    )
    found = []
    for level in levels:
        files = sorted((f for f in level.glob("*.py") if not f.name.startswith("_")), key=_number)
        found += [(f"{FORMAT}/{level.name}/{f.stem}", f) for f in files]
    return found


def _number(path: Path) -> tuple[int, str]:
    head = path.stem.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, path.stem)


def build(task_id: str, path: Path):  # noqa: ANN201 - a Task; the annotation would import spec eagerly
    return build_task(
        task_id, path, FORMAT, NAMES, description=f"KernelBench problem {path.parent.name}/{path.name}"
    )
