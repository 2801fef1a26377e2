"""Indexing and data movement: gathers, scatters, lookups, layout copies.

Every output here is a copy of input values (or, for scatter-add, their sums), so the float
tolerances are exact except where atomics may add duplicates in any order.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

_EXACT = {
    d: Tolerance(0.0, 0.0, 0.0, "a copy of input values is exact")
    for d in ("float32", "float16", "bfloat16", "int64")
}
_COPY_DTYPES = ("float32", "float16", "bfloat16")
_DISTS = ("normal", "uniform")


HOST_MOVES = 4
"""Host copies and fills per call a wrapper of an index task may make (an output cleared or copied from its
base, say): a row-by-row copy at offsets read from the indices would be the answer itself."""


def _mn(m: int, n: int, dtype: str, **extra) -> dict:
    return {"m": m, "n": n, "dtype": dtype, **extra}


# ----------------------------------------------------------------------------------------------- gather
def _gather_inputs(case, s):
    m, n, k = case["m"], case["n"], case["k"]
    return {"x": s.tensor((m, n), case["dtype"]), "index": s.randint(0, n, (m, k))}


register(Task(
    id="index/gather",
    host_moves=HOST_MOVES,
    entrypoint="gather",
    signature="def gather(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor",
    description="""
Gather along the last dimension, as torch.gather(x, 1, index): x is a contiguous (M, N) tensor and
index a contiguous (M, K) int64 tensor with values in [0, N) (repeats allowed);
out[i, j] = x[i, index[i, j]]. Return a new (M, K) tensor of the dtype of x (float32, float16 or
bfloat16). K can be smaller or larger than N.
""",
    performance_note=(
        "1.19x eager at the fp16 bench case and 0.53x at the fp32 one (8192 rows of 32000 floats, "
        "8192 random indices a row) on the H200, 2026-12-01 (scripts/triton_ref_sweep.py, four tile "
        "configs). Likely cause, not profiled: each row's random reads span 128 KB, so L1 reuse is "
        "poor and the kernel is bound by scattered 4-byte sector reads; no tile shape tried closes it"
    ),
    reference=lambda x, index: torch.gather(x, 1, index),
    make_inputs=_gather_inputs,
    shapes={
        "dev": [_mn(4, 100, "float32", k=30), _mn(16, 1000, "float16", k=1000),
                _mn(8, 64, "bfloat16", k=200)],
        "heldout": [_mn(1, 1, "float32", k=1), _mn(33, 1537, "float32", k=3000),
                    _mn(7, 4095, "float16", k=17),
                    _mn(5, 300, "bfloat16", k=301)],
        "bench": [_mn(16384, 8192, "float16", k=4096), _mn(8192, 32000, "float32", k=8192)],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: c["m"] * c["k"] * (2 * elem_size(c["dtype"]) + 8),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------ scatter-add
def _scatter_add_inputs(case, s):
    v, d, n = case["v"], case["d"], case["n"]
    return {"base": s.tensor((v, d)), "index": s.randint(0, v, (n,)), "src": s.tensor((n, d))}


def _vdn(v: int, d: int, n: int) -> dict:
    return {"v": v, "d": d, "n": n, "dtype": "float32"}


register(Task(
    id="index/scatter-add",
    host_moves=HOST_MOVES,
    entrypoint="scatter_add",
    signature="def scatter_add(base: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor",
    description="""
