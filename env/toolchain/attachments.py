"""The attachments of the candidate being judged, held in memory for the candidate to read by name.

The worker installs them (``install``) before it imports the candidate's module; the candidate reads
them with ``warpgym.loader.attachment("gemm.ptx")``. They are never written to the worker's disk, so
a name is only a key: it cannot reach a file of the judge, the tasks or the reference solutions, and
the same candidate reads the same text on every machine and in every process that judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_HELD: Mapping[str, str] = MappingProxyType({})


def install(mapping: Mapping[str, str]) -> None:
    """Replace the attachments held with ``mapping`` (file name -> text); an empty mapping clears them."""
    global _HELD
    held: dict[str, str] = {}
    for name, text in mapping.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise TypeError(f"attachments map file names to text, not {type(name).__name__} -> "
                            f"{type(text).__name__}")
        held[name] = text
    _HELD = MappingProxyType(held)


def clear() -> None:
    """Hold no attachments (the next candidate must not read the last one's)."""
    install({})


def names() -> list[str]:
    """The names of the attachments held, sorted."""
    return sorted(_HELD)


def attachment(name: str) -> str:
    """The text of the file ``name`` handed in beside the module (a bare file name such as ``"gemm.ptx"``);
    a name it does not carry raises ``FileNotFoundError`` listing the names it does."""
    try:
        return _HELD[name]
    except (KeyError, TypeError):
        held = ", ".join(repr(n) for n in names()) or "none"
        raise FileNotFoundError(f"no attachment named {name!r}; this candidate carries: {held}. "
                                "Attachments are named by their bare file name: loader.attachment('gemm.ptx')"
                                ) from None
