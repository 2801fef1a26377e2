"""What a launch may be given on the CPU: plain values, Triton's own classes (found under their names in
Triton's modules), and grids of ints. A class of the candidate's that only claims Triton's module, or a
Triton object carrying one, runs its methods where the interpreter or the recorder calls them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
from warpgym.env.worker.launch_rules import LaunchRefused, _argument_problem, _triton_class, checked_grid


class ClaimsTriton(int):
    __module__ = "triton.language"


class constexpr:  # noqa: N801 - Triton's class name, in Triton's module, but not Triton's class
    __module__ = "triton.language"


def test_triton_values_pass_and_classes_that_only_claim_triton_do_not():
    x = torch.zeros(16, 16)
    for value in (tl.float32, tl.constexpr(3), tl.constexpr(tl.float16), tl.pointer_type(tl.int8),
                  TensorDescriptor.from_tensor(x, [8, 8]), [1, 2.0, None, "s"]):
        assert _argument_problem(value) is None, value
    assert _argument_problem(ClaimsTriton(0)) == "a ClaimsTriton (a subclass of int)"
    assert _argument_problem(constexpr()) == "a constexpr"
    carrying = TensorDescriptor(x, [16, 16], [16, 1], [8, 8])
    carrying.shape = [ClaimsTriton(16), 16]
    assert _argument_problem(carrying) is not None


def test_a_grid_is_one_to_three_ints_whether_given_or_returned():
    refused: list[str] = []
    assert checked_grid("k", (4,), refused) == (4,)
    assert checked_grid("k", [np.int64(4), 2], refused) == [np.int64(4), 2]
    for bad in ((ClaimsTriton(3),), (True,), (), (1, 1, 1, 1), 4):
        with pytest.raises(LaunchRefused):
            checked_grid("k", bad, refused)
    function = checked_grid("k", lambda meta: (ClaimsTriton(meta["n"]),), refused)
    with pytest.raises(LaunchRefused, match="grid that is a tuple holding a ClaimsTriton"):
        function({"n": 2})
    assert checked_grid("k", function, refused) is function  # an autotuner hands it on once checked
    assert len(refused) == 6 and all(len(r) > 40 for r in refused)


def test_a_class_set_into_triton_s_module_is_still_the_candidate_s(monkeypatch):
    """Found under its name in ``triton.language`` because the candidate put it there: its methods (a
    builtin as ``__repr__``) are its own, and Triton's real classes, all of them, still pass."""
    import functools
    import sys

    class Block:
        __module__ = "triton.language"
        __qualname__ = "Block"
        __repr__ = functools.partial(str, "computed unseen")

    real = [v for name, module in list(sys.modules.items())
            if name.startswith("triton.language") and module is not None
            for v in vars(module).values() if isinstance(v, type) and v.__module__ == name]
    assert len(real) > 20 and [c for c in real if not _triton_class(c)] == []
    monkeypatch.setattr(tl, "Block", Block, raising=False)
    assert _argument_problem(Block()) == "a Block"
