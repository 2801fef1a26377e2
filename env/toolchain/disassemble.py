"""SASS from cubins (cuobjdump), the opcodes of each function, and their family counts."""

from __future__ import annotations

import re
import subprocess
import tempfile

from warpgym.env.toolchain.families import count_sass_opcodes
from warpgym.env.toolchain.tools import tool

_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?"
                        r"([A-Z][A-Z0-9_]*(?:\.[\w.]+)?)")
_SASS_FUNC = re.compile(r"Function\s*:\s*(\S+)")


def disassemble(cubin: bytes) -> str:
    """SASS of a cubin through cuobjdump (raises RuntimeError with the tool's message)."""
    cuobjdump = tool("cuobjdump")
    if cuobjdump is None:
        raise RuntimeError("cuobjdump not found (looked in Triton's wheel, CUDA_HOME and PATH)")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        proc = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


def sass_opcodes(sass: str) -> dict[str, list[str]]:
    """Opcodes of the instruction lines of a ``cuobjdump -sass`` listing, per function."""
    functions: dict[str, list[str]] = {}
    current = functions.setdefault("", [])
    for line in sass.splitlines():
        if m := _SASS_FUNC.search(line):
            current = functions.setdefault(m.group(1), [])
        elif m := _SASS_LINE.match(line):
            current.append(m.group(1))
    return {k: v for k, v in functions.items() if v}


def count_cubin(cubin: bytes) -> dict[str, dict[str, int]]:
    """Family counts per kernel function in a cubin."""
    return {fn: count_sass_opcodes(ops) for fn, ops in sass_opcodes(disassemble(cubin)).items()}
