"""A report as one list of blocks (headings, paragraphs, tables, images), and the number formats.

The run report and the comparison both fill a ``Doc``; ``report_markdown`` and ``report_html`` render
the same blocks, so the Markdown and the HTML can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


# --------------------------------------------------------------------------- formatting
def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def times(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{digits}f}"


def usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:.4f}" if x < 1 else f"${x:,.2f}"


def count(x: int | None) -> str:
    return "-" if x is None else f"{x:,}"


# --------------------------------------------------------------------------- blocks
@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    align: str = ""
    """One letter per column, l or r (default: the first left, the rest right)."""

    def alignment(self) -> str:
        return self.align or ("l" + "r" * (len(self.headers) - 1))


@dataclass
class Doc:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def h(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", (level, text)))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, headers: list[str], rows: list[list[str]], align: str = "") -> None:
        self.blocks.append(("table", Table(headers, rows, align)))

    def img(self, path: str, alt: str) -> None:
        self.blocks.append(("img", (path, alt)))

    def html_only(self, markup: str, markdown_note: str = "") -> None:
        """Markup for the HTML page only (too bulky for Markdown); the note stands in for it there."""
        self.blocks.append(("html", (markup, markdown_note)))

    def list(self, items: list[str]) -> None:
        self.blocks.append(("list", items))
