"""``fixit train``: supervised fine-tuning of a local model on a Fixit data set, with a LoRA adapter.

TRL's ``SFTTrainer`` on the conversational prompt-completion rows (``hf/*.jsonl``): the prompt is
rendered with the model's own chat template and the loss falls on the completion only (the
explanation and the fixed kernel). PEFT adds a LoRA adapter (every linear layer by default), so the
result is small and is served next to the base model (vLLM ``--lora-modules``) or merged into it
(``--merge``).

The heavy libraries (trl, peft, transformers, datasets) are the optional extra ``fixit`` and are
imported only here, on first use, with a clear error when missing.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .build import FixitError
from .lengths import chat_lengths, fit_to_length

EXTRA_MODULES = ("trl", "peft", "transformers", "datasets", "accelerate")

FALLBACK_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML, for a base model whose tokenizer has no chat template of its own."""


def require_extra() -> None:
    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise FixitError(
            f'`warpgym fixit train` needs {", ".join(missing)}: pip install "warpgym[fixit]"'
        )


@dataclass
class TrainOptions:
    out: Path | None = None
    """Where the adapter goes (default: DATA/adapter for a build directory)."""
    epochs: float = 3.0
    max_steps: int = -1
    """Stop after this many optimiser steps (overrides ``epochs`` when positive)."""
    learning_rate: float = 2e-4
    batch_size: int = 1
    grad_accum: int = 8
    max_length: int = 8192
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: list[str] | str = "all-linear"
    seed: int = 0
    merge: bool = False
    """Also write the base model with the adapter merged in (OUT/merged), for servers without LoRA."""
    gradient_checkpointing: bool = False
    chat_template: str | None = None
    """A Jinja chat template to use instead of the tokenizer's (path or text)."""
    logging_steps: int = 1
    extra: dict[str, Any] = field(default_factory=dict)
    """More ``SFTConfig`` fields, as given."""


@dataclass
class TrainResult:
    out: Path
    steps: int
    losses: list[float]
    eval_loss: float | None
    seconds: float
    train_examples: int
    validation_examples: int
    notes: list[str]

    @property
    def first_loss(self) -> float | None:
        return self.losses[0] if self.losses else None

    @property
    def last_loss(self) -> float | None:
        return self.losses[-1] if self.losses else None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """JSONL rows as prompt/completion: ``hf`` rows as they are, ``openai`` rows split at the last message."""
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise FixitError(f"{path}:{n}: not JSON ({exc})") from None
        if "prompt" in row and "completion" in row:
            rows.append({"prompt": row["prompt"], "completion": row["completion"]})
        elif "messages" in row and row["messages"] and row["messages"][-1].get("role") == "assistant":
            rows.append({"prompt": row["messages"][:-1], "completion": row["messages"][-1:]})
        else:
            raise FixitError(
                f"{path}:{n}: a row needs prompt and completion, or messages ending with the answer"
            )
    return rows


def data_files(data: Path) -> tuple[Path, Path | None]:
    """(train, validation) files of a build directory, or a single JSONL file (no validation)."""
    if data.is_dir():
        for layout in ("hf", "openai"):
            train = data / layout / "train.jsonl"
            if train.is_file():
                val = data / layout / "validation.jsonl"
                return train, val if val.is_file() else None
        raise FixitError(
            f"{data} holds no hf/train.jsonl or openai/train.jsonl (is it a `fixit build` output?)"
        )
    if data.is_file():
        return data, None
    raise FixitError(f"no such data: {data}")


def _chat_template(tokenizer: Any, option: str | None, notes: list[str]) -> None:
    if option:
        path = Path(option)
        tokenizer.chat_template = path.read_text() if path.is_file() else option
        notes.append("chat template: given with --chat-template")
    elif not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = FALLBACK_CHAT_TEMPLATE
        notes.append(
            "the tokenizer has no chat template; trained with ChatML (saved with the adapter: serve "
            "the tuned model with it)"
        )


def load_tokenizer(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base), local_files_only=True)


