"""The viewer's documents, files and command, without a browser (test_view_browser.py drives the page)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from view_helpers import HOSTILE, V1, V2, make_run, record, trajectory
from warpgym.experiments.cli import main
from warpgym.experiments.view.build import CALLBACK, Builder, as_script
from warpgym.experiments.view.episode import turn_docs
from warpgym.experiments.view.index import run_state
from warpgym.experiments.view.site import Site


def decode(blob: bytes) -> dict:
    text = blob.decode("ascii")
    assert text.startswith(CALLBACK + "(") and text.endswith(");\n")
    return json.loads(text[len(CALLBACK) + 1 : -3])


def test_script_encoding_keeps_no_markup_and_round_trips() -> None:
    doc = {"text": HOSTILE + " \u2028 é & </script>"}
    blob = as_script(doc)
    assert not re.search(rb"[<>&]", blob.split(b"(", 1)[1])
    assert decode(blob) == doc


def test_each_turn_lists_only_its_new_messages_and_diffs_against_the_last_candidate() -> None:
    t1, t2, t3 = turn_docs(trajectory())
    assert t1["carried"] == 0 and [m["kind"] for m in t1["messages"]] == ["system", "task"]
    # turn 2's prompt is turn 1's plus its answer (carried) and the feedback (new)
    assert t2["carried"] == 3 and [m["kind"] for m in t2["messages"]] == ["feedback"]
    assert t2["messages"][0]["text"] == "Verdict of turn 1"
    assert t2["diff"] is None and t2["verdict"]["outcome"] == "no code"
    assert t1["diff"] == {"against": None, "lines": [], "same": False}
    # turn 3 had no candidate before it at turn 2: its diff is against turn 1's
    assert t3["diff"]["against"] == 1
    lines = t3["diff"]["lines"]
    assert "-    return x.exp() / x.exp().sum(-1)" in lines
    assert "+    m = x.max(-1, keepdim=True).values" in lines
    assert t3["verdict"]["label"] == "correct (eager 2.00x)"


def test_a_history_of_last_marks_a_resent_answer() -> None:
    t1, t2, _ = trajectory()
    t3 = record(3, "x", V2, None)
    t3["messages"] = t3["messages"][:2] + [
        {"role": "assistant", "content": t2["response"]},
        {"role": "user", "content": t2["feedback"]},
    ]
    docs = turn_docs([t1, t2, t3])
    assert docs[2]["carried"] == 2
    assert [(m["kind"], m["resent_answer_of"]) for m in docs[2]["messages"]] == [
        ("assistant", 2),
        ("feedback", None),
    ]


def test_the_verdict_shows_failing_cases_counts_and_timings() -> None:
    t1, _, t3 = turn_docs(trajectory())
    tables = {t["title"]: t for t in t1["verdict"]["tables"]}
    failing = tables["Failing cases"]["rows"]
    assert len(failing) == 1 and "rows=4, cols=4096" in failing[0] and "16,384 of 16,384" in failing[0]
    assert failing[0][4] == "—"  # an infinite error is not a number to print
    assert tables["Instruction counts"]["rows"] == [["cp.async", "3", "3", "—"]]
    assert "1 families counted none" in tables["Instruction counts"]["note"]
    timing = {t["title"]: t for t in t3["verdict"]["tables"]}["Timings"]
    assert timing["rows"][0][:2] == ["rows=4096, cols=4096", "0.21 ms"] and "61%" in timing["rows"][0]


def test_missing_fields_show_as_a_dash_and_new_fields_are_shown() -> None:
    bare = {
        "turn": 1,
        "response": "hi",
        "candidate": V1,
        "result": {"compiled": True},
        "call_source": "replayed",
    }
    (doc,) = turn_docs([bare])
    usage = dict(map(tuple, doc["usage"]["rows"]))
    assert usage["cost"] == "—" and usage["input tokens"] == "—" and usage["model latency"] == "—"
    assert usage["call source"] == "replayed"
    assert doc["verdict"]["outcome"] == "wrong"


def test_run_state_follows_the_events_and_the_process() -> None:
    assert run_state([]) == ("not started", False)
    live = [{"kind": "started", "time": 1, "detail": {"pid": __import__("os").getpid()}}]
    assert run_state(live) == ("running", True)
    dead = [{"kind": "started", "time": 1, "detail": {"pid": 2**22 + 12345}}]
    assert run_state(dead)[1] is False and "process is gone" in run_state(dead)[0]
    stopped = live + [{"kind": "stopped", "time": 2, "detail": {"reason": "token budget reached"}}]
    assert run_state(stopped) == (
        "stopped: token budget reached; resume it with warpgym run --resume",
        False,
    )


def test_site_writes_the_page_and_rewrites_only_changed_episodes(tmp_path: Path) -> None:
    store = make_run(tmp_path, live=True)
    site = Site(tmp_path, tmp_path / "view", refresh_s=1, report_every_s=None)
    site.write_page()
    index = site.update()
    data = tmp_path / "view" / "data"
    assert {p.name for p in (tmp_path / "view").iterdir()} == {"index.html", "view.js", "view.css", "data"}
    assert index["live"] and [e["agent"] for e in index["episodes"]] == ["fix-retry", "one-shot", "one-shot"]
    assert [t["label"] for t in index["episodes"][0]["turns"]] == ["wrong", "no code", "correct 2.00x"]
    first = decode((data / "index.js").read_bytes())
    assert first["episodes"][0]["tokens"] == "6,300" and first["episodes"][2]["turns"] == []
    stamps = {p.name: p.stat().st_mtime_ns for p in data.glob("episode-*.js")}
    assert len(stamps) == 3
    third = index["episodes"][2]["id"]
    store.start_episode(third)
    store.add_turn(third, record(1, "no", None, None), "eager")
    site.update()
    after = {p.name: p.stat().st_mtime_ns for p in data.glob("episode-*.js")}
    assert [n for n in after if after[n] != stamps[n]] == [f"episode-{third}.js"]
    doc = decode((data / f"episode-{third}.js").read_bytes())
    assert doc["kind"] == "episode" and len(doc["turns"]) == 1
    site.close()
    # a second viewer trusts the manifest: nothing is rewritten
    again = Site(tmp_path, tmp_path / "view", refresh_s=1, report_every_s=None)
    again.write_page()
    again.update()
    assert {p.name: p.stat().st_mtime_ns for p in data.glob("episode-*.js")} == after
    again.close()
    store.close()


def test_a_run_killed_without_a_word_stops_being_live_with_no_change_to_its_store(tmp_path: Path) -> None:
    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        make_run(tmp_path, pid=runner.pid).close()
        site = Site(tmp_path, tmp_path / "view", refresh_s=0.1, report_every_s=None)
        site.write_page()
        assert site.update()["live"] is True
        runner.kill()
        runner.wait()
        started = time.monotonic()
        site.watch(until_idle=True)  # returns once the run is seen to be over
        assert time.monotonic() - started < 5
        index = decode((tmp_path / "view" / "data" / "index.js").read_bytes())
        assert index["live"] is False and "process is gone" in index["state"]
        site.close()
    finally:
        runner.kill()
        runner.wait()


def test_the_command_writes_the_page_once_and_refuses_a_missing_run(tmp_path: Path, capsys) -> None:
    make_run(tmp_path / "run", live=False).close()
    assert main(["view", str(tmp_path / "run"), "--once", "--no-plots"]) == 0
    assert f"View: {(tmp_path / 'run' / 'view' / 'index.html').as_uri()}" in capsys.readouterr().out
    index = decode((tmp_path / "run" / "view" / "data" / "index.js").read_bytes())
    assert index["live"] is False and "process is gone" in index["state"]
    assert main(["view", str(tmp_path / "nothing")]) == 2
    assert "no run at" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["view", str(tmp_path / "run"), "--refresh"])


def test_the_report_figures_are_drawn_for_the_page_and_not_again_while_the_store_is_unchanged(
    tmp_path: Path,
) -> None:
    store = make_run(tmp_path)
    builder = Builder(tmp_path, base="../", refresh_s=1, report_every_s=0)
    index = builder.index()
    assert index["report"] == "../report.html" and (tmp_path / "report.html").is_file()
    titles = [p["title"] for p in index["plots"]]
    assert "Correct rate and best speedup by turn" in titles
    assert all(p["src"].startswith("../plots/") and (tmp_path / "plots").is_dir() for p in index["plots"])
    drawn = (tmp_path / "report.html").stat().st_mtime_ns
    assert builder.index() is index and (tmp_path / "report.html").stat().st_mtime_ns == drawn
    store.event("stopping", "interrupted")
    assert builder.index() is not index and (tmp_path / "report.html").stat().st_mtime_ns > drawn
    builder.close()
    store.close()
