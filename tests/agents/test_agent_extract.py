"""Reading a model's answer: the one candidate module, or a message for the model."""

from __future__ import annotations

from warpgym.agents.extract import extract_candidate, fenced_blocks

MODULE = "import torch\n\n\ndef add(x, y):\n    return x\n"
OTHER = "import torch\n\n\ndef add(x, y):\n    return y\n"


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.rstrip()}\n```"


def test_single_block() -> None:
    out = extract_candidate(f"Plan: add.\n\n{fence(MODULE)}\nDone.", "add")
    assert out.ok and out.code == MODULE and out.problem is None


def test_block_defining_the_entrypoint_wins_over_a_later_helper_block() -> None:
    text = f"{fence(MODULE)}\nUsage:\n{fence('print(add(1, 2))')}"
    out = extract_candidate(text, "add")
    assert out.code == MODULE and "defines add" in (out.note or "")


def test_last_block_when_none_defines_the_entrypoint() -> None:
    out = extract_candidate(f"{fence('x = 1')}\n{fence('y = 2', 'py')}", "add")
    assert out.code == "y = 2\n" and "last complete" in (out.note or "")


def test_conflicting_modules_become_feedback() -> None:
    out = extract_candidate(f"First try:\n{fence(MODULE)}\nBetter:\n{fence(OTHER)}", "add")
    assert not out.ok and "2 different Python blocks" in (out.problem or "")
    same = extract_candidate(f"{fence(MODULE)}\nAgain:\n{fence(MODULE + '  ')}", "add")
    assert same.ok  # the same module twice is not a conflict


def test_no_code_truncated_and_wrong_language() -> None:
    assert "no code" in (extract_candidate("I think a mask is needed.", "add").problem or "")
    assert "no code" in (extract_candidate("", "add").problem or "")
    cut = extract_candidate("Here:\n```python\nimport torch\ndef add(x, y):\n", "add")
    assert not cut.ok and "cut off" in (cut.problem or "")
    cuda = extract_candidate(fence("__global__ void k() {}", "cuda"), "add")
    assert not cuda.ok and "no Python block" in (cuda.problem or "")


def test_unfenced_module_and_syntax_errors() -> None:
    assert extract_candidate(MODULE, "add").code == MODULE
    broken = "import torch\ndef add(x, y)\n    return x\n"
    out = extract_candidate(fence(broken), "add")
    assert out.code == broken  # judged, so the model sees the syntax error from the judge


def test_fences_with_tildes_longer_fences_and_info_strings() -> None:
    helper = OTHER.replace("add", "helper")
    text = f"~~~python\n{MODULE}~~~\n" + "````python title=kernel.py\n" + helper + "````\n"
    blocks = fenced_blocks(text)
    assert [b.language for b in blocks] == ["python", "python"] and all(b.complete for b in blocks)
    assert extract_candidate(text, "add").code == MODULE


PTX_MODULE = ('from warpgym import loader\n\nMOD = loader.load_ptx(loader.attachment("gemm.ptx"))\n\n\n'
              'def gemm(a, b):\n    return a\n')
PTX = ".version 8.7\n.target sm_90a\n"


def test_a_named_ptx_block_becomes_an_attachment() -> None:
    text = f"Plan.\n\n{fence(PTX_MODULE)}\n\nThe kernel:\n\n{fence(PTX, 'ptx gemm.ptx')}\n"
    out = extract_candidate(text, "gemm")
    assert out.ok and out.code == PTX_MODULE and dict(out.attachments) == {"gemm.ptx": PTX}
    assert out.candidate is not None and out.candidate.attachments["gemm.ptx"] == PTX
    assert "gemm.ptx" in (out.note or "")


def test_file_names_in_other_fence_forms() -> None:
    header = "#define TILE 64\n"
    text = (f"{fence(PTX, 'gemm.ptx')}\n{fence(header, 'cuda title=tile.cuh')}\n"
            f"~~~c++ file=\"body.cu\"\n__global__ void k() {{}}\n~~~\n{fence(PTX_MODULE)}")
    out = extract_candidate(text, "gemm")
    assert out.ok and sorted(out.attachments) == ["body.cu", "gemm.ptx", "tile.cuh"]
    assert out.attachments["tile.cuh"] == header


def test_a_single_python_block_has_no_attachments() -> None:
    out = extract_candidate(fence(MODULE), "add")
    assert out.ok and dict(out.attachments) == {} and out.candidate is not None
    assert out.candidate.source == MODULE and not out.candidate.attachments
    unnamed = extract_candidate(f"{fence(MODULE)}\n{fence(PTX, 'ptx')}", "add")
    assert unnamed.ok and dict(unnamed.attachments) == {}  # an unnamed ptx block is an illustration


def test_a_module_reading_a_file_the_answer_does_not_name() -> None:
    out = extract_candidate(f"{fence(PTX_MODULE)}\n{fence(PTX, 'ptx')}", "gemm")
    assert not out.ok and "'gemm.ptx'" in (out.problem or "") and "```ptx gemm.ptx" in (out.problem or "")
    other = extract_candidate(f"{fence(PTX_MODULE)}\n{fence(PTX, 'ptx other.ptx')}", "gemm")
    assert not other.ok and "'gemm.ptx'" in (other.problem or "")


def test_broken_attachments_become_feedback() -> None:
    cut = extract_candidate(f"{fence(PTX_MODULE)}\n```ptx gemm.ptx\n.version 8.7\n", "gemm")
    assert not cut.ok and "cut off inside the file gemm.ptx" in (cut.problem or "")
    twice = extract_candidate(f"{fence(PTX_MODULE)}\n{fence(PTX, 'ptx gemm.ptx')}\n"
                              f"{fence(PTX + '// v2', 'ptx gemm.ptx')}", "gemm")
    assert not twice.ok and "two different blocks named gemm.ptx" in (twice.problem or "")
    same = extract_candidate(f"{fence(PTX_MODULE)}\n{fence(PTX, 'ptx gemm.ptx')}\n"
                             f"{fence(PTX, 'ptx gemm.ptx')}", "gemm")
    assert same.ok
    bad = extract_candidate(f"{fence(PTX_MODULE)}\n{fence(PTX, 'ptx ../gemm.ptx')}", "gemm")
    assert not bad.ok and "cannot be judged" in (bad.problem or "")
    assert "bare file name" in (bad.problem or "")


def test_only_named_files_and_no_module() -> None:
    out = extract_candidate(fence(PTX, "ptx gemm.ptx"), "gemm")
    assert not out.ok and "no Python block" in (out.problem or "") and "attachment" in (out.problem or "")
