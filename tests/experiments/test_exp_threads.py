"""Episodes run in threads; while they play, the runner makes ``ast.parse`` safe for that (CPython gh-106905).

Before Python 3.13, two threads converting parse trees at once can fail with "SystemError: AST
constructor recursion depth mismatch" (seen in a quick-start run: the agents' code extraction
failed). Finalizers that run Python code during the conversion make the race quick to hit.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

RACE = textwrap.dedent("""
    import ast, contextlib, sys, threading
    sys.setswitchinterval(1e-6)
    scope = contextlib.ExitStack()
    if sys.argv[1] == "serialised":
        from warpgym.experiments.parsing import serialised_parsing
        scope.enter_context(serialised_parsing())
    source = "def f(x):\\n    return [y * 2 for y in x if y]\\n" * 200

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            sum(range(200))

    errors, stop = [], threading.Event()

    def hammer():
        while not stop.is_set():
            for _ in range(200):
                Cycle()
            try:
                ast.parse(source)
            except SystemError as exc:
                errors.append(exc)
                stop.set()

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    stop.wait(float(sys.argv[2]))
    stop.set()
    for t in threads:
        t.join(5)
    scope.close()
    print("errors", len(errors))
""")


def _run(mode: str, seconds: float) -> str:
    return subprocess.run(
        [sys.executable, "-c", RACE, mode, str(seconds)], capture_output=True, text=True, timeout=120
    ).stdout


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the race was seen on CPython 3.11; later versions fix it"
)
def test_the_race_exists_without_the_lock() -> None:
    """The race is a matter of timing: it must show within three windows of ten seconds."""
    assert any("errors 0" not in _run("plain", 10) for _ in range(3))


def test_serialised_parsing_survives_the_race() -> None:
    assert "errors 0" in _run("serialised", 3)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="from 3.13 parsing is left as it is")
def test_the_original_parse_is_back_once_the_last_block_ends() -> None:
    from warpgym.experiments.parsing import serialised_parsing

    original = ast.parse
    with serialised_parsing():
        outer = ast.parse
        assert outer is not original
        with serialised_parsing():  # a second runner in the same process: one patch, kept
            assert ast.parse is outer
        assert ast.parse is outer
        assert isinstance(ast.parse("x = 1").body[0], ast.Assign)
    assert ast.parse is original
