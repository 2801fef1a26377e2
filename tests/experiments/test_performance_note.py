"""A task's performance note (why its reference is slow) reaches `tasks show` and the suite's Markdown,
and never the statement a model reads."""

from __future__ import annotations

import dataclasses

import pytest
from warpgym.experiments.cli import main
from warpgym.experiments.cli.suite_cmd import markdown_table, performance_notes
from warpgym.tasks import get_task

NOTE = "cuDNN picks a Winograd kernel for this 3x3 case; measured 0.61x\non the H200."


@pytest.fixture
def noted(monkeypatch):
    """convolution/conv2d-3x3 with a note, swapped into the registry for one test."""
    from warpgym.tasks import registry

    task = dataclasses.replace(get_task("convolution/conv2d-3x3"), performance_note=NOTE)
    monkeypatch.setitem(registry._TASKS, task.id, task)
    return task


def _row(task_id: str) -> dict:
    return {"task": task_id, "category": task_id.split("/")[0], "correct": True, "speedup": {"eager": 0.6}}


def test_the_note_is_listed_under_the_table_on_one_line(noted):
    table = markdown_table([_row("convolution/conv2d-3x3"), _row("math/add"), _row("math/not-a-task")])
    notes = table.split("`performance_note`):")[1]
    assert "- `convolution/conv2d-3x3`: cuDNN picks a Winograd kernel for this 3x3 case; measured 0.61x on" \
        " the H200." in notes
    assert "`math/add`" not in notes and "not-a-task`" not in notes


def test_a_slow_reference_without_a_note_is_flagged_and_counted(noted):
    """Against its fastest baseline: 0.9x eager but 0.6x torch.compile is slow; a note explains it."""
    rows = [_row("convolution/conv2d-3x3"), _row("math/add"),
            {**_row("math/exp"), "speedup": {"eager": 0.9, "torch.compile": 0.6}},
            {**_row("math/where"), "speedup": {"eager": 1.2, "torch.compile": 0.85}},
            {**_row("random/normal"), "speedup": None}]
    table = markdown_table(rows)
    flagged = [line.split(" |")[0] for line in table.splitlines() if "below 0.8x, no note" in line]
    assert flagged == ["| math/add **below 0.8x, no note**", "| math/exp **below 0.8x, no note**"]
    assert "| math/exp **below 0.8x, no note** | yes | 0.90x | 0.60x | - | 0.60x |" in table
    assert "2 of 4 timed references are at 0.8x of their best baseline or above" in table


def test_no_section_when_no_task_has_a_note():
    assert "Why these references stay below" not in markdown_table([_row("math/add")])
    assert performance_notes(["math/add", "math/not-a-task"]) == []


def test_tasks_show_prints_the_note_but_the_statement_has_none(noted, capsys):
    assert main(["tasks", "show", "convolution/conv2d-3x3"]) == 0
    out = capsys.readouterr().out
    assert "Reference performance (not shown to a model): cuDNN picks a Winograd" in out
    assert "Winograd" not in noted.statement()
