"""The run's model providers, built from the experiment's ``models`` before any work starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import config as config_mod
from .config import Experiment
from .rundir import RunError

if TYPE_CHECKING:
    from warpgym.agents import Provider


def response_cache_dir(exp: Experiment) -> Path | None:
    """The configured response cache, or None for the agents' shared one."""
    return Path(exp.run.cache_dir) if exp.run.cache_dir else None


def build_providers(exp: Experiment, cache_dir: Path | None) -> dict[str, Provider]:
    """One provider per model label; a missing API key fails here, naming the experiment file's line."""
    import warpgym.agents as agents

    providers = {}
    for i, model in enumerate(exp.models):
        try:
            providers[model.label] = agents.make_provider(
                model.spec, cache_dir=cache_dir, use_cache=exp.run.cache, prices=model.prices, **model.params
            )
        except agents.ProviderConfigError as exc:
            raise RunError(_model_where(exp, i) + f"model {model.label!r}: {exc}") from None
    return providers


def _model_where(exp: Experiment, index: int) -> str:
    if not exp.source_path or not Path(exp.source_path).is_file():
        return ""
    line = config_mod.locate(Path(exp.source_path).read_text(), ("models", index, "spec"))
    return f"{exp.source_path}, line {line}: " if line else f"{exp.source_path}: "
