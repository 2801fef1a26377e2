"""What a dead worker's exit and output say about why it died, in a few lines a model can act on.

The worker enables Python's faulthandler, so a fatal signal leaves the Python stack it struck in at
the end of the worker's log; in the interpreter a Triton kernel runs as Python in the candidate's
module, so that stack names the kernel and its line, and the launch that called it.
"""

from __future__ import annotations

import re
import signal

from warpgym.env.judge.feedback import redact_paths

TAIL_LINES = 12
TAIL_LINE_CHARS = 240
SIGNAL_MEANING = {
    "SIGSEGV": "an access to memory outside any allocation",
    "SIGBUS": "an access to memory that is mapped but not usable",
    "SIGABRT": "the process aborted itself (abort(), or a failed check in native code)",
    "SIGFPE": "an arithmetic fault in native code (an integer division by zero)",
    "SIGILL": "an illegal instruction",
    "SIGKILL": "killed from outside (most often its memory limit)",
}
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')
_CANDIDATE = re.compile(r"(?:^|/)candidate(?:_\d+)?\.py$")
_INTERPRETER = "triton/runtime/interpreter.py"


def how(code: int | None) -> str:
    """``killed by signal 11 (SIGSEGV: ...)`` or ``exit N``."""
    if code is None or code >= 0:
        return f"exit {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    meaning = SIGNAL_MEANING.get(name)
    return f"killed by signal {-code} ({name}" + (f": {meaning})" if meaning else ")")


def where(log: str) -> str | None:
    """Where in the candidate the fatal signal struck, from faulthandler's stack (innermost first)."""
    frames = [m for m in map(_FRAME.match, log.splitlines()) if m]
    mine = [(i, f) for i, f in enumerate(frames) if _CANDIDATE.search(f["file"])]
    if not mine:
        return None
    i, inner = mine[0]
    in_kernel = i + 1 < len(frames) and frames[i + 1]["file"].endswith(_INTERPRETER)
    text = (f"in the Triton kernel {inner['name']} (candidate.py, line {inner['line']})" if in_kernel
            else f"in {inner['name']} (candidate.py, line {inner['line']})")
    callers = [f for _, f in mine[1:2]]
    if callers:
        text += f", launched from {callers[0]['name']} (line {callers[0]['line']})"
    return text


def tail(log: str) -> str:
    """The last lines the worker wrote before the crash, then faulthandler's report cut to what a model
    can act on: the error, the innermost frame (what native call failed) and the candidate's frames."""
    before, fatal, report = log.partition("Fatal Python error:")
    lines = [line for line in before.splitlines() if line.strip()][-TAIL_LINES:]
    if fatal:
        report_lines = (fatal + report).splitlines()
        frames = [line for line in report_lines if _FRAME.match(line)]
        kept = frames[:1] + [f for f in frames[1:] if _CANDIDATE.search(_FRAME.match(f)["file"])]
        lines += [report_lines[0].strip(), *kept]
    cut = [line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS] + " [...]" for line in lines]
    return redact_paths("\n".join(cut))


def describe(code: int | None, log: str) -> str:
    """The sentence a crashed run reports: how the worker died, where, and what it wrote last."""
    text = f"the worker process died ({how(code)})"
    place = where(log)
    if place:
        text += " " + place
    last = tail(log)
    return text + (f"; the last lines it wrote:\n{last}" if last else "; it wrote nothing before dying")
