"""Benchmarks of the harness itself (not of kernels): how fast and how faithfully it judges.

``eval_throughput`` is ``warpgym bench``: evaluations per minute, overhead, timing spread and
agreement with Nsight Compute, on a fixed mix of correct and plausible wrong candidates.
"""
