"""scripts/tolerance_audit.py: a float32 answer rounded once passes a sound tolerance on every draw, and a
tolerance tighter than that rounding fails it."""

from __future__ import annotations

import dataclasses

from script_module import load_script
from warpgym.tasks import Tolerance, get_task

audit = load_script("tolerance_audit")


def test_a_sound_tolerance_passes_every_draw():
    row = audit.audit_task(get_task("normalization/softmax"), seeds=3)
    assert row["draws"] > 0 and row["failed"] == 0, row["failures"]


def test_a_tolerance_tighter_than_one_rounding_fails_and_says_where():
    task = get_task("math/add")
    tight = dataclasses.replace(task, tolerances={d: Tolerance(1e-7, 1e-7, 1e-9) for d in task.dtypes})
    row = audit.audit_task(tight, seeds=1)
    assert row["failed"] > 0
    first = row["failures"][0]
    assert first["case"] in task.cases("dev") + task.cases("heldout")
    assert "outside" in first["message"] or "relative L2 error" in first["message"]


def test_tasks_judged_by_properties_are_skipped():
    assert audit.audit_task(get_task("random/dropout"), seeds=1)["skipped"] == "judged by properties"


def test_every_task_accepts_a_float32_answer_on_two_draws():
    """A floor for a new task: its tolerance admits the float32 answer (docs/suite.md: the 100-draw run)."""
    from warpgym.tasks import all_tasks

    failing = {}
    for task in all_tasks():
        row = audit.audit_task(task, seeds=2)
        if row["failed"]:
            failing[task.id] = row["failures"][0]
    assert not failing, failing
