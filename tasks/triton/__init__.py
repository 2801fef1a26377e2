"""The general Triton suite: one module per category, each registering its tasks."""
