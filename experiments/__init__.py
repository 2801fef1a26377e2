"""warpgym.experiments: experiment files, the resumable runner, metrics, reports and the CLI.

    from warpgym.experiments import load_config, run_experiment, write_report
    exp = load_config("experiments/configs/quickstart.toml")
    outcome = run_experiment(exp, run_dir=Path("runs/quickstart"))
    write_report(outcome.run_dir)

The command line (``warpgym run|report|compare|export``) is a thin layer over these.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "ConfigError": ("config", "ConfigError"),
    "Experiment": ("config", "Experiment"),
    "load_config": ("config", "load"),
    "run_experiment": ("runner", "run_experiment"),
    "RunError": ("rundir", "RunError"),
    "Outcome": ("runner", "Outcome"),
    "Store": ("store", "Store"),
    "compute_metrics": ("metrics", "compute"),
    "pass_at_k": ("metrics", "pass_at_k"),
    "fast_p": ("metrics", "fast_p"),
    "write_report": ("report", "write"),
    "compare_runs": ("compare", "compare"),
    "export_run": ("export", "export"),
}


def __getattr__(name: str) -> Any:
    # The runner, metrics and reports import torch, matplotlib and the agents, the config pydantic: load
    # them on first use, so the command line starts quickly.
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
