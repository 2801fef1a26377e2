"""Context levels from the experiment file: documents split into named sections, levels built from parts,
leave-one-out and add-one-in grids, errors that name the line, and the text stored with the run."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import warpgym.agents as agents
from exp_helpers import NO_CODE, TASK, write_replay
from warpgym.experiments import config, context_levels, rundir, runner
from warpgym.prompts import document, hardware_context, level_text, library
from warpgym.prompts.sections import UnknownPartError, section_names

SM90_SECTIONS = [
    "intro", "execution-model", "memory-hierarchy-and-its-numbers", "instruction-families", "mbarrier",
    "tma", "wgmma", "setmaxnreg-and-warp-specialisation", "clusters-and-distributed-shared-memory",
    "ldmatrix-and-stmatrix", "raw-ptx", "checklist-for-a-hopper-gemm-or-attention-kernel",
]


def _squash(text: str) -> str:
    return re.sub(r"\n{2,}", "\n\n", text).strip()


@pytest.mark.parametrize("name", ["sm_90a", "sm_100a", "triton"])
def test_a_whole_document_renders_as_itself(name: str) -> None:
    lib = library()
    assert _squash(lib.render(lib.select([name]), "")) == _squash(document(name))


def test_section_names_are_stable() -> None:
    names = section_names("sm_90a", document("sm_90a"))
    assert names[::3] == [f"sm_90a#{s}" for s in SM90_SECTIONS]
    assert names[1:3] == ["sm_90a#intro-text", "sm_90a#intro-examples"]


def test_a_level_holds_exactly_its_parts() -> None:
    text = level_text(["specs", "sm_90a#tma"], "sm_90a")
    assert text.startswith("## Target hardware: sm_90a")
    assert "### TMA: the tensor memory accelerator" in text
    assert "### wgmma" not in text and "### mbarrier" not in text and "## Execution model" not in text
    examples = level_text(["sm_90a#wgmma-examples"], "sm_90a")
    prose = level_text(["sm_90a#wgmma-text"], "sm_90a")
    assert "### wgmma" in examples and "### wgmma" in prose  # each half keeps its heading
    assert examples.count("```") >= 2 and "```" not in prose
    whole = level_text(["sm_90a#wgmma"], "sm_90a")
    assert len(whole) > len(prose) and len(whole) > len(examples)
    # a parent section holds its subsections; leaving one out removes that one only
    families = level_text(["sm_90a#instruction-families"], "sm_90a", without=("sm_90a#tma",))
    assert "### wgmma" in families and "### mbarrier" in families and "### TMA" not in families


def test_a_user_file_is_read_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("Our own measured bandwidth: 4.1 TB/s.\n")
    text = level_text(["sm_90a#tma", "file:notes.md"], "sm_90a", base_dir=tmp_path)
    assert text.rstrip().endswith("Our own measured bandwidth: 4.1 TB/s.")
    with pytest.raises(UnknownPartError, match="no file"):
        level_text(["file:missing.md"], "sm_90a", base_dir=tmp_path)


def test_the_builtin_levels_render_as_before() -> None:
    plan = context_levels.levels(["none", "specs", "full"], {}, None)
    rendered = context_levels.render_all(plan, "sm_90a", ["triton", "cuda"], None)
    for level in ("none", "specs", "full"):
        for language in ("triton", "cuda"):
            assert rendered[level][language].text == hardware_context("sm_90a", level, language)
    assert "Triton on Hopper" in rendered["full"]["triton"].text
    assert "Triton on Hopper" not in rendered["full"]["cuda"].text


BASE = f"""
name = "levels"
tasks = ["{TASK}"]
agents = ["one-shot"]
models = [{{ spec = "replay:rec.jsonl", name = "rec" }}]
max_turns = 1
"""


def _parse(tmp_path: Path, body: str) -> config.Experiment:
    write_replay(tmp_path / "rec.jsonl", [(0, 1, NO_CODE)])
    path = tmp_path / "exp.toml"
    path.write_text(BASE + body)
    return config.load(path)


def test_custom_levels_are_validated_with_the_line(tmp_path: Path) -> None:
    body = """contexts = ["tma-only", "mine"]

[context_levels.tma-only]
parts = ["specs", "sm_90a#tmaa"]

[context_levels.mine]
parts = [
  "sm_90a#wgmma",
  "file:nowhere.md",
]

[context_levels.full]
parts = ["specs"]
"""
    with pytest.raises(config.ConfigError) as err:
        _parse(tmp_path, body)
    text = str(err.value)
    lines = (BASE + body).splitlines()
    needles = ('"sm_90a#tmaa"', '"file:nowhere.md"', "[context_levels.full]")
    section, missing, builtin = (next(i for i, line in enumerate(lines, 1) if n in line) for n in needles)
    assert f"line {section}: context_levels.tma-only.parts[1]: no section " in text
    assert "did you mean 'sm_90a#tma'?" in text
    assert f"line {missing}: context_levels.mine.parts[1]: no file" in text
    assert f"line {builtin}: context_levels.full: 'full' is a built-in" in text


def test_an_unknown_context_name_suggests_the_files_own_levels(tmp_path: Path) -> None:
    body = 'contexts = ["tma-onyl"]\n\n[context_levels.tma-only]\nparts = ["sm_90a#tma"]\n'
    with pytest.raises(config.ConfigError, match="did you mean 'tma-only'"):
        _parse(tmp_path, body)


def test_a_leave_one_out_grid_expands_to_one_level_per_part(tmp_path: Path) -> None:
    exp = _parse(tmp_path, """[ablate]
