"""warpgym: a gym for GPU-kernel-writing agents.

``warpgym.make(task_id, ...)`` returns a Gymnasium environment that judges candidate
kernels; ``warpgym.tasks`` holds the suites; ``warpgym.agents`` and
``warpgym.experiments`` drive models through the environment. Importing ``warpgym`` registers
every task with Gymnasium: ``gymnasium.make("warpgym/normalization-softmax-v0")`` (see
``warpgym.env.registration`` for the id form).
"""

from importlib.metadata import PackageNotFoundError, version

import warpgym.env  # noqa: F401 - registers the tasks with Gymnasium (ids only; see env/registration.py)

try:
    __version__ = version("warpgym")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"


def make(task_id: str, **kwargs):  # noqa: ANN201 - re-exported with its own annotations
    """Create the environment for ``task_id`` (see ``warpgym.env.make``)."""
    from warpgym.env import make as _make

    return _make(task_id, **kwargs)


__all__ = ["__version__", "make"]
