"""How the viewer writes numbers and tables: a value that is missing or not a number shows as a dash.

Stored turns gain fields over time and runs from older versions lack them, so every read goes through
these helpers instead of indexing.
"""

from __future__ import annotations

import json
import math
from typing import Any

DASH = "—"
MAX_TEXT = 100_000
"""Characters of one text (an answer, a message, feedback) put in the page; the rest is cut, with a note."""


def number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def count(x: Any) -> str:
    v = number(x)
    return DASH if v is None else f"{int(v):,}"


def usd(x: Any) -> str:
    v = number(x)
    if v is None:
        return DASH
    return f"${v:.4f}" if 0 < abs(v) < 0.01 else f"${v:.2f}"


def seconds(x: Any) -> str:
    v = number(x)
    return DASH if v is None else f"{v:.2f} s"


def ms(x: Any) -> str:
    v = number(x)
    return DASH if v is None else f"{v:.4g} ms"


def pct(x: Any) -> str:
    v = number(x)
    return DASH if v is None else f"{100 * v:.0f}%"


def times(x: Any) -> str:
    v = number(x)
    return DASH if v is None else f"{v:.2f}x"


def general(x: Any) -> str:
    """Any stored value as short text: numbers compactly, flags as yes/no, structures as JSON."""
    if x is None or x == "":
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.4g}" if math.isfinite(x) else DASH
    if isinstance(x, str):
        return x
    return json.dumps(x, sort_keys=True, default=str)


def flag(x: Any) -> str:
    return DASH if x is None else ("yes" if x else "no")


def case(c: Any) -> str:
    """A case's shape parameters as ``n=1000, d=64``."""
    if isinstance(c, dict):
        return ", ".join(f"{k}={v if isinstance(v, int) else general(v)}" for k, v in c.items()) or DASH
    return general(c)


def text(x: Any) -> dict[str, Any]:
    """A text for the page, cut at ``MAX_TEXT`` characters (the cut is said, never silent)."""
    s = x if isinstance(x, str) else ("" if x is None else json.dumps(x, indent=1, default=str))
    if len(s) <= MAX_TEXT:
        return {"text": s, "cut": 0}
    return {"text": s[:MAX_TEXT], "cut": len(s) - MAX_TEXT}


def table(title: str, headers: list[str], rows: list[list[str]], note: str = "") -> dict[str, Any]:
    return {"title": title, "headers": headers, "rows": rows, "note": note}


def pairs(title: str, items: list[tuple[str, str]], note: str = "") -> dict[str, Any]:
    """A two-column table of names and values."""
    return table(title, ["", ""], [[k, v] for k, v in items], note)
