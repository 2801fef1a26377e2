"""The attachments of the candidate loaded in this process, readable by name.

The worker installs a candidate's attachments (file name -> text) before importing its module; the
module reads them with ``warpgym.loader.attachment(name)``, never by a path, so nothing about them
depends on where the worker's files lie.
"""

from __future__ import annotations

from collections.abc import Mapping

_ATTACHED: dict[str, str] = {}


def install(mapping: Mapping[str, str]) -> None:
    """Make ``mapping`` the attachments of the candidate about to be loaded (the last one's go)."""
    _ATTACHED.clear()
    _ATTACHED.update(mapping)


def attachment(name: str) -> str:
    """The text of the attachment ``name``."""
    try:
        return _ATTACHED[name]
    except KeyError:
        available = ", ".join(sorted(_ATTACHED)) or "none"
        raise FileNotFoundError(f"no attachment named {name!r} travelled with this candidate "
                                f"(attachments: {available})") from None
