"""The run's model providers, built from the experiment's ``models`` before any work starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import config as config_mod
from .config import Experiment, ModelEntry
from .rundir import RunError

if TYPE_CHECKING:
    from warpgym.agents import Provider


def response_cache_dir(exp: Experiment) -> Path | None:
    """The configured response cache, or None for the agents' shared one."""
    return Path(exp.run.cache_dir) if exp.run.cache_dir else None


def sampled(exp: Experiment, model: ModelEntry) -> bool:
    """Whether this model's answers are draws from a distribution: several samples per grid point, or a
    temperature other than 0 (unset is the API's default, which samples)."""
    return exp.samples > 1 or model.params.get("temperature") != 0


def cache_mode(exp: Experiment, model: ModelEntry) -> str:
    """The provider's cache mode for ``run.cache``: ``auto`` reads only answers that were not sampled,
    so a rerun of a sampled experiment measures its variance instead of repeating it."""
    mode = exp.run.cache
    if mode == "auto":
        return "write-only" if sampled(exp, model) else "read-write"
    return mode


def build_providers(exp: Experiment, cache_dir: Path | None) -> dict[str, Provider]:
    """One provider per model label; a missing API key fails here, naming the experiment file's line."""
    import warpgym.agents as agents

    providers = {}
    for i, model in enumerate(exp.models):
        try:
            providers[model.label] = agents.make_provider(
                model.spec, cache_dir=cache_dir, cache_mode=cache_mode(exp, model), prices=model.prices,
                **model.params
            )
        except agents.ProviderConfigError as exc:
            raise RunError(_model_where(exp, i) + f"model {model.label!r}: {exc}") from None
    return providers


def _model_where(exp: Experiment, index: int) -> str:
    if not exp.source_path or not Path(exp.source_path).is_file():
        return ""
    line = config_mod.locate(Path(exp.source_path).read_text(), ("models", index, "spec"))
    return f"{exp.source_path}, line {line}: " if line else f"{exp.source_path}: "
