"""``fixit train`` with examples that ``--max-length`` leaves nothing to learn from."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from warpgym.experiments.cli import main
from warpgym.experiments.fixit import FixitError
from warpgym.experiments.fixit.lengths import fit_to_length

train_mod = importlib.import_module("warpgym.experiments.fixit.train")


def row(prompt_words: int, answer_words: int = 3) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": " ".join(["w"] * prompt_words)}],
            "completion": [{"role": "assistant", "content": " ".join(["a"] * answer_words)}]}


def words(r: dict[str, Any]) -> tuple[int, int]:
    prompt = sum(len(m["content"].split()) for m in r["prompt"])
    return prompt, prompt + sum(len(m["content"].split()) for m in r["completion"])


def test_examples_whose_prompt_reaches_the_limit_are_dropped_with_a_note():
    notes: list[str] = []
    rows = [row(5), row(20), row(9)]
    assert fit_to_length(rows, words, 10, "training", notes) == [rows[0], rows[2]]
    assert notes == ["1 of 3 training examples dropped: their prompt alone reaches --max-length 10 "
                     "(--max-length 23 keeps every example whole)"]
    assert fit_to_length(rows, words, 100, "training", notes) == rows and len(notes) == 1


def test_nothing_left_says_why_and_what_to_change():
    with pytest.raises(FixitError, match=r"every one of the 2 training examples.*shortest prompt has 12"
                                         r".*Raise --max-length above 12 \(--max-length 23 keeps"):
        fit_to_length([row(12), row(20)], words, 10, "training", [])
    notes: list[str] = []
    assert fit_to_length([row(12)], words, 10, "validation", notes, required=False) == []
    assert "1 of 1 validation examples dropped" in notes[0]


class WordTokenizer:
    """A tokenizer that counts words: enough to measure rows, with no training library loaded."""

    chat_template = "words"

    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool = True,
                            add_generation_prompt: bool = False) -> dict[str, list[int]]:
        count = sum(len(m["content"].split()) for m in messages) + int(add_generation_prompt)
        return {"input_ids": list(range(count))}


def test_the_command_exits_2_before_loading_the_trainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(row(50)) + "\n" for _ in range(3)))
    (tmp_path / "base").mkdir()
    monkeypatch.setattr(train_mod, "require_extra", lambda: None)
    monkeypatch.setattr(train_mod, "load_tokenizer", lambda base: WordTokenizer())
    for heavy in ("trl", "peft", "datasets"):  # importing any of them now fails: the check came first
        monkeypatch.setitem(sys.modules, heavy, None)
    code = main(["fixit", "train", str(data), "--base", str(tmp_path / "base"), "--max-length", "32"])
    err = capsys.readouterr().err
    assert code == 2
    assert "nothing left to train on" in err and "Raise --max-length above 51" in err
    assert "Traceback" not in err
