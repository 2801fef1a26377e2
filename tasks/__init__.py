"""Task specs, suites and reference solutions."""

from .registry import UnknownTaskError, all_tasks, get_task, register, select
from .sampling import DISTRIBUTIONS, Sampler
from .spec import CATEGORIES, DEFAULT_TOLERANCES, SHAPE_SETS, Case, Inputs, Task, Tolerance, case_label

__all__ = [
    "CATEGORIES", "DEFAULT_TOLERANCES", "DISTRIBUTIONS", "SHAPE_SETS", "Case", "Inputs", "Sampler", "Task",
    "Tolerance", "UnknownTaskError", "all_tasks", "case_label", "get_task", "register", "select",
]
