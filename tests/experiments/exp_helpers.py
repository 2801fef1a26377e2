"""Helpers for experiment tests: replay files and experiment files written into tmp_path.

The task is normalization/softmax: its dev and heldout checks are among the cheapest in
Triton's interpreter (math/add's heldout has a million-element case).
"""

from __future__ import annotations

import json
from pathlib import Path

from warpgym.tasks import get_task

TASK = "normalization/softmax"
GOOD = get_task(TASK).solution_source()
TORCH_OP = """import torch
import triton


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
"""


def fenced(source: str, prose: str = "Here is the kernel.") -> str:
    return f"{prose}\n\n```python\n{source}\n```\n"


NO_CODE = "I need to think about the memory layout first; could you confirm the tensors are contiguous?"


def write_replay(path: Path, rows: list[tuple[int, int, str]], tokens: int = 1000) -> Path:
    """(sample, turn, text) for TASK; each answer costs ``tokens`` input tokens and 0.01 USD."""
    with open(path, "w") as f:
        for sample, turn, text in rows:
            f.write(
                json.dumps(
                    {
                        "task": TASK,
                        "sample": sample,
                        "turn": turn,
                        "text": text,
                        "input_tokens": tokens,
                        "output_tokens": 0,
                        "cost_usd": 0.01,
                    }
                )
                + "\n"
            )
    return path


def write_experiment(path: Path, replay: Path, *, samples: int, max_turns: int = 3, extra: str = "") -> Path:
    path.write_text(f"""
name = "test"
tasks = ["{TASK}"]
agents = ["fix-retry"]
models = [{{ spec = "replay:{replay.name}", name = "rec" }}]
samples = {samples}
max_turns = {max_turns}

[run]
devices = "cpu"
workers = 1
concurrency = 1

[metrics]
pass_k = [1]
{extra}""")
    return path
