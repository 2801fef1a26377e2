"""warpgym.agents: LLM providers and the LangGraph loops that drive the environment.

Importing this package is cheap: the SDKs (openai, anthropic) and langgraph load only when a
provider is built or a loop is run. The contract the experiment runner codes against is in
``warpgym.agents.api``.
"""

from __future__ import annotations

from typing import Any

from .api import (
    CACHE_MODES,
    CONTEXT_LEVELS,
    HISTORY_MODES,
    LOOPS,
    ORIGINS,
    PHASES,
    Completion,
    EpisodeResult,
    EpisodeSettings,
    Provider,
    ProviderConfigError,
    ProviderError,
    TurnRecord,
    arun_episode,
    make_provider,
    run_episode,
)


def __getattr__(name: str) -> Any:
    if name in ("extract_candidate", "Extraction"):
        from . import extract

        return getattr(extract, name)
    raise AttributeError(f"module 'warpgym.agents' has no attribute {name!r}")


__all__ = [
    "CACHE_MODES", "CONTEXT_LEVELS", "HISTORY_MODES", "LOOPS", "ORIGINS", "PHASES", "Completion",
    "EpisodeResult", "EpisodeSettings",
    "Extraction", "Provider", "ProviderConfigError", "ProviderError", "TurnRecord", "arun_episode",
    "extract_candidate", "make_provider", "run_episode",
]
