"""A candidate: one Python module's source, and the source files it carries beside it.

Attachments (``.ptx``, ``.cu``, ``.cuh``) travel with the module into the worker, where the
candidate reads them by name through ``warpgym.loader.attachment(name)``. They are text, named
by a bare file name, and bounded in number and size, so nothing about them can point the
worker (or the judge) at a path of its choosing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

ATTACHMENT_SUFFIXES = (".ptx", ".cu", ".cuh")
ATTACHMENT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
MAX_ATTACHMENTS = 16
MAX_ATTACHMENT_BYTES = 4 << 20  # all attachments together; generated PTX of a fused kernel runs to ~1 MB


class CandidateError(ValueError):
    """A candidate that cannot be judged as given (a bad attachment name, too large, not text)."""


def _check_attachments(attachments: Mapping[str, str]) -> None:
    if len(attachments) > MAX_ATTACHMENTS:
        raise CandidateError(f"{len(attachments)} attachments: at most {MAX_ATTACHMENTS} may travel with a "
                             "candidate")
    total = 0
    for name, text in attachments.items():
        if not isinstance(name, str) or not ATTACHMENT_NAME.match(name) or ".." in name:
            raise CandidateError(f"attachment name {name!r}: a bare file name (letters, digits, '_', '-', "
                                 f"'.') ending in one of {', '.join(ATTACHMENT_SUFFIXES)}")
        if not name.endswith(ATTACHMENT_SUFFIXES):
            raise CandidateError(f"attachment {name!r}: only {', '.join(ATTACHMENT_SUFFIXES)} files may "
                                 "travel with a candidate")
        if not isinstance(text, str):
            raise CandidateError(f"attachment {name!r} is not text")
        if "\x00" in text:
            raise CandidateError(f"attachment {name!r} contains NUL bytes: attachments are source text")
        total += len(text.encode("utf-8", "surrogatepass"))
    if total > MAX_ATTACHMENT_BYTES:
        raise CandidateError(f"attachments total {total} bytes: at most {MAX_ATTACHMENT_BYTES} may travel "
                             "with a candidate")


@dataclass(frozen=True)
class Candidate:
    """The module's source and its attachments (file name -> text)."""

    source: str
    attachments: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.source, str):
            raise CandidateError(f"a candidate's source is text, not {type(self.source).__name__}")
        _check_attachments(self.attachments)
        object.__setattr__(self, "attachments", MappingProxyType(dict(sorted(self.attachments.items()))))

    @classmethod
    def of(cls, value: Candidate | str) -> Candidate:
        """A candidate from itself or from a module's source alone."""
        return value if isinstance(value, Candidate) else cls(value)

    @classmethod
    def from_path(cls, path: str | Path, attach: list[str | Path] | tuple[str | Path, ...] = ()) -> Candidate:
        """A module file with attachment files beside it, or a folder holding exactly one ``.py`` file and
        its attachments."""
        path = Path(path)
        files = [Path(a) for a in attach]
        if path.is_dir():
            modules = sorted(p for p in path.iterdir() if p.suffix == ".py" and p.is_file())
            if len(modules) != 1:
                raise CandidateError(f"{path}: a candidate folder holds exactly one .py module (found "
                                     f"{len(modules)})")
            files += sorted(p for p in path.iterdir() if p.suffix in ATTACHMENT_SUFFIXES and p.is_file())
            path = modules[0]
        attachments: dict[str, str] = {}
        for file in files:
            if file.name in attachments:
                raise CandidateError(f"two attachments named {file.name!r}")
            try:
                attachments[file.name] = file.read_text()
            except UnicodeDecodeError as exc:
                raise CandidateError(f"attachment {file}: not UTF-8 text ({exc.reason})") from None
        return cls(path.read_text(errors="surrogateescape"), attachments)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "attachments": dict(self.attachments)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(data["source"], dict(data.get("attachments") or {}))
