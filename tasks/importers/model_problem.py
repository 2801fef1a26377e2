"""One problem file that defines a PyTorch module, its inputs and its constructor arguments, as a Task.

Shared by every importer whose problems have that shape (KernelBench's ``Model`` / ``get_inputs`` /
``get_init_inputs``). The file runs in the judge's process only: it is the user's own trusted data, and the
worker, which never sees it, receives the inputs and the model's parameters as tensors.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import copy
import inspect
import itertools
import os
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..sampling import Sampler
from ..spec import ModelProblem, Task, Tolerance, sequence
from . import scaling

MODEL_SEED = 0
"""The seed the reference model's parameters are drawn with outside an evaluation (``tasks show``, the
audits); an evaluation draws them under a seed of its own (``parameters_drawn_with``)."""
_PARAMETERS_SEED: contextvars.ContextVar[int] = contextvars.ContextVar("warpgym_parameters_seed",
                                                                        default=MODEL_SEED)


@contextlib.contextmanager
def parameters_drawn_with(seed: int) -> Iterator[None]:
    """Within, every reference model is built with its parameters drawn under ``seed`` (then copied into the
    candidate's): an evaluation's own, derived from its secret root, so that no candidate's constructor can
    rebuild them (from a generator of its own, or by reseeding and restoring PyTorch's)."""
    token = _PARAMETERS_SEED.set(seed)
    try:
        yield
    finally:
        _PARAMETERS_SEED.reset(token)

TOLERANCES = {
    "float32": Tolerance(
        1e-4,
        1e-3,
        1e-4,
        "a whole module in fp32 against float64: reductions over "
        "thousands of terms and chained layers, each a few fp32 roundings (tf32 is not fp32)",
    ),
    "float16": Tolerance(2e-3, 1e-2, 3e-3, "fp32 accumulation; fp16 roundings of intermediates (4.9e-4)"),
    "bfloat16": Tolerance(
        1.6e-2, 3e-2, 1.5e-2, "fp32 accumulation; bf16 roundings of intermediates (3.9e-3)"
    ),
}


_FILES: set[str] = set()
"""Every problem file read in this process (resolved paths): the judge's workers may never read them."""


def problem_files() -> list[str]:
    """The problem files read so far, for the workers' sandbox (``env/judge/sandbox.py``)."""
    return sorted(_FILES)


class ProblemError(Exception):
    """A problem file that cannot be imported: the message names the file and what failed."""


@dataclass(frozen=True)
class Names:
    """What a format calls the module class and its two builders."""

    model: str = "Model"
    inputs: str = "get_inputs"
    init_inputs: str = "get_init_inputs"
    candidate: str = "ModelNew"


def _key(case: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in case.items()))


MAX_BUILT = 6
"""Reference models with real parameters (and their copies on a device or in float64) kept across every
problem, most recently used first: a level-3 model at its own sizes holds hundreds of megabytes, so a
suite's worth is never held at once. A model dropped is built again, with the same values."""
_BUILT: OrderedDict[tuple[Any, ...], torch.nn.Module] = OrderedDict()
_BUILT_LOCK = threading.Lock()
_IDS = itertools.count()


def _kept(key: tuple[Any, ...], build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    with _BUILT_LOCK:
        if key in _BUILT:
            _BUILT.move_to_end(key)
            return _BUILT[key]
    model = build()
    with _BUILT_LOCK:
        _BUILT[key] = model
        while len(_BUILT) > MAX_BUILT:
            _BUILT.popitem(last=False)
    return model


class Problem:
    """The problem file, run once per set of sizes; every builder is cached per case."""

    def __init__(self, path: Path, names: Names = Names()) -> None:
        self.path, self.names = path, names
        try:
            _FILES.add(os.path.realpath(path))
            self.source = path.read_text()
            self.tree = ast.parse(self.source, filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
            raise ProblemError(f"{path}: cannot be read as Python: {exc}") from None
        self.constants = scaling.size_constants(self.tree)
        self._modules: dict[tuple[Any, ...], types.ModuleType] = {}
        self._meta: dict[tuple[Any, ...], torch.nn.Module] = {}
        """Models on the meta device (no storage: kept), for shapes, dtypes and counts."""
        self._id = next(_IDS)
        self._lock = threading.RLock()
        self.narrowed = False
        """Whether a float64 reference failed (a forward that makes float32 tensors of its own) and ran in
        the problem's dtypes instead."""
        module = self.module({})
        for name in (names.model, names.inputs, names.init_inputs):
            if not hasattr(module, name):
                raise ProblemError(
                    f"{path}: defines no {name}; a problem file defines class {names.model}, "
                    f"{names.inputs}() and {names.init_inputs}()"
                )
        forward = getattr(module, names.model).forward
        params = [p for p in inspect.signature(forward).parameters.values() if p.name != "self"]
        self.params = tuple(
            p.name if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else f"arg{i}"
            for i, p in enumerate(params)
        )

    # ------------------------------------------------------------------ the file at given sizes
    def module(self, case: dict[str, Any]) -> types.ModuleType:
        key = _key(case)
        with self._lock:
            if key in self._modules:
                return self._modules[key]
            tree = scaling.with_constants(self.tree, case) if case else self.tree
            module = types.ModuleType(f"warpgym_problem_{self.path.stem}")
            module.__file__ = str(self.path)
            try:
                exec(compile(tree, str(self.path), "exec"), module.__dict__)  # noqa: S102 - the user's file
            except Exception as exc:  # noqa: BLE001 - any failure of the user's file is reported as such
                raise ProblemError(f"{self.path}: importing it failed: {type(exc).__name__}: {exc}") from None
            self._modules[key] = module
            return module

    def init_inputs(self, case: dict[str, Any]) -> list[Any]:
        return list(getattr(self.module(case), self.names.init_inputs)())

    def model(self, case: dict[str, Any]) -> torch.nn.Module:
        """The reference model for a case: built on the CPU under the parameters' seed, in its own dtypes, and
        left in training mode as KernelBench runs it (batch norms use the batch's statistics)."""
        seed = _PARAMETERS_SEED.get()

        def build() -> torch.nn.Module:
            cls = getattr(self.module(case), self.names.model)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                return cls(*self.init_inputs(case))

        with self._lock:
            return _kept((self._id, seed, *_key(case)), build)

    def state(self, case: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model(case).state_dict().items()}

    def variant(
        self, case: dict[str, Any], device: torch.device, dtype: torch.dtype | None
    ) -> torch.nn.Module:
        """The reference model on ``device`` with its floating parameters in ``dtype`` (None: as built)."""
        if device.type == "meta":
            return self._on_meta(case)

        def build() -> torch.nn.Module:
            model = copy.deepcopy(self.model(case))
            return model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)

        with self._lock:
            return _kept((self._id, _PARAMETERS_SEED.get(), *_key(case), str(device), str(dtype)), build)

    def _on_meta(self, case: dict[str, Any]) -> torch.nn.Module:
        """The model built on the meta device (no parameter is drawn); a constructor that needs real values
        (``.item()`` of a schedule) is built on the CPU, not kept, and moved."""
        key = _key(case)
        with self._lock:
            if key not in self._meta:
                cls = getattr(self.module(case), self.names.model)
                try:
                    with torch.device("meta"):
                        model = cls(*self.init_inputs(case))
                except Exception:  # noqa: BLE001 - data-dependent construction
                    with torch.random.fork_rng(devices=[]):
                        torch.manual_seed(MODEL_SEED)
                        model = cls(*self.init_inputs(case)).to("meta")
                self._meta[key] = model
            return self._meta[key]

    def reference_for(self, case: dict[str, Any]) -> Callable[..., Any]:
        def reference(**inputs: Any) -> Any:
            tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
            device = tensors[0].device if tensors else torch.device("cpu")
            floating = [t.dtype for t in tensors if t.is_floating_point()]
            wide = bool(floating) and floating[0] == torch.float64
            args = [inputs[p] for p in self.params if p in inputs]
            with torch.no_grad():
                try:
                    return self.variant(case, device, torch.float64 if wide else None)(*args)
                except RuntimeError:
                    if not wide:
                        raise
                # float64 parameters meet float32 tensors the forward makes itself: the problem's dtypes
                self.narrowed = True
                narrow = [
                    a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
                ]
                out = self.variant(case, device, None)(*narrow)
                return type(out)(o.double() for o in out) if isinstance(out, tuple | list) else out.double()

        return reference

    def make_inputs(self, case: dict[str, Any], sampler: Sampler) -> dict[str, Any]:
        """The problem's own ``get_inputs()`` at the case's sizes, seeded by the sampler's seed, on its device
        (on ``meta`` nothing is drawn)."""
        build = getattr(self.module(case), self.names.inputs)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(sampler.seed)
            with torch.device(sampler.device):
                values = list(build())
        values = [v.to(sampler.device) if isinstance(v, torch.Tensor) else v for v in values]
        return dict(zip(self.params, values, strict=False))

    # ------------------------------------------------------------------ counts, on meta tensors
    def elements(self, case: dict[str, Any]) -> int | None:
        """Elements of the inputs, outputs and parameters at a case's sizes; None when it fails there."""
        try:
            inputs = self.make_inputs(case, Sampler(0, "problem", "meta"))
            model = self._on_meta(case)
            with torch.device("meta"):
                outputs = sequence(model(*inputs.values()))
        except Exception:  # noqa: BLE001 - a shift at which the file fails is skipped
            return None
        tensors = [*inputs.values(), *outputs, *model.state_dict().values()]
        return sum(t.numel() for t in tensors if isinstance(t, torch.Tensor))

    def counts(self, case: dict[str, Any]) -> tuple[int, int]:
        """(FLOPs by torch.utils.flop_counter, bytes of inputs, outputs and parameters) at a case's sizes."""
        from torch.utils.flop_counter import FlopCounterMode

        inputs = self.make_inputs(case, Sampler(0, "problem", "meta"))
        model = self.variant(case, torch.device("meta"), None)
        counter = FlopCounterMode(display=False)
        try:
            with counter, torch.no_grad():
                outputs = sequence(model(*inputs.values()))
        except Exception:  # noqa: BLE001 - no meta kernel for an op: count on the CPU (dev sizes only)
            return 0, 0
        tensors = [*inputs.values(), *outputs, *model.state_dict().values()]
        return counter.get_total_flops(), sum(
            t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor)
        )


def build_task(task_id: str, path: Path, fmt: str, names: Names = Names(), description: str = "") -> Task:
    """The Task of one problem file (ProblemError when it cannot be imported)."""
    problem = Problem(path, names)
    own = dict(problem.constants)
    if problem.elements(own) is None and problem.constants:
        raise ProblemError(
            f"{path}: it fails at its own sizes (building {names.model} or calling it on "
            f"{names.inputs}() on meta tensors)"
        )
    dev, heldout, how = scaling.choose(problem.constants, problem.elements)
    dev, heldout = dev if dev is not None else own, heldout if heldout is not None else own
    try:
        meta = problem.make_inputs(dev, Sampler(0, "problem", "meta"))
        outputs = sequence(problem.reference_for(dev)(**meta))
    except Exception as exc:  # noqa: BLE001
        raise ProblemError(
            f"{path}: calling {names.model} on {names.inputs}() failed: {type(exc).__name__}: {exc}"
        ) from None
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in outputs if isinstance(t, torch.Tensor)})
    counts: dict[tuple[Any, ...], tuple[int, int]] = {}

    def count(case: dict[str, Any]) -> tuple[int, int]:
        key = _key(case)
        if key not in counts:
            counts[key] = problem.counts(case)
        return counts[key]

    return Task(
        id=task_id,
        entrypoint=names.candidate,
        signature=f"class {names.candidate}(nn.Module): forward(self, {', '.join(problem.params)})",
        description=description or f"{fmt} problem {path.name}",
        reference=problem.reference_for(own),
        make_inputs=problem.make_inputs,
        shapes={"dev": [dev], "heldout": [heldout], "bench": [own]},
        dtypes=tuple(dtypes) or ("float32",),
        flops=lambda c: count(c)[0],
        bytes=lambda c: count(c)[1],
        suite=fmt,
        language="triton",
        tolerances=dict(TOLERANCES),
        distributions=("problem",),
        seeds=(0, 1, 2),
        baselines=("eager", "torch.compile"),
        # whether a problem only moves data (a transpose, a repeat) is not declared: in strict mode forward's
        # host copies count as computing on every imported problem, as on a built-in layout task
        layout=True,
        model=ModelProblem(
            format=fmt,
            path=str(path),
            source=problem.source,
            params=problem.params,
            init_inputs=problem.init_inputs,
            state=problem.state,
            reference_for=problem.reference_for,
            class_name=names.candidate,
            elements=problem.elements,
            sizes_note=how,  # it names the held-out sizes: for `tasks show`, never for the statement
        ),
    )
