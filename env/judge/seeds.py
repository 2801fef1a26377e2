"""The seeds of an evaluation's inputs: public roles, secret values.

A task's seeds (``task.seeds``), the late re-check's, the check after a timing window's and the timing's
staged input sets are public: anyone can rebuild the inputs they name. A candidate that could rebuild
them could recognise them at run time and return answers computed offline (a reduction's answers are a
few numbers each). So each seed is a *role*: plans, reports and feedback name it ("seed 1"), while the
inputs are drawn from a seed derived from the role and a root drawn afresh for every evaluation
(``EvalOptions.input_seed`` fixes it, to replay a verdict). The root stays in the judge: the worker
receives tensors only, and the feedback never names it; the verdict records it (``EvalResult.input_seed``).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import torch
from warpgym.tasks import Sampler

SEED_BITS = 63
"""Roots and derived seeds are non-negative and below 2^63: what ``torch.Generator.manual_seed`` and
``torch.manual_seed`` accept, with room for the sampler's second generator's offset."""


def draw_root() -> int:
    """A root nobody can predict (the operating system's randomness)."""
    return secrets.randbits(SEED_BITS)


def check_root(root: int) -> int:
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < 1 << SEED_BITS:
        raise ValueError(f"an input seed is an integer in [0, 2^{SEED_BITS}), not {root!r}")
    return root


def derive(root: int, *role: object) -> int:
    """The seed ``role`` (a purpose and a public seed) plays under ``root``: a keyed hash of both, so no
    seed of one root tells anything of another's, nor of the root."""
    digest = hashlib.blake2b(repr(role).encode(), key=root.to_bytes(8, "little"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - SEED_BITS)


@dataclass(frozen=True)
class InputSeeds:
    """The seeds of one evaluation's inputs, derived from its ``root``."""

    root: int

    def seed(self, role: int, purpose: str = "check") -> int:
        """The seed of the inputs drawn for ``role``: ``check`` for checked calls (their references are
        computed from the same seed), ``timing`` for the sets a timing window rotates over."""
        return derive(self.root, purpose, role)

    @property
    def salt(self) -> int:
        """Shared by every draw of the evaluation: what a task keeps equal under all of its seeds (a
        random op's inputs other than its seed argument) varies with the root too."""
        return derive(self.root, "salt")

    def sampler(self, role: int, distribution: str, device: str | torch.device,
                purpose: str = "check") -> Sampler:
        return Sampler(self.seed(role, purpose), distribution, device, role=role, salt=self.salt)
