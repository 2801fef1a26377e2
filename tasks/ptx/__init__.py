"""The architecture-specific suite (CUDA C++ / PTX for sm_90a and sm_100a)."""
