"""What a launch may be given on the CPU: plain values, Triton's own classes (found under their names in
Triton's modules), and grids of ints. A class of the candidate's that only claims Triton's module, or a
Triton object carrying one, runs its methods where the interpreter or the recorder calls them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
from warpgym.env.worker.launch_rules import LaunchRefused, _argument_problem, checked_grid


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
