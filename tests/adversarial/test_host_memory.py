"""What a CPU run would otherwise get right that a GPU run would not (env/worker/host_writes.py and the
worker's output checks): fresh memory assumed zero, outputs that are the inputs, outputs no kernel wrote,
and answers the host wrote into a tensor's memory through a raw pointer."""

from __future__ import annotations

import pytest
from warpgym.env import EvalOptions

from .conftest import explain

ALL = EvalOptions(device="cpu", shape_sets=("dev", "heldout"))

# candidate, task, violation codes (one must be found; None: a failed case), words, shape sets
LOOPHOLES = [
    ("scratch_assumed_zero", "reduce/sum-all", None, "NaN where the reference", None),
    ("onehot_write_ones_only", "index/one-hot", None, "got -1, expected 0", None),
    ("alias_input_identity", "spatial/pixel-shuffle", {"output-aliases-input"}, "shares memory with", ALL),
    ("onehot_host_shortcut", "index/one-hot", {"output-not-written"}, "never given", ALL),
    ("raw_write_classbody", "math/add", {"host-write"}, "before kernel touch_kernel ran", None),
    ("raw_write_pointer_chase", "normalization/softmax", {"host-write"}, "raw pointer", None),
    ("raw_write_then_copy", "math/add", {"host-write"}, "before the PyTorch op copy_", None),
]
HONEST = [
    ("honest_onehot_fill_then_mark", "index/one-hot", None),
    ("honest_onehot_zeros_then_mark", "index/one-hot", ALL),
    ("honest_pixel_shuffle_gather", "spatial/pixel-shuffle", ALL),
    ("honest_numpy_kernel_flag", "math/add", None),
    ("honest_index_copy_clone", "index/index-copy", None),
    ("honest_workspace_at_import", "math/add", None),
]


@pytest.mark.parametrize(("name", "task_id", "codes", "words", "options"), LOOPHOLES,
                         ids=[row[0] for row in LOOPHOLES])
def test_what_only_a_cpu_gets_right_is_rejected(judge, name, task_id, codes, words, options):
    result = judge(task_id, name, **({"options": options} if options else {}))
    assert result.correct is False, explain(result)
    if codes is None:
        messages = [c.message for c in result.cases if c.passed is False]
    else:
        messages = [v.message for v in result.violations if v.code in codes]
    assert any(words in m for m in messages), explain(result)


@pytest.mark.parametrize(("name", "task_id", "options"), HONEST, ids=[row[0] for row in HONEST])
def test_honest_memory_use_passes(judge, name, task_id, options):
    result = judge(task_id, name, **({"options": options} if options else {}))
    assert result.correct is True and not result.violations, explain(result)
