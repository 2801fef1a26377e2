"""What a client may send: one submission, a batch, a list of ids to stream. Unknown fields are errors,
so a misspelt option is refused rather than silently ignored."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from warpgym.env.toolchain.targets import TARGETS

MAX_TASK_ID = 200
MAX_PRIORITY = 100
MAX_IDS = 4096
"""Ids in one stream or poll request."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Timeouts(Strict):
    """Seconds before the worker is killed, per kind of request; unset ones keep the judge's defaults."""

    load: float | None = Field(None, gt=0)
    run: float | None = Field(None, gt=0)
    compile: float | None = Field(None, gt=0)
    timing: float | None = Field(None, gt=0)


class Options(Strict):
    """How to judge: the ``EvalOptions`` a client may choose (the server chooses the device)."""

    shape_sets: tuple[Literal["dev", "heldout", "bench"], ...] = Field(("dev",), min_length=1, max_length=3)
    timing: bool = True
    target: str = "sm_90a"
    timeouts: Timeouts = Timeouts()
    reveal_shapes: bool = True
    profile: bool | None = None
    memcheck: bool = False
    warmup: int = Field(5, ge=0, le=100)
    reps: int = Field(30, ge=1, le=1000)

    @field_validator("shape_sets")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("each shape set at most once")
        return value

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        if value not in TARGETS:
            raise ValueError(f"unknown target {value!r}; use one of {', '.join(sorted(TARGETS))}")
        return value


class Submission(Strict):
    """One candidate for one task. Higher ``priority`` is judged sooner; equal priorities in arrival order."""

    task: str = Field(min_length=1, max_length=MAX_TASK_ID)
    source: str
    attachments: dict[str, str] = Field(default_factory=dict)
    options: Options = Options()
    priority: int = Field(0, ge=-MAX_PRIORITY, le=MAX_PRIORITY)


class Batch(Strict):
    items: list[Submission] = Field(min_length=1)


class Ids(Strict):
    ids: list[str] = Field(min_length=1, max_length=MAX_IDS)
