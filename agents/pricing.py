"""What a call costs: USD per million tokens, by model name prefix, overridable by the user.

The defaults are list prices for standard (not batch, not priority) processing as published when
this table was written; providers change them, so a run that must report exact cost passes its own
table (``make_provider(..., prices={...})`` or ``WARPGYM_PRICES``, a JSON file). An unknown
model costs 0 and its completions say ``priced=False``, so a missing price never passes silently.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cached_input`` applies to prompt tokens served from the provider's
    own prompt cache; reasoning tokens are billed as output (they are part of output tokens)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        cached = min(max(cached_input_tokens, 0), input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        fresh = input_tokens - cached
        return (fresh * self.input + cached * cached_rate + output_tokens * self.output) / 1e6


DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o3": Price(2.00, 8.00, 0.50),
    "o1": Price(15.00, 60.00, 7.50),
    # Anthropic (cache reads at a tenth of the input price)
    "claude-opus-4-5": Price(5.00, 25.00, 0.50),
    "claude-opus-4-1": Price(15.00, 75.00, 1.50),
    "claude-opus-4": Price(15.00, 75.00, 1.50),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
}


def _as_price(value: Any) -> Price:
    if isinstance(value, Price):
        return value
    if isinstance(value, Mapping):
        return Price(float(value["input"]), float(value["output"]),
                     None if value.get("cached_input") is None else float(value["cached_input"]))
    if isinstance(value, list | tuple) and len(value) in (2, 3):
        return Price(*(float(v) for v in value))
    raise ValueError("a price is {'input': X, 'output': Y[, 'cached_input': Z]} per million tokens, "
                     f"not {value!r}")


_VERSION_SUFFIX = re.compile(r"^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class PriceTable:
    """A model is priced by its exact name or its name plus a date suffix: ``gpt-5-mini-2025-08-07`` as
    ``gpt-5-mini``. Anything else (``gpt-5.4``, ``claude-opus-4-6``) is unpriced rather than priced
    as a neighbour, since neighbours often cost something else."""

    def __init__(self, overrides: Mapping[str, Any] | None = None, *, defaults: bool = True) -> None:
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES) if defaults else {}
        env_file = os.environ.get("WARPGYM_PRICES")
        if env_file:
            self.update(json.loads(Path(env_file).read_text()))
        if overrides:
            self.update(overrides)

    def update(self, overrides: Mapping[str, Any]) -> None:
        for model, value in overrides.items():
            self.prices[model] = _as_price(value)

    def lookup(self, model: str) -> Price | None:
        for candidate in (model, model.split("/")[-1]):  # "openai/gpt-5" style names too
            if candidate in self.prices:
                return self.prices[candidate]
            for key, price in self.prices.items():
                if candidate.startswith(key) and _VERSION_SUFFIX.match(candidate[len(key):]):
                    return price
        return None

    def cost(self, model: str, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
             ) -> tuple[float, bool]:
        """(USD, whether the model had a price)."""
        price = self.lookup(model)
        if price is None:
            return 0.0, False
        return price.cost(input_tokens, output_tokens, cached_input_tokens), True
