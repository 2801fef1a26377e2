"""``warpgym suite check``: rows stream to a JSON-lines file, a rerun resumes from it, the Markdown
table summarises per category, and bad input is a usage error."""

from __future__ import annotations

import json

from warpgym.experiments.cli import main
from warpgym.experiments.cli.suite_cmd import markdown_table
from warpgym.experiments.metrics import geomean


def test_suite_check_streams_rows_and_resumes(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--jsonl", str(log)]) == 0
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["task"], r["correct"]) for r in rows] == [("math/add", True)]
    assert isinstance(rows[0]["input_seed"], int)  # the root its inputs were drawn from, to replay them
    stages = rows[0]["stage_seconds"]
    assert {"compile", "correctness", "total"} <= stages.keys()
    assert 0 < stages["correctness"] <= stages["total"]
    capsys.readouterr()
    # A second run with the same file repeats nothing it already has.
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--jsonl", str(log),
                 "--markdown", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    assert "resuming: 1 tasks already" in out and "0 to check" in out
    assert len(log.read_text().splitlines()) == 1
    assert "| math/add | yes |" in (tmp_path / "t.md").read_text()


def test_named_tasks_are_checked_in_the_order_given(tmp_path):
    """The first named are checked first, so a device call cut short by its time limit has the ones that
    matter most."""
    log = tmp_path / "rows.jsonl"
    assert main(["suite", "check", "--device", "cpu", "--shapes", "dev", "--task", "math/axpy",
                 "--task", "math/add", "--jsonl", str(log)]) == 0
    assert [json.loads(line)["task"] for line in log.read_text().splitlines()] == ["math/axpy", "math/add"]


