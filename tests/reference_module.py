"""Running a hand-written CUDA reference's module as the worker runs it, for tests that read its kernels."""

from __future__ import annotations

from warpgym.env.candidate import Candidate
from warpgym.env.toolchain import attachments, loader


def run_reference(candidate: Candidate, target: str, filename: str) -> dict:
    """The module's namespace once executed with its attachments installed and ``target`` the loader's
    default (the attachments stay installed: the caller clears them)."""
    attachments.install(candidate.attachments)
    loader.set_default_target(target)
    try:
        namespace: dict = {"__name__": "candidate"}
        exec(compile(candidate.source, filename, "exec"), namespace)  # noqa: S102 - our own reference
        return namespace
    finally:
        loader.set_default_target(None)
