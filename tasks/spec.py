"""Task declarations: what a candidate must compute, on which inputs, judged how.

A task is data plus a few small functions. It never imports the environment: the
environment reads tasks, not the other way round (see DESIGN.md, "Data flows one way").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .sampling import Sampler

if TYPE_CHECKING:
    from warpgym.env.candidate import Candidate

SHAPE_SETS = ("dev", "heldout", "bench")
CATEGORIES = (
    "activation", "math", "reduce", "normalization", "loss", "index", "matmul", "linalg",
    "convolution", "pooling", "spatial", "optimizer", "random", "quantization", "fusion",
)
LANGUAGES = ("triton", "cuda")
SOLUTIONS_DIR = Path(__file__).parent / "solutions"

Case = Mapping[str, Any]
"""One problem instance: named sizes and options, e.g. ``{"n": 1000, "dtype": "float32"}``."""

Inputs = dict[str, Any]
"""Keyword arguments for the entrypoint, keyed by the signature's parameter names."""


@dataclass(frozen=True)
class Tolerance:
    """Element-wise ``|out - ref| <= atol + rtol * |ref|`` plus a norm-wise relative bound.

    The norm-wise bound (``||out - ref|| / ||ref|| <= rel_l2``) keeps an absolute tolerance
    from passing a near-zero or constant answer.
    """

    atol: float
    rtol: float
    rel_l2: float
    why: str = ""


ONE_FP16_ROUNDING = Tolerance(1e-3, 1e-2, 2e-3, "computed in fp32, one rounding of the output to fp16 "
                              "(10-bit mantissa: 4.9e-4 relative)")
ONE_BF16_ROUNDING = Tolerance(8e-3, 3e-2, 1e-2, "computed in fp32, one rounding of the output to bf16 "
                              "(7-bit mantissa: 3.9e-3 relative)")
"""The half-precision bound of any op computed in fp32 and rounded once at the end: one declaration
for every task whose error is that rounding."""

# Defaults per dtype: roughly 8-16 ulps of the output type, for ops whose error grows slowly.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(1e-5, 1e-4, 1e-5, "fp32 arithmetic, a few ulps of reordering"),
    "float16": ONE_FP16_ROUNDING,
    "bfloat16": ONE_BF16_ROUNDING,
    "float8_e4m3fn": Tolerance(0.0, 0.13, 0.07, "fp8 e4m3 output: 3-bit mantissa"),
    "int8": Tolerance(0.0, 0.0, 0.0, "integers are exact"),
    "int32": Tolerance(0.0, 0.0, 0.0, "integers are exact"),
    "int64": Tolerance(0.0, 0.0, 0.0, "integers are exact"),
    "uint8": Tolerance(0.0, 0.0, 0.0, "integers are exact"),
    "bool": Tolerance(0.0, 0.0, 0.0, "booleans are exact"),
}


@dataclass
class ModelProblem:
    """A task whose candidate is a module class, not a function (imported suites: KernelBench's ``Model`` /
    ``ModelNew``). The judge builds the problem's own model for each case; the worker builds the
    candidate's class with the same constructor arguments and receives the model's parameters by name,
    so both compute the same function."""

    format: str
    """The importer that read it (``kernelbench``)."""
    path: str
    source: str
    """The problem file's text: the statement shows it."""
    params: tuple[str, ...]
    """The forward's parameter names, in order (the inputs' keys)."""
    init_inputs: Callable[[Case], list[Any]]
    state: Callable[[Case], dict[str, torch.Tensor]]
    """The reference model's parameters and buffers for a case, on the CPU, in the problem's dtypes."""
    reference_for: Callable[[Case], Callable[..., Any]]
    """The reference model of a case as a function of the inputs (any device, any floating dtype)."""
    class_name: str = "ModelNew"
    elements: Callable[[Case], int | None] | None = None
    """Elements of the inputs, outputs and parameters at a case's sizes (None where it fails there)."""
    sizes_note: str = ""
    """How dev and heldout sizes were derived from the problem's own: ``tasks show`` prints it after the
    statement; the statement never holds it, since it says what the held-out sizes are."""


