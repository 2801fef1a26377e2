"""kernelgym: a gym for GPU-kernel-writing agents.

``kernelgym.make(task_id, ...)`` returns a Gymnasium environment that judges candidate
kernels; ``kernelgym.tasks`` holds the suites; ``kernelgym.agents`` and
``kernelgym.experiments`` drive models through the environment.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kernelgym")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"


def make(task_id: str, **kwargs):  # noqa: ANN201 - re-exported with its own annotations
    """Create the environment for ``task_id`` (see ``kernelgym.env.make``)."""
    from kernelgym.env import make as _make

    return _make(task_id, **kwargs)


__all__ = ["__version__", "make"]
