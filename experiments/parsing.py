"""``ast.parse`` made safe for the runner's episode threads, for as long as they play.

Before Python 3.13, turning a parse tree into ``ast`` objects counts recursion in a counter shared
by all threads (CPython gh-106905): two threads parsing at once can fail with "SystemError: AST
constructor recursion depth mismatch". The runner plays episodes in threads, and in each the
agents parse (extracting the code from an answer) and the evaluator parses (its static checks).

The parsing happens in those layers, which know nothing of threads, so the runner serialises
``ast.parse`` while its threads run and puts the original back when they are done: nothing outside
a run sees the change. Parsing takes milliseconds; model calls and evaluations stay concurrent.
"""

from __future__ import annotations

import ast
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

_PARSE_LOCK = threading.RLock()
"""Held while one thread parses (re-entrant: a finalizer that runs during a parse may parse too)."""
_STATE_LOCK = threading.Lock()
_holders = 0
_original: Callable[..., Any] | None = None
_serialised: Callable[..., Any] | None = None


def _install() -> None:
    global _holders, _original, _serialised
    with _STATE_LOCK:
        _holders += 1
        if _holders > 1:
            return
        original = ast.parse

        def parse(*args: Any, **kwargs: Any) -> Any:
            with _PARSE_LOCK:
                return original(*args, **kwargs)

        parse.__doc__ = original.__doc__
        _original, _serialised = original, parse
        ast.parse = parse


def _uninstall() -> None:
    global _holders, _original, _serialised
    with _STATE_LOCK:
        _holders -= 1
        if _holders > 0:
            return
        if ast.parse is _serialised and _original is not None:  # leave a later patch by others alone
            ast.parse = _original
        _original = _serialised = None


@contextlib.contextmanager
def serialised_parsing() -> Iterator[None]:
    """Within this block (nested or from several runners at once), one thread parses at a time."""
    if sys.version_info >= (3, 13):
        yield
        return
    _install()
    try:
        yield
    finally:
        _uninstall()
