"""The CUDA toolchain, the bottom layer that tasks, prompts, the judge and the worker all use: the
target table, NVRTC and ptxas, PTX parsing, TMA tensor maps and the module loader. Candidates reach
it only through the public ``warpgym.loader``."""
