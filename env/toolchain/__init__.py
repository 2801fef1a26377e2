"""The CUDA toolchain, the bottom layer that tasks, prompts, the judge and the worker all use; it imports
nothing else of warpgym. ``targets`` is the one target table; ``tools`` finds ptxas, cuobjdump and
NVRTC; ``nvrtc`` and ``ptxas`` compile; ``ptx`` parses PTX and ptxas's report; ``families`` and
``disassemble`` count instructions; ``registry`` records what was built; ``runtime``, ``driver`` and
``tensormap`` launch; ``loader`` ties them into ``load_cuda``/``load_ptx``. Candidates reach it only
through the public ``warpgym.loader``."""
