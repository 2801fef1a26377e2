"""The hardware documents as addressable parts, and context levels built from them.

A document is split at its ``##`` and ``###`` headings into sections named ``<document>#<slug>``
(the slug is the heading up to its first colon, lower-cased, with runs of other characters turned into
``-``; the text above the first ``##`` is ``#intro``). A section contains its subsections. Each section
also has two halves, ``#<slug>-text`` (the prose) and ``#<slug>-examples`` (the fenced code blocks), so
an ablation can ask whether the explanations or the examples matter.

A level is an ordered list of parts: ``specs`` (the target's numbers and instruction families), a whole
document (``sm_90a``), a section or half of one, or ``file:PATH`` (a text or Markdown file of the
researcher's own). Rendering keeps the documents' order and each heading above what it holds, so
leaving a part out of a level removes exactly that part.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

SPECS_PART = "specs"
FILE_PREFIX = "file:"
HALVES = ("text", "examples")
_HEADING = re.compile(r"^(#{2,3})\s+(.*\S)\s*$")
_FENCE = re.compile(r"^```")


class UnknownPartError(ValueError):
    """A part of a context level that names no document, section or readable file."""


def slug(heading: str) -> str:
    head = heading.split(":", 1)[0]
    return re.sub(r"[^a-z0-9]+", "-", head.lower()).strip("-") or "section"


@dataclass(frozen=True)
class Piece:
    """A run of prose or one fenced code block inside a chunk (the text under one heading)."""

    kind: str  # "text" | "examples"
    text: str


@dataclass
class Chunk:
    """The lines under one heading up to the next heading of any level."""

    heading: str  # the heading line itself, "" for the intro
    names: tuple[str, ...]  # the sections that contain this chunk, outermost first
    pieces: list[Piece] = field(default_factory=list)


def _pieces(lines: list[str]) -> list[Piece]:
    pieces: list[Piece] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if "".join(prose).strip():
                pieces.append(Piece("text", "\n".join(prose).strip("\n")))
            prose = []
            pieces.append(Piece("examples", "\n".join(lines[i:j + 1])))
            i = j + 1
            continue
        prose.append(lines[i])
        i += 1
    if "".join(prose).strip():
        pieces.append(Piece("text", "\n".join(prose).strip("\n")))
    return pieces


@functools.lru_cache(maxsize=32)
def chunks(name: str, text: str) -> tuple[Chunk, ...]:
    """The document split at its ``##``/``###`` headings (headings inside code blocks are code); parsed
    once per text, since every part of a level and every render reads it."""
    out: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    heading, body, names = "", [], (f"{name}#intro",)
    in_code = False

    def close() -> None:
        out.append(Chunk(heading, names, _pieces(body)))

    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
        m = None if in_code else _HEADING.match(line)
        if not m:
            body.append(line)
            continue
        close()
        depth = len(m.group(1))
        stack = [(d, s) for d, s in stack if d < depth] + [(depth, slug(m.group(2)))]
        heading, body = line, []
        names = tuple(f"{name}#{s}" for _, s in stack)
    close()
    return tuple(out)


def section_names(name: str, text: str) -> list[str]:
    """Every addressable section of a document, in order, each followed by its two halves."""
    seen: list[str] = []
    for chunk in chunks(name, text):
        for section in chunk.names:
            if section not in seen:
                seen.append(section)
    return [n for s in seen for n in (s, *(f"{s}-{h}" for h in HALVES))]


Atom = tuple[str, int, int]
"""(document, chunk index, piece index): the unit a level includes or leaves out."""


@dataclass(frozen=True)
class Library:
    """The documents a level may name (the built-in ones, by default) and where user files are found."""

    documents: dict[str, str]
    base_dir: Path | None = None

    def _chunks(self, document: str) -> tuple[Chunk, ...]:
        return chunks(document, self.documents[document])

    def atoms(self, part: str) -> list[Atom]:
        """The atoms of one document part (a whole document, a section or one half of a section)."""
        document, _, section = part.partition("#")
        if document not in self.documents:
            known = ", ".join(sorted(self.documents))
            raise UnknownPartError(f"no document {document!r} (known: {known}, or specs, or file:PATH)")
        parts = self._chunks(document)
        if not section:
            return [(document, c, p) for c, chunk in enumerate(parts) for p in range(len(chunk.pieces))]
        half = next((h for h in HALVES if section.endswith(f"-{h}")), None)
        wanted = f"{document}#{section}"
        atoms = [(document, c, p) for c, chunk in enumerate(parts) if wanted in chunk.names
                 for p in range(len(chunk.pieces))]
        if not atoms and half:
            base = wanted[: -len(half) - 1]
            atoms = [(document, c, p) for c, chunk in enumerate(parts) if base in chunk.names
                     for p, piece in enumerate(chunk.pieces) if piece.kind == half]
            if atoms or any(base in chunk.names for chunk in parts):
                return atoms
        if not atoms:
            names = section_names(document, self.documents[document])
            import difflib

            near = difflib.get_close_matches(wanted, names, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"sections: {', '.join(names[::3])}"
            raise UnknownPartError(f"no section {wanted!r}; {hint}")
        return atoms

    def user_file(self, part: str) -> Path:
        path = Path(part[len(FILE_PREFIX):]).expanduser()
        if not path.is_absolute() and self.base_dir is not None:
            path = self.base_dir / path
        if not path.is_file():
            raise UnknownPartError(f"no file {path} (a path relative to the experiment file)")
        return path

    def check(self, part: str) -> None:
        """Raise ``UnknownPartError`` for a part that cannot be rendered."""
        if part == SPECS_PART:
            return
        if part.startswith(FILE_PREFIX):
            self.user_file(part)
            return
        self.atoms(part)

    def select(self, parts: list[str], without: tuple[str, ...] = ()) -> Selection:
        """What a level holds: ``parts``, less every part in ``without`` (a leave-one-out level)."""
        selection = Selection()
        for part in parts:
            self.check(part)
            if part == SPECS_PART or part.startswith(FILE_PREFIX):
                selection.order.append(part)
                continue
            document = part.partition("#")[0]
            selection.order.append(document)
            selection.atoms.update(self.atoms(part))
        for part in without:
            if part == SPECS_PART or part.startswith(FILE_PREFIX):
                if part not in selection.order:
                    raise UnknownPartError(f"{part!r} is not part of the base level")
                selection.order = [p for p in selection.order if p != part]
                continue
            gone = set(self.atoms(part))
            if not gone & selection.atoms:
                raise UnknownPartError(f"{part!r} is not part of the base level")
            selection.atoms -= gone
        selection.order = list(dict.fromkeys(selection.order))
        return selection

    def render(self, selection: Selection, specs: str) -> str:
        """The level's text: the spec table where ``specs`` is asked for, each document's included
        pieces in document order under their headings, the user's files, all in the order named."""
        blocks: list[str] = []
        for item in selection.order:
            if item == SPECS_PART:
                blocks.append(specs.strip())
            elif item.startswith(FILE_PREFIX):
                blocks.append(self.user_file(item).read_text().strip())
            else:
                lines: list[str] = []
                for c, chunk in enumerate(self._chunks(item)):
                    pieces = [p.text for i, p in enumerate(chunk.pieces) if (item, c, i) in selection.atoms]
                    if pieces:
                        lines += ([chunk.heading] if chunk.heading else []) + pieces
                blocks.append("\n\n".join(lines).strip())
        blocks = [b for b in blocks if b]
        return "\n\n".join(blocks) + ("\n" if blocks else "")


@dataclass
class Selection:
    """The parts of a level in the order they are shown, and the document atoms it includes."""

    order: list[str] = field(default_factory=list)
    atoms: set[Atom] = field(default_factory=set)