Row scatter-add (the backward pass of an embedding lookup), as base.index_add(0, index, src):
base is a contiguous (V, D) float32 tensor, index a (N,) int64 tensor with values in [0, V), and src a
contiguous (N, D) float32 tensor. out = a copy of base, then out[index[i], :] += src[i, :] for every i.
Indices repeat (N is often much larger than V): all rows of src with the same index are summed into
that row, in any order (the tolerance allows the rounding differences of a different summation
order, e.g. float32 atomics). Return a new (V, D) float32 tensor; do not modify base.
""",
    reference=lambda base, index, src: base.index_add(0, index, src),
    make_inputs=_scatter_add_inputs,
    shapes={
        "dev": [_vdn(10, 16, 100), _vdn(50, 128, 2000), _vdn(1000, 64, 300)],
        "heldout": [_vdn(1, 1, 1), _vdn(7, 333, 5000), _vdn(257, 100, 1025)],
        "bench": [_vdn(32000, 1024, 1 << 19), _vdn(1024, 4096, 1 << 17)],
    },
    dtypes=("float32",),
    tolerances={"float32": Tolerance(1e-4, 1e-5, 1e-5,
                                     "duplicates are summed in any order: a few fp32 ulps of "
                                     "partial sums of up to ~1000 terms of size ~1")},
    flops=lambda c: c["n"] * c["d"],
    bytes=lambda c: 4 * (2 * c["v"] * c["d"] + c["n"] * c["d"]) + 8 * c["n"],
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------- index-copy
def _index_copy_inputs(case, s):
    v, d, k = case["v"], case["d"], case["k"]
    return {"base": s.tensor((v, d), case["dtype"]), "index": s.permutation(v)[:k],
            "src": s.tensor((k, d), case["dtype"], offset=3.0)}


register(Task(
    id="index/index-copy",
    host_moves=HOST_MOVES,
    entrypoint="index_copy",
    signature="def index_copy(base: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor",
    description="""
Row scatter, as base.index_copy(0, index, src) (a KV-cache write at given slots): base is a contiguous
(V, D) tensor, index a (K,) int64 tensor of DISTINCT values in [0, V), src a contiguous (K, D) tensor of
the dtype of base (float32, float16 or bfloat16). out = a copy of base with out[index[i], :] = src[i, :].
Return a new (V, D) tensor; do not modify base.
""",
    reference=lambda base, index, src: base.index_copy(0, index, src),
    make_inputs=_index_copy_inputs,
    shapes={
        "dev": [{"v": 10, "d": 16, "k": 4, "dtype": "float32"},
                {"v": 300, "d": 128, "k": 100, "dtype": "float16"},
                {"v": 64, "d": 64, "k": 64, "dtype": "bfloat16"}],
        "heldout": [{"v": 1, "d": 1, "k": 1, "dtype": "float32"},
                    {"v": 1000, "d": 333, "k": 999, "dtype": "float32"},
                    {"v": 77, "d": 96, "k": 30, "dtype": "float16"},
                    {"v": 50, "d": 40, "k": 7, "dtype": "bfloat16"}],
        "bench": [{"v": 262144, "d": 1024, "k": 65536, "dtype": "bfloat16"},
                  {"v": 131072, "d": 1024, "k": 65536, "dtype": "float32"}],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (2 * c["v"] * c["d"] + 2 * c["k"] * c["d"]) * elem_size(c["dtype"]) + 8 * c["k"],
    distributions=_DISTS,
))


# ----------------------------------------------------------------------------------------- index-select
def _index_select_inputs(case, s):
    m, n, k = case["m"], case["n"], case["k"]
    return {"x": s.tensor((m, n), case["dtype"]), "index": s.randint(0, n, (k,))}


register(Task(
    id="index/index-select",
    host_moves=HOST_MOVES,
    entrypoint="index_select",
    signature="def index_select(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor",
    description="""
Column selection, as x.index_select(1, index): x is a contiguous (M, N) tensor, index a (K,) int64
tensor with values in [0, N) (repeats allowed); out[i, j] = x[i, index[j]]. Return a new contiguous
(M, K) tensor of the dtype of x (float32, float16 or bfloat16). The same K indices serve every row:
load them once per program, not once per element.
""",
    reference=lambda x, index: x.index_select(1, index),
    make_inputs=_index_select_inputs,
    shapes={
        "dev": [_mn(4, 100, "float32", k=30), _mn(64, 1000, "float16", k=500), _mn(8, 64, "bfloat16", k=200)],
        "heldout": [_mn(1, 1, "float32", k=1), _mn(129, 1537, "float32", k=1000),
                    _mn(7, 4095, "float16", k=17),
                    _mn(5, 300, "bfloat16", k=301)],
        "bench": [_mn(65536, 4096, "float16", k=2048), _mn(32768, 4096, "float32", k=1024)],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * c["m"] * c["k"] * elem_size(c["dtype"]) + 8 * c["k"],
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------------------- embedding
def _embedding_inputs(case, s):
    return {"indices": s.randint(0, case["v"], (case["b"], case["s"])),
            "weight": s.tensor((case["v"], case["d"]), case["dtype"])}


def _emb(b: int, s: int, v: int, d: int, dtype: str) -> dict:
    return {"b": b, "s": s, "v": v, "d": d, "dtype": dtype}


register(Task(
    id="index/embedding",
    host_moves=HOST_MOVES,
    entrypoint="embedding",
    signature="def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor",
    description="""
