"""Fixit: supervised fine-tuning data from repaired kernels, and the path to train on it.

PTXBench's Fixit adapts a model on its own mistakes: the wrong kernel, the judge's log, an
explanation, and the fixed kernel. Here any experiment run becomes such data:

    from warpgym.experiments.fixit import BuildOptions, build, train
    result = build(["runs/my-run"], "fixit-data", BuildOptions(cross_model=True))
    train("fixit-data", "/models/my-local-model")      # needs the `fixit` extra

``kinds`` classifies failures, ``pairs`` finds (wrong, fixed) pairs in stored runs, ``select``
de-duplicates, caps, balances and splits by task, ``explain`` writes explanations, ``messages``
words each example's chat, ``report`` and ``card`` say what was kept and why, ``layouts`` writes
the JSONL layouts, ``build`` runs those steps in order, ``train`` runs TRL + PEFT.
"""

from __future__ import annotations

from .build import BuildOptions, BuildResult, FixitError, build
from .kinds import KINDS, classify, fixes
from .pairs import Attempt, Pair, find_pairs, load_attempts
from .select import Caps, deduplicate, similarity, split_groups
from .train import TrainOptions, TrainResult, train

__all__ = [
    "KINDS",
    "Attempt",
    "BuildOptions",
    "BuildResult",
    "Caps",
    "FixitError",
    "Pair",
    "TrainOptions",
    "TrainResult",
    "build",
    "classify",
    "deduplicate",
    "find_pairs",
    "fixes",
    "load_attempts",
    "similarity",
    "split_groups",
    "train",
]
