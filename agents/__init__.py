"""kernelgym.agents."""