Embedding lookup, as torch.nn.functional.embedding(indices, weight): indices is a contiguous (B, S)
int64 tensor with values in [0, V), weight a contiguous (V, D) table (float32, float16 or bfloat16);
out[b, s, :] = weight[indices[b, s], :]. Return a new contiguous (B, S, D) tensor of the dtype of
weight. V can be large (a vocabulary of 128k rows).
""",
    reference=lambda indices, weight: F.embedding(indices, weight),
    make_inputs=_embedding_inputs,
    shapes={
        "dev": [_emb(2, 8, 100, 32, "float32"), _emb(4, 64, 1000, 256, "float16"),
                _emb(1, 16, 50, 64, "bfloat16")],
        "heldout": [_emb(1, 1, 1, 1, "float32"), _emb(3, 77, 5000, 300, "float32"),
                    _emb(2, 33, 128, 1000, "float16"),
                    _emb(2, 9, 40, 96, "bfloat16")],
        "bench": [_emb(16, 4096, 128256, 4096, "bfloat16"), _emb(8, 4096, 32000, 4096, "float32")],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: c["b"] * c["s"] * (2 * c["d"] * elem_size(c["dtype"]) + 8),
    distributions=_DISTS,
))


# ---------------------------------------------------------------------------------------------- one-hot
register(Task(
    id="index/one-hot",
    host_moves=HOST_MOVES,
    entrypoint="one_hot",
    signature="def one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor",
    description="""
One-hot encoding, as torch.nn.functional.one_hot(labels, num_classes): labels is a contiguous (N,) int64
tensor with values in [0, num_classes); out[i, c] = 1 if labels[i] == c else 0. Return a new contiguous
(N, num_classes) int64 tensor. Every element must be written (the output buffer starts as garbage).
""",
    reference=lambda labels, num_classes: F.one_hot(labels, num_classes),
    make_inputs=lambda case, s: {"labels": s.randint(0, case["c"], (case["n"],)), "num_classes": case["c"]},
    shapes={
        "dev": [{"n": 10, "c": 5}, {"n": 1000, "c": 100}, {"n": 64, "c": 1000}],
        "heldout": [{"n": 1, "c": 1}, {"n": 3001, "c": 17}, {"n": 129, "c": 2049}],
        "bench": [{"n": 16384, "c": 8192}, {"n": 1 << 20, "c": 128}],
    },
    dtypes=("int64",),
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 8 * c["n"] * (c["c"] + 1),
    distributions=("normal",),
))


# ------------------------------------------------------------------------------------------ masked-fill
def _masked_fill_inputs(case, s):
    m, n = case["m"], case["n"]
    return {"x": s.tensor((m, n), case["dtype"]), "mask": s.uniform((m, n)) < case["p"],
            "value": case["value"]}


register(Task(
    id="index/masked-fill",
    host_moves=HOST_MOVES,
    entrypoint="masked_fill",
    signature="def masked_fill(x: torch.Tensor, mask: torch.Tensor, value: float) -> torch.Tensor",
    description="""
Masked fill, as x.masked_fill(mask, value): x is a contiguous (M, N) tensor (float32, float16 or
bfloat16), mask a contiguous (M, N) bool tensor, value a Python float representable in x's dtype;
out[i, j] = value where mask[i, j] is True, else x[i, j]. Return a new (M, N) tensor of x's dtype; do
not modify x. (A bool tensor is one byte per element.)
""",
    reference=lambda x, mask, value: x.masked_fill(mask, value),
    make_inputs=_masked_fill_inputs,
    shapes={
        "dev": [_mn(4, 100, "float32", p=0.5, value=-10000.0), _mn(16, 1000, "float16", p=0.1, value=0.0),
                _mn(8, 64, "bfloat16", p=0.9, value=-1.5)],
        "heldout": [_mn(1, 1, "float32", p=0.5, value=2.0), _mn(33, 1537, "float32", p=0.3, value=-65504.0),
                    _mn(7, 4095, "float16", p=0.7, value=0.25),
                    _mn(5, 300, "bfloat16", p=0.5, value=-10000.0)],
        "bench": [_mn(16384, 16384, "float16", p=0.5, value=-10000.0),
                  _mn(8192, 16384, "float32", p=0.5, value=0.0)],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: c["m"] * c["n"] * (2 * elem_size(c["dtype"]) + 1),
    distributions=_DISTS,
))


# -------------------------------------------------------------------------------------------- transpose
register(Task(
    id="index/transpose",
    layout=True,
    entrypoint="transpose",
    signature="def transpose(x: torch.Tensor) -> torch.Tensor",
    description="""
