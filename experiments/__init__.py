"""kernelgym.experiments."""
