"""The harness side of the trust wall: everything here runs in the judge's process, never beside
candidate code. It plans an evaluation, starts and talks to workers, computes references and compares
outputs with them, counts instructions, runs the profilers, times baselines and writes the verdict."""
