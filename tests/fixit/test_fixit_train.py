"""``fixit train``: TRL SFT with a PEFT LoRA adapter on a tiny, randomly initialised causal LM.

Nothing is downloaded: the tokenizer is a byte-level BPE trained here (``tokenizers``) on the data
set's own text, and the model is a two-layer Llama built from a config. The test goes from a run to
an adapter with the two commands a user types, and checks that the training loss falls.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from fixit_helpers import make_run, scenario
from warpgym.experiments.cli import main
from warpgym.experiments.fixit import FixitError
from warpgym.experiments.fixit.train import EXTRA_MODULES, read_rows, require_extra

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "peft" else real(name, *a)
    )
    with pytest.raises(FixitError, match=r'needs peft: pip install "warpgym\[fixit\]"'):
        require_extra()


def test_both_layouts_read_as_prompt_and_completion(tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]
    (tmp_path / "o.jsonl").write_text(json.dumps({"messages": msgs}) + "\n")
    (tmp_path / "h.jsonl").write_text(
        json.dumps({"id": "x", "prompt": msgs[:2], "completion": msgs[2:]}) + "\n"
    )
    assert (
        read_rows(tmp_path / "o.jsonl")
        == read_rows(tmp_path / "h.jsonl")
        == [{"prompt": msgs[:2], "completion": msgs[2:]}]
    )
    (tmp_path / "bad.jsonl").write_text(json.dumps({"messages": msgs[:2]}) + "\n")
    with pytest.raises(FixitError, match="bad.jsonl:1"):
        read_rows(tmp_path / "bad.jsonl")


def _tiny_model(path: Path, texts: list[str]) -> None:
    """A byte-level BPE tokenizer trained on ``texts`` and a 2-layer Llama with random weights."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "<|im_end|>", "<unk>", "<|im_start|>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=800,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="<|im_end|>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    import torch

    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


@pytest.mark.slow  # about 30 s on two idle cores (12 optimiser steps, one evaluation, a merge)
def test_from_a_run_to_an_adapter_in_two_commands_and_the_loss_falls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in EXTRA_MODULES:
        pytest.importorskip(
            module, reason='the fixit extra is not installed (pip install "warpgym[fixit]")'
        )
    run = make_run(tmp_path / "runs" / "synthetic", scenario())
    data = tmp_path / "data"
    assert (
        main(["fixit", "build", str(run), "--out", str(data), "--cross-model", "--val-fraction", "0.3"]) == 0
    )
    rows = [
        json.loads(line)
        for f in ("train", "validation")
        for line in (data / "hf" / f"{f}.jsonl").read_text().splitlines()
    ]
    assert rows and any(r for r in (data / "hf" / "validation.jsonl").read_text().splitlines())
    _tiny_model(tmp_path / "base", [m["content"] for r in rows for m in r["prompt"] + r["completion"]])
    capsys.readouterr()

    options = "--max-steps 12 --lr 1e-2 --batch-size 2 --grad-accum 1 --max-length 1024 --lora-r 8 "
    options += "--lora-alpha 32 --lora-dropout 0 --merge"
    code = main(["fixit", "train", str(data), "--base", str(tmp_path / "base"), *options.split()])
    assert code == 0
    printed = capsys.readouterr().out
    adapter = data / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    summary = json.loads((adapter / "fixit-train.json").read_text())
    losses = summary["losses"]
    assert summary["steps"] == 12 and len(losses) == 12
    assert losses[-1] < losses[0] - 0.05, losses  # it learns: the loss falls over a few steps
    assert sum(losses[-3:]) < sum(losses[:3]), losses
    assert summary["eval_loss"] is not None and summary["validation_examples"] >= 1
    assert "Trained 12 steps" in printed and "loss" in printed
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["peft_type"] == "LORA"
    assert (adapter / "merged" / "config.json").is_file()  # --merge: a full model for servers without LoRA


def test_train_refuses_a_missing_base_or_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if any(importlib.util.find_spec(m) is None for m in EXTRA_MODULES):
        assert main(["fixit", "train", str(tmp_path), "--base", str(tmp_path)]) == 2
        assert "warpgym[fixit]" in capsys.readouterr().err
        return
    assert main(["fixit", "train", str(tmp_path), "--base", str(tmp_path / "none")]) == 2
    assert "no model at" in capsys.readouterr().err
    assert main(["fixit", "train", str(tmp_path), "--base", str(tmp_path)]) == 2
    assert "fixit build" in capsys.readouterr().err
