"""The loader's errors: each message is written for the candidate's author, who reads it as feedback."""

from __future__ import annotations


class LoaderError(RuntimeError):
    """Base of the loader's errors."""


class CompileError(LoaderError):
    """NVRTC or ptxas rejected the module. ``stage`` is ``nvrtc``, ``ptxas`` or ``driver``."""

    def __init__(self, stage: str, name: str, target: str, log: str) -> None:
        self.stage, self.name, self.target, self.log = stage, name, target, log
        super().__init__(f"{stage} failed to compile module {name!r} for {target}:\n{trim(log, 6000)}")


class LaunchError(LoaderError):
    """A launch that cannot work (arguments, block, shared memory, cluster), or one the driver refused."""


class NoDeviceError(LoaderError):
    """The module compiled, but there is no CUDA GPU here to run it on."""


def trim(text: str, limit: int) -> str:
    """The start and end of a long compiler log: the first error and the summary are what matter."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2 :]