base = "full"
parts = ["sm_90a#tma", "sm_90a#wgmma-examples", "specs"]
""")
    assert exp.contexts == ["full", "full-sm_90a#tma", "full-sm_90a#wgmma-examples", "full-specs"]
    plan = exp.levels()
    rendered = context_levels.render_all(plan, "sm_90a", ["triton"], None)
    full = rendered["full"]["triton"].text
    no_tma = rendered["full-sm_90a#tma"]["triton"].text
    assert "### TMA" in full and "### TMA" not in no_tma and "### wgmma" in no_tma
    assert "Triton on Hopper" in no_tma  # the rest of the base stays
    no_examples = rendered["full-sm_90a#wgmma-examples"]["triton"].text
    assert "wgmma.mma_async.sync.aligned.m64n128k16" in full
    assert "wgmma.mma_async.sync.aligned.m64n128k16" not in no_examples
    assert "### wgmma" in no_examples  # its prose stays
    assert not rendered["full-specs"]["triton"].text.startswith("## Target hardware")
    sizes = {n: r["triton"].tokens_estimate for n, r in rendered.items()}
    assert all(sizes[n] < sizes["full"] for n in sizes if n != "full")


def test_an_add_one_in_grid_and_a_part_missing_from_the_base(tmp_path: Path) -> None:
    exp = _parse(tmp_path, 'contexts = ["none"]\n\n[ablate]\nbase = "specs"\nmode = "add-one-in"\n'
                 'parts = ["sm_90a#tma", "sm_90a#wgmma"]\n')
    assert exp.contexts == ["none", "specs", "specs+sm_90a#tma", "specs+sm_90a#wgmma"]
    text = level_text(exp.levels()["specs+sm_90a#tma"].parts_for("sm_90a", "triton"), "sm_90a")
    assert text.startswith("## Target hardware") and "### TMA" in text and "### wgmma" not in text
    with pytest.raises(config.ConfigError, match=r"ablate.parts\[0\]: 'sm_90a#tma' is not part of the base"):
        _parse(tmp_path, '[ablate]\nbase = "specs"\nparts = ["sm_90a#tma"]\n')


class Recording:
    """A provider that keeps every system message it is sent."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.systems: dict[str, str] = {}
        self.lock = threading.Lock()

    def complete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                 **params: Any) -> Any:
        with self.lock:
            self.systems[metadata["context"]] = messages[0]["content"]
        return self.inner.complete(messages, metadata=metadata, **params)

    async def acomplete(self, messages: list[dict[str, str]], **kw: Any) -> Any:
        return self.complete(messages, **kw)


