"""``warpgym --help`` loads no heavy library: commands import what they need when they run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "triton", "langgraph", "matplotlib", "pydantic", "trl", "transformers", "warpgym.tasks")

PROBE = """
import json, sys
from warpgym.experiments.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["eval", "--help"], ["fixit", "train", "--help"]])
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage: warpgym" in proc.stdout
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