@dataclass
class Task:
    """One kernel-writing problem.

    ``reference`` is eager PyTorch; the harness calls it on inputs upcast to
    ``reference_precision`` for the expected values, and on meta tensors of the original
    dtypes for the expected output shapes and dtypes. ``make_inputs`` must draw every
    random value from the sampler so the same (case, seed, distribution) gives the same
    inputs in every process.
    """

    id: str
    entrypoint: str
    signature: str
    description: str
    reference: Callable[..., Any]
    make_inputs: Callable[[Case, Sampler], Inputs]
    shapes: dict[str, list[dict[str, Any]]]
    dtypes: tuple[str, ...]
    flops: Callable[[Case], int]
    bytes: Callable[[Case], int]
    suite: str = "triton"
    language: str = "triton"
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    distributions: tuple[str, ...] = ("normal", "uniform", "outliers")
    seeds: tuple[int, ...] = (0, 1)
    required_features: dict[str, tuple[str, ...]] = field(default_factory=dict)
    baselines: tuple[str, ...] = ("eager", "torch.compile")
    vendor: Callable[..., Any] | None = None
    vendor_name: str | None = None
    reference_precision: str = "float64"
    check: Callable[[Any, Inputs, Case], str | None] | None = None
    """Custom verdict for tasks whose answer is not one tensor to compare (random ops):
    returns None when the output is right, else a message saying what is wrong."""
    notes: str = ""
    contiguous_outputs: bool = True
    """Outputs are contiguous tensors (the statement promises it); a task whose answer is a view says so."""
    layout: bool = False
    """The answer is the inputs' data rearranged (transpose, pad, permute, concatenate, roll, ...): host
    code that copies data (clone, contiguous, copy_, fill_) would produce it, so host copies count as
    computing here, not only PyTorch's arithmetic. Every imported problem is one: which of them only move
    data is not declared, and a ``ModelNew`` computes with its own kernels."""
    host_moves: int | None = None
    """For a task whose answer is data picked by indices (a gather, a scatter, a lookup): the most host copies
    and fills (``copy_``, ``clone``, ``fill_``, ...) one call may make, since copying or filling row by row at
    offsets read from the indices would produce the answer with no kernel. None: not limited."""
    model: ModelProblem | None = None
    """Set for imported problems whose candidate is a ``ModelNew`` class (see ``ModelProblem``)."""
    performance_note: str = ""
    """Why the reference solution stays below 0.8x of its best baseline on the H200, with the measured
    figure (scripts/triton_ref_sweep.py): shown by ``tasks show`` and in docs/suite.md, never to a model.
    Empty where the reference reaches it."""
    solution: str | None = None
    """Path of the reference solution, relative to ``tasks/solutions``: a module, or a folder holding one
    module and its attachments (``.ptx``, ``.cu``, ``.cuh``). Defaults to the folder ``<id>/`` where it
    exists, else ``<id>.py``."""
    extra_solutions: tuple[str, ...] = ()
    """Further reference solutions, paths relative to ``tasks/solutions`` as ``solution`` is, that solve the
    task another way (hand-written CUDA beside generated PTX); ``suite check`` checks each one too."""

    def __post_init__(self) -> None:
        category, _, name = self.id.partition("/")
        if not name or ("/" in name and self.model is None):
            raise ValueError(f"task id {self.id!r} must be 'category/name'")
        if self.language not in LANGUAGES:
            raise ValueError(f"task {self.id}: language {self.language!r} not in {LANGUAGES}")
        for name_ in self.shapes:
            if name_ not in SHAPE_SETS:
                raise ValueError(f"task {self.id}: unknown shape set {name_!r}; use {SHAPE_SETS}")
        for required in ("dev", "heldout", "bench"):
            if not self.shapes.get(required):
                raise ValueError(f"task {self.id}: shape set {required!r} is empty")
        if self.model is None and f"def {self.entrypoint}(" not in self.signature:
            raise ValueError(f"task {self.id}: signature does not define {self.entrypoint!r}")

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @property
    def solution_root(self) -> Path:
        """The reference solution as handed to the judge: its module file, or its folder."""
        if self.solution:
            return SOLUTIONS_DIR / self.solution
        folder = SOLUTIONS_DIR / self.id
        return folder if folder.is_dir() else SOLUTIONS_DIR / f"{self.id}.py"

    @property
    def solution_path(self) -> Path:
        """The reference solution's module file (inside its folder when it has attachments)."""
        root = self.solution_root
        if not root.is_dir():
            return root
        modules = sorted(root.glob("*.py"))
        return modules[0] if len(modules) == 1 else root / f"{self.name}.py"

    def solution_source(self) -> str:
        """The module's text alone; a solution with attachments needs ``solution_candidate``."""
        return self.solution_path.read_text()

    def solution_candidate(self, extra: str | None = None) -> Candidate:
        """The reference solution with its attachments, as the judge takes any candidate; ``extra`` names
        one of ``extra_solutions`` instead of the default one."""
        from warpgym.env.candidate import Candidate

        if extra is None:
            return Candidate.from_path(self.solution_root)
        if extra not in self.extra_solutions:
            known = ", ".join(self.extra_solutions) or "none"
            raise KeyError(f"task {self.id} has no extra reference solution {extra!r}; it has: {known}")
        return Candidate.from_path(SOLUTIONS_DIR / extra)

    def reference_of(self, case: Case) -> Callable[..., Any]:
        """The reference for one case: the task's function, or an imported problem's model built for it."""
        return self.model.reference_for(case) if self.model is not None else self.reference

    def tolerance(self, dtype: str) -> Tolerance:
        return self.tolerances.get(dtype) or DEFAULT_TOLERANCES[dtype]

    def cases(self, shape_set: str) -> list[dict[str, Any]]:
        if shape_set not in self.shapes:
            raise KeyError(f"task {self.id} has no shape set {shape_set!r}; it has {sorted(self.shapes)}")
        return [dict(c) for c in self.shapes[shape_set]]

    def statement(self) -> str:
        """The text a model sees: what to write, for which shapes, judged how."""
        if self.model is not None:
            return model_statement(self)
        dev = "\n".join(f"  - {case_label(c)}" for c in self.shapes["dev"])
        if self.check is not None:
            tol = "  - checked by properties (see the description), not against a fixed answer"
        else:
            tol = "\n".join(
                f"  - {d}: atol={t.atol:g}, rtol={t.rtol:g}, relative L2 <= {t.rel_l2:g}"
                for d in self.dtypes if (t := self.tolerance(d))
            )
        lang = {
            "triton": "Write the arithmetic in Triton kernels (@triton.jit) launched from the entrypoint.",
            "cuda": "Write the arithmetic in CUDA C++/PTX compiled and launched through warpgym.loader.",
        }[self.language]
        required = "".join(
            f"\nRequired instructions on {t}: {', '.join(f)}." for t, f in self.required_features.items()
        )
        return (
            f"Task {self.id}\n\n{self.description.strip()}\n\n"
            f"Entrypoint (define exactly this function in one Python module):\n    {self.signature}\n\n"
            f"{lang} Host code may allocate outputs (torch.empty, torch.empty_like), take views and "
            f"compute shapes, but must not call PyTorch compute ops.{required}\n\n"
            f"Example shapes (more, unseen sizes are used for scoring):\n{dev}\n\n"
            f"Tolerances per output dtype:\n{tol}\n"
            + (f"\nNotes: {self.notes.strip()}\n" if self.notes else "")
        )


