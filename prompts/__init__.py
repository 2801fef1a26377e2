"""kernelgym.prompts."""
