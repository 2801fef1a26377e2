"""Shared fixtures: one CPU evaluator (its workers stay warm across tests)."""

from __future__ import annotations

import pytest
import torch
from warpgym.env import Evaluator


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run scripts/gpu_session.sh on the H200 machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def cpu_evaluator() -> Evaluator:
    evaluator = Evaluator("cpu")
    yield evaluator
    evaluator.close()


@pytest.fixture(autouse=True, scope="module")
def _imported_suites_stay_in_their_module():
    """A test module that imports a suite registers its tasks process-wide: later modules see the built-in
    registry again (and an importer that registers the same path anew)."""
    from warpgym.tasks import importers, registry

    registry._load()
    tasks, active = dict(registry._TASKS), dict(importers._active)
    yield
    registry._TASKS.clear()
    registry._TASKS.update(tasks)
    importers._active.clear()
    importers._active.update(active)