def case_label(case: Case) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def numel(*shape: int) -> int:
    return math.prod(shape)


def elem_size(dtype: str) -> int:
    return dtype_of(dtype).itemsize


def sequence(value: Any) -> Sequence[Any]:
    """The outputs of a call as a tuple, whether it returned one tensor or several."""
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def model_statement(task: Task) -> str:
    """The statement of an imported model problem: its source, the class to write, the rules."""
    assert task.model is not None
    dev = "\n".join(f"  - {case_label(c) or 'the sizes in the source'}" for c in task.shapes["dev"])
    tol = "\n".join(f"  - {d}: atol={t.atol:g}, rtol={t.rtol:g}, relative L2 <= {t.rel_l2:g}"
                    for d in task.dtypes if (t := task.tolerance(d)))
    return (
        f"Task {task.id}\n\nThe problem (a PyTorch module):\n\n"
        f"```python\n{task.model.source.strip()}\n```\n\n"
        f"Write one Python module defining `class {task.model.class_name}(nn.Module)` with the same "
        f"constructor arguments as Model and forward({', '.join(task.model.params)}), computing what Model "
        "computes. Its parameters and buffers must have Model's names and shapes: Model's values are copied "
        "into it by name (load_state_dict) before it is called. Write the arithmetic in Triton kernels "
        "(@triton.jit) launched from forward. forward may allocate outputs, take views and read its "
        "parameters, but must not call PyTorch compute ops or copy tensor data on the host (clone, "
        "contiguous() of a view, copy_, .to()): a kernel moves the data too (unless the evaluation allows "
        "PyTorch calls, which its result says).\n\n"
        f"Example sizes (the module's size constants; more, unseen sizes are used for scoring):\n{dev}\n\n"
        f"Tolerances per output dtype:\n{tol}\n"
        + (f"\nNotes: {task.notes.strip()}\n" if task.notes else "")
    )