Materialized transpose, as x.t().contiguous(): x is a contiguous (M, N) tensor (float32, float16 or
bfloat16); return a new contiguous (N, M) tensor with out[j, i] = x[i, j]. Both the reads and the writes
should be coalesced: move tiles, not single rows or columns.
""",
    # clone, not contiguous(): for N = 1 or M = 1 contiguous() keeps odd strides that byte views reject
    reference=lambda x: x.t().clone(memory_format=torch.contiguous_format),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [_mn(4, 100, "float32"), _mn(64, 64, "float16"), _mn(100, 37, "bfloat16")],
        "heldout": [_mn(1, 1, "float32"), _mn(1, 1000, "float32"), _mn(333, 257, "float16"),
                    _mn(65, 129, "bfloat16"), _mn(513, 31, "float32")],
        "bench": [_mn(16384, 16384, "float16"), _mn(8192, 16384, "float32")],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------ permute-0213
def _bshd(b: int, s: int, h: int, d: int, dtype: str, **extra) -> dict:
    return {"b": b, "s": s, "h": h, "d": d, "dtype": dtype, **extra}


def _bshd_numel(c) -> int:
    return c["b"] * c["s"] * c["h"] * c["d"]


register(Task(
    id="index/permute-0213",
    layout=True,
    entrypoint="permute_0213",
    signature="def permute_0213(x: torch.Tensor) -> torch.Tensor",
    description="""
The attention head split, as x.permute(0, 2, 1, 3).contiguous(): x is a contiguous (B, S, H, D) tensor
(float32, float16 or bfloat16); return a new contiguous (B, H, S, D) tensor with
out[b, h, s, d] = x[b, s, h, d].
""",
    reference=lambda x: x.permute(0, 2, 1, 3).contiguous(),
    make_inputs=lambda case, s: {"x": s.tensor((case["b"], case["s"], case["h"], case["d"]), case["dtype"])},
    shapes={
        "dev": [_bshd(2, 10, 3, 16, "float32"), _bshd(1, 64, 8, 64, "float16"),
                _bshd(2, 7, 4, 32, "bfloat16")],
        "heldout": [_bshd(1, 1, 1, 1, "float32"), _bshd(3, 77, 5, 48, "float32"),
                    _bshd(2, 33, 12, 128, "float16"),
                    _bshd(1, 9, 2, 80, "bfloat16")],
        "bench": [_bshd(16, 4096, 32, 128, "bfloat16"), _bshd(8, 4096, 32, 128, "float32")],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * _bshd_numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# --------------------------------------------------------------------------------------------- concat
def _concat_inputs(case, s):
    m = case["m"]
    return {"a": s.tensor((m, case["n1"]), case["dtype"]), "b": s.tensor((m, case["n2"]), case["dtype"]),
            "c": s.tensor((m, case["n3"]), case["dtype"])}


def _cat(m: int, n1: int, n2: int, n3: int, dtype: str) -> dict:
    return {"m": m, "n1": n1, "n2": n2, "n3": n3, "dtype": dtype}


register(Task(
    id="index/concat",
    layout=True,
    entrypoint="concat",
    signature="def concat(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor",
    description="""
