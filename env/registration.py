"""Every task as a Gymnasium id, registered when ``warpgym`` (or ``warpgym.env``) is imported.

Gymnasium ids are ``namespace/Name-vN``; a task id is ``category/name``. The mapping is

    task ``normalization/softmax``  <->  ``warpgym/normalization-softmax-v0``

(the category, a hyphen, the name; categories hold no hyphen, so the first one splits them back).
``warpgym/Kernel-v0`` takes the task as a keyword, for tasks outside the bundled suites:
``gymnasium.make("warpgym/Kernel-v0", task=my_task)``.

Registering must not import the suites (they import torch), so the ids come from
``task_ids.json``, a list kept equal to the registry by a test (``write_task_ids`` rewrites it).
Each spec points at ``KernelEnv`` by name and carries only the task id, so nothing heavy loads
until an environment is made.
"""

from __future__ import annotations

import json
from pathlib import Path

NAMESPACE = "warpgym"
VERSION = 0
ENTRY_POINT = "warpgym.env.environment:KernelEnv"
GENERIC_ID = f"{NAMESPACE}/Kernel-v{VERSION}"
TASK_IDS_FILE = Path(__file__).with_name("task_ids.json")


def gym_id(task_id: str) -> str:
    """``normalization/softmax`` -> ``warpgym/normalization-softmax-v0``."""
    category, sep, name = task_id.partition("/")
    if not sep or not category or not name or "-" in category or "/" in name:
        raise ValueError(f"task id {task_id!r} is not of the form category/name")
    return f"{NAMESPACE}/{category}-{name}-v{VERSION}"


def task_id(env_id: str) -> str:
    """``warpgym/normalization-softmax-v0`` -> ``normalization/softmax`` (the inverse of ``gym_id``)."""
    namespace, _, rest = env_id.partition("/")
    stem, _, version = rest.rpartition("-v")
    category, sep, name = stem.partition("-")
    if namespace != NAMESPACE or not sep or not version.isdigit() or not name:
        raise ValueError(f"{env_id!r} is not a warpgym task id (expected {NAMESPACE}/CATEGORY-NAME-vN)")
    return f"{category}/{name}"


def bundled_task_ids() -> list[str]:
    """The bundled suites' task ids, read without importing them."""
    return list(json.loads(TASK_IDS_FILE.read_text()))


def write_task_ids() -> Path:
    """Rewrite ``task_ids.json`` from the registry (after adding or renaming a task)."""
    from warpgym.tasks import all_tasks

    TASK_IDS_FILE.write_text(json.dumps([t.id for t in all_tasks()], indent=0) + "\n")
    return TASK_IDS_FILE


def register_all() -> None:
    """Register the generic id and one id per bundled task; a second call changes nothing."""
    from gymnasium.envs.registration import register, registry

    specs = [(GENERIC_ID, {})] + [(gym_id(t), {"task": t}) for t in bundled_task_ids()]
    for env_id, kwargs in specs:
        if env_id not in registry:
            # Timings differ from run to run on a GPU, so a step's observation is not a pure function.
            register(id=env_id, entry_point=ENTRY_POINT, kwargs=kwargs, nondeterministic=True)
