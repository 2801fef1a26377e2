"""Reading a model's answer: find the one candidate module in it and the files it carries, or say
why there is none.

Models wrap code in Markdown fences, sometimes several times (a draft, then a fix), sometimes
truncated by the token limit, sometimes not at all. The rule: take the complete Python block
that defines the entrypoint; if none does, the last complete Python block. Two different blocks
that both define the entrypoint are ambiguous, and a problem text goes back to the model rather
than a guess going to the judge.

Attachments: a block whose fence names a file with an attachment suffix (``.ptx``, ``.cu``,
``.cuh``) in its info string, as in ```` ```ptx gemm.ptx ```` or ```` ```cuda title=kernels.cuh ````,
is that file; the module reads it with ``loader.attachment("gemm.ptx")``. Naming the file in the
fence keeps it next to the text it names, so prose between blocks never changes what is judged.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from warpgym.env.candidate import ATTACHMENT_SUFFIXES, Candidate, CandidateError

PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "triton"})
_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_READS = re.compile(r"""\battachment\(\s*(?P<q>["'])(?P<name>[^"'\\]+)(?P=q)\s*\)""")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, body, whether its closing fence was seen, and the attachment
    file its fence names (if any)."""

    language: str
    code: str
    complete: bool
    start_line: int
    filename: str | None = None


@dataclass(frozen=True)
class Extraction:
    """The candidate module (``code``) and its ``attachments``, or ``problem``: a message written for the
    model."""

    code: str | None
    problem: str | None = None
    blocks: int = 0
    note: str | None = None
    """How the code was chosen when there was a choice (for the researcher, not the model)."""
    attachments: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.code is not None

    @property
    def candidate(self) -> Candidate | None:
        """What the judge takes: the module and its attachments."""
        return None if self.code is None else Candidate(self.code, self.attachments)


def attachment_name(info: str) -> str | None:
    """The attachment file a fence's info string names: the first word (or ``key=value``'s value) with an
    attachment suffix."""
    for word in info.split():
        word = word.split("=", 1)[-1].strip("\"'")
        if word.lower().endswith(ATTACHMENT_SUFFIXES):
            return word
    return None


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block in ``text``, in order; a block still open at the end is incomplete."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        language = m.group("info").strip().split()[0].lower() if m.group("info").strip() else ""
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                closed = True
                break
            body.append(lines[j])
            j += 1
        blocks.append(Block(language, "\n".join(body).strip("\n") + "\n", closed, i + 1,
                            attachment_name(m.group("info"))))
        i = j + 1
    return blocks


def defines(code: str, name: str) -> bool:
    """Whether ``code`` defines a top-level function ``name`` (parsed; a regex when it does not parse,
    so that a module with a syntax error still counts and the judge reports the error)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
               for node in tree.body)


def _normalised(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def extract_candidate(text: str, entrypoint: str) -> Extraction:
    """The candidate module in a model's answer and the files it carries, or the problem to tell the model."""
    blocks = fenced_blocks(text or "")
    files = [b for b in blocks if b.filename is not None]
    module = _extract_module([b for b in blocks if b.filename is None], len(blocks), text, entrypoint)
    if not module.ok:
        return module
    attachments, problem = _attachments(files)
    missing = sorted({m.group("name") for m in _READS.finditer(module.code or "")} - set(attachments))
    if problem is None and missing:
        problem = (f"Your module reads the attachment {missing[0]!r}, but no block of your answer is that "
                   f"file. Name each file in its fence, e.g. ```ptx {missing[0]}.")
    if problem is not None:
        return Extraction(None, problem, blocks=len(blocks))
    if not attachments:
        return module
    note = f"{len(attachments)} attachment(s): {', '.join(sorted(attachments))}"
    return Extraction(module.code, blocks=module.blocks, note="; ".join(filter(None, (module.note, note))),
                      attachments=attachments)


def _attachments(files: list[Block]) -> tuple[dict[str, str], str | None]:
    """The named blocks as attachments, or a problem: a file cut off, two versions of one file, a bad name."""
    out: dict[str, str] = {}
    for block in files:
        name = block.filename or ""
        if not block.complete:
            return {}, (f"Your answer was cut off inside the file {name} (the closing ``` is missing), "
                        "probably at the output-token limit. Reply with every file complete, shorter if need "
                        "be.")
        if name in out and _normalised(out[name]) != _normalised(block.code):
            return {}, (f"Your answer has two different blocks named {name}, so it is not clear which one to "
                        "judge. Give each file once.")
        out[name] = block.code
    try:
        Candidate("", out)
    except CandidateError as exc:
        return {}, f"The files in your answer cannot be judged: {exc}."
    return out, None


def _extract_module(blocks: list[Block], fenced: int, text: str, entrypoint: str) -> Extraction:
    """The module among the blocks that name no attachment (``fenced`` counts every block)."""
    python = [b for b in blocks if b.language in PYTHON_TAGS]
    complete = [b for b in python if b.complete]
    if not fenced:
        stripped = (text or "").strip()
        if stripped and defines(stripped, entrypoint):
            try:
                ast.parse(stripped)
            except SyntaxError:
                pass
            else:
                return Extraction(stripped + "\n", blocks=0, note="no fences: the whole answer is the module")
        return Extraction(None, (
            "Your answer contained no code. Reply with the complete Python module in one ```python fenced "
            f"block that defines `{entrypoint}`."), blocks=0)
    if not complete:
        if python:
            return Extraction(None, (
                "Your answer was cut off inside a code block (the closing ``` is missing), probably at the "
                "output-token limit. Reply with the complete module in one ```python block, shorter if need "
                "be."), blocks=fenced)
        langs = ", ".join(sorted({b.language or "untagged" for b in blocks})) or "only named files"
        return Extraction(None, (
            f"Your answer had code blocks ({langs}) but no Python block. The candidate is one Python module "
            f"in a ```python block that defines `{entrypoint}`; kernel sources go inside it as strings, or "
            "in their own blocks named in the fence (```ptx gemm.ptx) that it reads with "
            "loader.attachment(\"gemm.ptx\")."), blocks=fenced)
    defining = [b for b in complete if defines(b.code, entrypoint)]
    distinct = {_normalised(b.code) for b in defining}
    if len(distinct) > 1:
        return Extraction(None, (
            f"Your answer has {len(distinct)} different Python blocks that each define `{entrypoint}`, "
            "so it is not clear which one to judge. Reply with exactly one complete module in one "
            "```python block."),
            blocks=fenced)
    if defining:
        chosen = defining[-1]
        note = None if len(complete) == 1 else (
            f"took the block at line {chosen.start_line}, the one of {len(complete)} that defines "
            f"{entrypoint}")
        return Extraction(chosen.code, blocks=fenced, note=note)
    chosen = complete[-1]
    return Extraction(chosen.code, blocks=fenced,
                      note=f"no block defines {entrypoint}; took the last complete Python block")
