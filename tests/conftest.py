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