def test_the_run_stores_each_level_and_sends_exactly_it(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("NOTE-FROM-THE-RESEARCHER\n")
    exp = _parse(tmp_path, """contexts = ["none", "mine"]

[context_levels.mine]
parts = ["sm_90a#tma-text", "file:notes.md"]
""")
    run_dir = tmp_path / "run"
    exp, store, _ = rundir.open_run(exp, run_dir)
    provider = Recording(agents.make_provider(exp.models[0].spec))
    try:
        runner.Runner(exp, run_dir, store, providers={"rec": provider}).run()
    finally:
        store.close()
    stored = json.loads((run_dir / context_levels.LEVELS_FILE).read_text())
    mine = stored["mine"]["languages"]["triton"]
    assert mine["text"] in provider.systems["mine"]
    assert "NOTE-FROM-THE-RESEARCHER" in provider.systems["mine"] and "### TMA" in provider.systems["mine"]
    assert "```" not in mine["text"] and mine["chars"] == len(mine["text"])
    assert stored["none"]["languages"]["triton"]["text"] == ""
    assert "NOTE-FROM-THE-RESEARCHER" not in provider.systems["none"]
    # a resume reads the stored text, even when the file it came from has changed
    (tmp_path / "notes.md").write_text("CHANGED\n")
    resumed, store, _ = rundir.open_run(None, run_dir)
    try:
        levels = runner.Runner(resumed, run_dir, store)._context_levels()
    finally:
        store.close()
    assert "NOTE-FROM-THE-RESEARCHER" in levels["mine"]["languages"]["triton"]["text"]


def _level_store(run_dir: Path) -> Path:
    """20 tasks x 2 levels x 2 samples, one turn each. At the base level `full` every candidate is
    correct, arch-verified and uses wgmma and TMA; without the wgmma section, only the even tasks are
    correct, none arch-verified, and none uses wgmma; each level's episodes cost fixed tokens."""
    from warpgym.experiments.store import Store

    levels = {"full": 3000, "full-sm_90a#wgmma": 2000}
    run_dir.mkdir(parents=True)
    with Store(run_dir / "store.sqlite") as store:
        store.set_meta("config", {
            "name": "levels", "resolved_tasks": [f"ptx/t{t}" for t in range(20)], "agents": ["one-shot"],
            "models": [{"spec": "replay:x", "name": "m"}], "contexts": list(levels), "samples": 2,
            "max_turns": 1, "history": "full", "target": "sm_90a", "ablate": {"base": "full"},
            "metrics": {"baseline": "eager", "pass_k": [1], "fast_p": [0]},
        })
        store.add_episodes({"task": f"ptx/t{t}", "category": "ptx", "agent": "one-shot", "model": "m",
                            "context": c, "sample": s, "requires_features": True}
                           for t in range(20) for c in levels for s in range(2))
        for e in store.episodes():
            base = e["context"] == "full"
            ok = base or int(e["task"].rsplit("t", 1)[1]) % 2 == 0
            families = {"tma": {"ptx": 3, "sass": 2}, "wgmma": {"ptx": 4, "sass": 4 if base else 0}}
            result = {"compiled": True, "correct": ok, "arch_verified": base and ok, "instructions": families,
                      "stage": "done" if ok else "correctness"}
            store.add_turn(e["id"], {"turn": 1, "phase": "generate", "response": "", "feedback": "",
                                     "result": result, "input_tokens": levels[e["context"]] - 500,
                                     "output_tokens": 500, "cost_usd": 0.0}, "eager")
            store.finish_episode(e["id"], solved=ok, best_turn=1, heldout=None)
    plan = context_levels.levels(["full"], {}, context_levels.Ablation(base="full", parts=["sm_90a#wgmma"]))
    context_levels.store(run_dir, plan, context_levels.render_all(plan, "sm_90a", ["cuda"], None))
    return run_dir


def test_the_report_says_what_each_level_changed(tmp_path: Path) -> None:
    from test_exp_report import md_tables
    from warpgym.experiments import report

    run_dir = _level_store(tmp_path / "run")
    md, _ = report.write(run_dir, plots=True)
    text = md.read_text()
    part = text.split("### What each context level changed")[1]
    levels, versus = md_tables(part)[:2]
    full, ablated = (next(r for r in levels if r["level"] == n) for n in ("full", "full-sm_90a#wgmma"))
    assert full["correct"].startswith("100.0%") and full["arch-verified"].startswith("100.0%")
    assert full["in SASS: wgmma"].startswith("100.0%") and full["in SASS: tma"].startswith("100.0%")
    assert ablated["correct"].startswith("50.0%") and ablated["arch-verified"].startswith("0.0%")
    assert ablated["in SASS: wgmma"].startswith("0.0%") and ablated["in SASS: tma"].startswith("100.0%")
    assert full["tokens / episode"].startswith("3,000") and ablated["tokens / episode"].startswith("2,000")
    stored = json.loads((run_dir / context_levels.LEVELS_FILE).read_text())
    assert int(full["context tokens (est.)"].replace(",", "")) == stored["full"]["languages"]["cuda"][
        "tokens_estimate"]
    assert int(ablated["context tokens (est.)"].replace(",", "")) < int(full["context tokens (est.)"].replace(
        ",", ""))
    rows = {r["figure"]: r for r in versus if r["level"] == "full-sm_90a#wgmma"}
    assert rows["correct"]["difference from full"].startswith("-50.0 pts")
    assert rows["correct"]["verdict"] == "different"
    assert rows["in SASS: tma"]["verdict"] == "within noise"
    assert rows["tokens / episode"]["difference from full"].startswith("-1,000")
    assert (run_dir / "plots" / "levels_tokens.png").stat().st_size > 1000


def test_the_context_command_lists_parts_and_renders_a_level(capsys: pytest.CaptureFixture[str]) -> None:
    from warpgym.experiments.cli import main

    assert main(["context", "sections", "sm_90a"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "sm_90a#tma" in listed and "sm_90a#wgmma-examples" in listed
    assert "sm_90a#intro-examples" not in listed  # an empty half is not offered
    assert main(["context", "show", "specs", "sm_90a#instruction-families", "--without", "sm_90a#tma"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Target hardware") and "### wgmma" in out and "### TMA" not in out
    assert main(["context", "show", "sm_90a#tmaa"]) == 2
    assert "did you mean 'sm_90a#tma'" in capsys.readouterr().err


def test_compare_says_what_each_level_changed_in_each_run(tmp_path: Path) -> None:
    import shutil

    from warpgym.experiments import compare, report_markdown

    first = _level_store(tmp_path / "first")
    second = tmp_path / "second"
    shutil.copytree(first, second)
    text = report_markdown.render(compare.compare([first, second]))
    for name in ("first", "second"):
        part = text.split(f"What each context level changed in {name}")[1]
        assert "| full-sm_90a#wgmma | correct | -50.0 pts" in part