Concatenation along the last dimension, as torch.cat((a, b, c), dim=1): a, b, c are contiguous 2-D
tensors with the same number of rows M and the same dtype (float32, float16 or bfloat16), of widths
N1, N2, N3 (any of them may differ, none is zero). Return a new contiguous (M, N1 + N2 + N3) tensor.
""",
    reference=lambda a, b, c: torch.cat((a, b, c), dim=1),
    make_inputs=_concat_inputs,
    shapes={
        "dev": [_cat(4, 10, 20, 30, "float32"), _cat(64, 128, 64, 256, "float16"),
                _cat(8, 33, 1, 7, "bfloat16")],
        "heldout": [_cat(1, 1, 1, 1, "float32"), _cat(129, 1000, 3, 517, "float32"),
                    _cat(33, 64, 64, 64, "float16"),
                    _cat(5, 300, 200, 100, "bfloat16")],
        "bench": [_cat(32768, 4096, 1024, 1024, "bfloat16"), _cat(16384, 4096, 2048, 2048, "float32")],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * c["m"] * (c["n1"] + c["n2"] + c["n3"]) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------------ flip
register(Task(
    id="index/flip",
    layout=True,
    entrypoint="flip",
    signature="def flip(x: torch.Tensor) -> torch.Tensor",
    description="""
Reverse each row, as torch.flip(x, dims=(1,)): x is a contiguous (M, N) tensor (float32, float16 or
bfloat16); return a new (M, N) tensor with out[i, j] = x[i, N - 1 - j].
""",
    reference=lambda x: torch.flip(x, dims=(1,)),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [_mn(4, 100, "float32"), _mn(16, 1024, "float16"), _mn(8, 63, "bfloat16")],
        "heldout": [_mn(3, 2, "float32"), _mn(33, 1537, "float32"), _mn(7, 4097, "float16"),
                    _mn(5, 300, "bfloat16")],
        "bench": [_mn(16384, 16384, "float16"), _mn(8192, 16384, "float32")],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------------ roll
register(Task(
    id="index/roll",
    layout=True,
    entrypoint="roll",
    signature="def roll(x: torch.Tensor, shift: int) -> torch.Tensor",
    description="""
Circular shift of each row, as torch.roll(x, shifts=shift, dims=1): x is a contiguous (M, N) tensor
(float32, float16 or bfloat16) and shift any Python int (negative, or larger than N in magnitude);
out[i, (j + shift) mod N] = x[i, j]. Return a new (M, N) tensor.
""",
    reference=lambda x, shift: torch.roll(x, shifts=shift, dims=1),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"]),
                                 "shift": case["shift"]},
    shapes={
        "dev": [_mn(4, 100, "float32", shift=3), _mn(16, 1024, "float16", shift=-300),
                _mn(8, 63, "bfloat16", shift=100)],
        "heldout": [_mn(3, 2, "float32", shift=-1), _mn(33, 1537, "float32", shift=5000),
                    _mn(7, 4097, "float16", shift=-4096), _mn(5, 300, "bfloat16", shift=1)],
        "bench": [_mn(16384, 16384, "float16", shift=1000), _mn(8192, 16384, "float32", shift=-77)],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------- repeat-kv
register(Task(
    id="index/repeat-kv",
    layout=True,
    entrypoint="repeat_kv",
    signature="def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor",
    description="""
Grouped-query attention's key/value expansion, as x.repeat_interleave(n_rep, dim=1): x is a contiguous
(B, H, S, D) tensor (float32, float16 or bfloat16) and n_rep >= 1; return a new contiguous
(B, H * n_rep, S, D) tensor with out[b, h * n_rep + r] = x[b, h] for r in [0, n_rep).
""",
    reference=lambda x, n_rep: x.repeat_interleave(n_rep, dim=1),
    make_inputs=lambda case, s: {"x": s.tensor((case["b"], case["h"], case["s"], case["d"]), case["dtype"]),
                                 "n_rep": case["rep"]},
    shapes={
        "dev": [_bshd(2, 10, 2, 16, "float32", rep=3), _bshd(1, 64, 4, 64, "float16", rep=2),
                _bshd(2, 7, 1, 32, "bfloat16", rep=8)],
        "heldout": [_bshd(1, 1, 1, 1, "float32", rep=1), _bshd(3, 77, 2, 48, "float32", rep=4),
                    _bshd(2, 33, 8, 128, "float16", rep=4), _bshd(1, 9, 2, 80, "bfloat16", rep=5)],
        "bench": [_bshd(8, 8192, 8, 128, "bfloat16", rep=4), _bshd(4, 8192, 8, 128, "float32", rep=4)],
    },
    dtypes=_COPY_DTYPES,
    tolerances=_EXACT,
    flops=lambda c: 0,
    bytes=lambda c: (1 + c["rep"]) * _bshd_numel(c) * elem_size(c["dtype"]),
    distributions=_DISTS,
))