def test_a_line_cut_short_by_a_crash_is_run_again(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    log.write_text('{"task": "math/add", "ok": tr\n')
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--jsonl", str(log)]) == 0
    assert "[1/1] math/add: correct yes" in capsys.readouterr().out


def test_a_resumed_run_checks_a_failed_task_again_and_keeps_the_new_row(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    failed = {"task": "math/add", "category": "math", "ok": False, "correct": False,
              "feedback": "the harness failed while judging this candidate (OutOfMemoryError ...)"}
    log.write_text(json.dumps(failed) + "\n")
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--jsonl", str(log)]) == 0
    assert "[1/1] math/add: correct yes" in capsys.readouterr().out
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--jsonl", str(log)]) == 0
    assert "resuming: 1 tasks already" in capsys.readouterr().out, "the later passing row counts"


def test_a_task_that_ran_out_of_memory_beside_others_is_checked_first_alone_when_resumed(tmp_path, capsys):
    """A device call cut short by its time limit never reaches the retry at the end of its run: the next
    run, resumed from the same file, checks those tasks first and one at a time."""
    log = tmp_path / "rows.jsonl"
    oom = {"task": "math/add", "category": "math", "ok": False, "out_of_memory": True,
           "feedback": "bench check after the timing loop: torch.OutOfMemoryError: CUDA out of memory"}
    wrong = {"task": "math/axpy", "category": "math", "ok": False, "out_of_memory": False}
    log.write_text(json.dumps(oom) + "\n" + json.dumps(wrong) + "\n")
    assert main(["suite", "check", "--device", "cpu", "--shapes", "dev", "--task", "math/axpy",
                 "--task", "math/add", "--jsonl", str(log)]) == 0
    out = capsys.readouterr().out
    assert "1 ran out of GPU memory beside other evaluations in the earlier run" in out
    new = [json.loads(line)["task"] for line in log.read_text().splitlines()[2:]]
    assert new == ["math/add", "math/axpy"], "the one short of memory first, though named last"
    # a later passing row ends it: the next run has nothing left to check
    assert main(["suite", "check", "--device", "cpu", "--shapes", "dev", "--task", "math/axpy",
                 "--task", "math/add", "--jsonl", str(log)]) == 0
    out = capsys.readouterr().out
    assert "resuming: 2 tasks already" in out and "0 to check" in out and "ran out of GPU memory" not in out


def test_bad_input_is_a_usage_error(capsys):
    assert main(["suite", "check", "--device", "cpu", "--task", "math/nope"]) == 2
    assert "unknown task id 'math/nope'" in capsys.readouterr().err
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--shapes", "dev,huge"]) == 2
    assert "unknown shape set 'huge'" in capsys.readouterr().err


def test_markdown_table_geomeans_per_category():
    rows = [
        {"task": "math/a", "category": "math", "correct": True,
         "speedup": {"eager": 2.0, "torch.compile": 1.0}},
        {"task": "math/b", "category": "math", "correct": True,
         "speedup": {"eager": 0.4, "torch.compile": 0.25}},
        {"task": "loss/c", "category": "loss", "correct": False, "speedup": None},
    ]
    table = markdown_table(rows)
    assert "| math | 2 | 2 | 0.89x | 0.50x | 1 |" in table
    assert "| loss | 1 | 0 | - | - | 0 |" in table
    assert "| math/b **<0.5x eager** **below 0.8x, no note** | yes | 0.40x | 0.25x | - | 0.25x | - |" in table
    assert geomean([None, 0.0]) is None


def test_bench_cases_are_checked_once_on_a_gpu():
    from warpgym.experiments.cli.suite_cmd import default_shapes

    assert default_shapes("cpu", timing=True) == ("dev", "heldout")
    assert default_shapes("cuda", timing=True) == ("dev", "heldout")  # bench: after the timing loop
    assert default_shapes("cuda:1", timing=False) == ("dev", "heldout", "bench")


def test_a_chosen_input_seed_is_used_and_recorded(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--shapes", "dev",
                 "--input-seed", "1234", "--jsonl", str(log)]) == 0
    assert [json.loads(line)["input_seed"] for line in log.read_text().splitlines()] == [1234]
    capsys.readouterr()
    assert main(["suite", "check", "--device", "cpu", "--task", "math/add", "--input-seed", "-1"]) == 2
    assert "--input-seed" in capsys.readouterr().err


def test_a_row_says_why_a_baseline_has_no_speedup():
    from warpgym.env.judge.result import Timing
    from warpgym.experiments.cli.suite_cmd import baseline_errors

    def timing(n: int, errors: dict[str, str]) -> Timing:
        return Timing(case={"n": n}, median_ms=1.0, min_ms=1.0, max_ms=1.0, runs=1, baseline_errors=errors)

    assert baseline_errors([timing(1, {}), timing(2, {})]) is None
    rows = baseline_errors([timing(1, {}), timing(2, {"torch.compile": "RuntimeError: boom"}),
                            timing(3, {"torch.compile": "later"})])
    assert rows == {"torch.compile": "n=2: RuntimeError: boom"}


def test_rows_out_of_gpu_memory_beside_others_are_checked_again_alone_and_replaced(capsys):
    from warpgym.experiments.cli.suite_cmd import check_again_alone

    oom = {"task": "fusion/attention-gqa", "reference": None, "ok": False,
           "harness_failure": "OutOfMemoryError", "out_of_memory": True}
    wrong = {"task": "math/add", "reference": None, "ok": False, "harness_failure": None}
    crashed = {"task": "math/exp", "reference": None, "ok": False, "harness_failure": "RuntimeError"}
    # the reference's own process short of memory in the bench check, while another evaluation held 58 GiB
    squeezed = {"task": "fusion/decode-attention", "reference": None, "ok": False, "harness_failure": None,
                "out_of_memory": True}
    rows = [oom, wrong, crashed, squeezed]
    checked, finished = [], []

    def check(task_id, extra):
        checked.append((task_id, extra))
        return {"task": task_id, "reference": extra, "ok": True, "harness_failure": None}

    def done(row):
        finished.append(row)
        rows.append(row)

    assert check_again_alone(rows, check, done) == 2
    assert checked == [("fusion/attention-gqa", None), ("fusion/decode-attention", None)], \
        "a wrong answer or another crash is not retried"
    assert [r["task"] for r in rows] == ["math/add", "math/exp", "fusion/attention-gqa",
                                         "fusion/decode-attention"] and rows[-1]["ok"]
    assert "2 ran out of GPU memory beside other evaluations" in capsys.readouterr().out
    assert check_again_alone(rows, check, done) == 0
    # a task already checked alone in this run that ran out again ran out by itself: it is not repeated
    alone_too = {**oom, "task": "fusion/attention-mask"}
    rows.append(alone_too)
    assert check_again_alone(rows, check, done, {"fusion/attention-mask"}) == 0 and alone_too in rows
