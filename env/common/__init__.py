"""What both sides of the trust wall run: device resolution and the per-GPU locks and timing loop."""