def train(
    data: str | Path, base: str | Path, options: TrainOptions | None = None, *, log: Any = None
) -> TrainResult:
    """Fine-tune ``base`` (a local model directory) on ``data`` with a LoRA adapter; returns the losses."""
    require_extra()
    options = options or TrainOptions()
    say = log or (lambda _msg: None)
    data, base = Path(data), Path(base)
    if not base.exists():
        raise FixitError(f"no model at {base} (--base takes a local directory with config and weights)")
    train_file, val_file = data_files(data)
    out = (
        Path(options.out)
        if options.out
        else (data / "adapter" if data.is_dir() else data.with_suffix("") / "adapter")
    )
    train_rows = read_rows(train_file)
    val_rows = read_rows(val_file) if val_file else []
    if not train_rows:
        raise FixitError(f"{train_file} holds no examples")

    notes: list[str] = []
    started = time.time()
    tokenizer = load_tokenizer(base)
    _chat_template(tokenizer, options.chat_template, notes)
    # Before the model and the trainer load: a data set that --max-length empties fails in a second.
    lengths = chat_lengths(tokenizer)
    train_rows = fit_to_length(train_rows, lengths, options.max_length, "training", notes)
    val_rows = fit_to_length(val_rows, lengths, options.max_length, "validation", notes, required=False)

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available()
    bf16 = bool(cuda and torch.cuda.is_bf16_supported())
    # bf16 weights on a GPU that has it (half the memory); float32 elsewhere, where bf16 is slow or wrong.
    model = AutoModelForCausalLM.from_pretrained(
        str(base), local_files_only=True, dtype=torch.bfloat16 if bf16 else torch.float32
    )
    config = SFTConfig(
        output_dir=str(out),
        num_train_epochs=options.epochs,
        max_steps=options.max_steps,
        learning_rate=options.learning_rate,
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum,
        max_length=options.max_length,
        logging_steps=options.logging_steps,
        save_strategy="no",
        eval_strategy="epoch" if val_rows and options.max_steps <= 0 else ("steps" if val_rows else "no"),
        eval_steps=max(1, options.max_steps) if val_rows and options.max_steps > 0 else None,
        report_to="none",
        seed=options.seed,
        bf16=bf16,
        use_cpu=not cuda,
        disable_tqdm=True,
        **({"gradient_checkpointing": True} if options.gradient_checkpointing else {}),
        **options.extra,
    )
    lora = LoraConfig(
        r=options.lora_r,
        lora_alpha=options.lora_alpha,
        lora_dropout=options.lora_dropout,
        target_modules=options.target_modules,
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(val_rows) if val_rows else None,
        processing_class=tokenizer,
        peft_config=lora,
    )
    say(
        f"training {base.name} + LoRA r={options.lora_r} on {len(train_rows)} examples "
        f"({len(val_rows)} validation) on {'cuda' if cuda else 'cpu'}"
    )
    trainer.train()
    out.mkdir(parents=True, exist_ok=True)
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    history = trainer.state.log_history
    losses = [float(h["loss"]) for h in history if "loss" in h and math.isfinite(float(h["loss"]))]
    evals = [float(h["eval_loss"]) for h in history if "eval_loss" in h]
    if options.merge:
        merged = trainer.model.merge_and_unload()
        merged.save_pretrained(str(out / "merged"))
        tokenizer.save_pretrained(str(out / "merged"))
        notes.append(f"merged model written to {out / 'merged'}")
    result = TrainResult(
        out,
        int(trainer.state.global_step),
        losses,
        evals[-1] if evals else None,
        time.time() - started,
        len(train_rows),
        len(val_rows),
        notes,
    )
    summary = {
        **asdict(result),
        "out": str(out),
        "base": str(base.resolve()),
        "data": str(data.resolve()),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
        "log_history": history,
    }
    (out / "fixit-train.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return result


__all__ = [
    "EXTRA_MODULES",
    "FALLBACK_CHAT_TEMPLATE",
    "TrainOptions",
    "TrainResult",
    "data_files",
    "read_rows",
    "require_extra",
    "train",
]
