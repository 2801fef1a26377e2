#!/usr/bin/env python3
"""Stands in for ``ncu`` / ``compute-sanitizer`` in tests: writes a small report to the file named by
``--log-file`` (one kernel with one HGMMA row, and a clean memcheck summary), then execs the command that
follows it, as the real tools run their target. Standard library only."""

import os
import sys

REPORT = """==PROF== Profiling "fake_kernel": 0%....50%....100% - 1 pass
"Address","Source","inst_executed","thread_inst_executed_true"
"0x7f00","HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ","8","256"
========= ERROR SUMMARY: 0 errors
"""


REPRINTED = """"Kernel Name","fake_kernel",
"Address","Source","inst_executed","thread_inst_executed_true"
"0x7f00","HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ","8","256"
"Kernel Name","fake_kernel",
"Address","Source","inst_executed","thread_inst_executed_true"
"0x7f00","HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ","8","256"
"""
"""With FAKE_PROFILER_REPRINT set: the one launch printed twice in a row, as Nsight Compute's source page
printed some launches under kernel replay on an H100."""


def main() -> None:
    args = sys.argv[1:]
    at = args.index("--log-file")
    with open(args[at + 1], "w") as f:
        f.write(REPRINTED if os.environ.get("FAKE_PROFILER_REPRINT") else REPORT)
    command = args[at + 2:]
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
