"""`fastslow score` under attack: a lone surrogate, a stray CSV quote, a killed parent, a broken
model or manifest, clashing paths and absurd options each get a clear message or their own error record,
never a traceback, a hang, an orphaned worker or a silently wrong file. Real files; real processes for the
runs that are stopped or killed, the other command lines in process (``run_cli``, tests/conftest.py)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastslow.data.sinks import REVIEW, read_records
from fastslow.models.lifecycle.manifest import sha256_of
from fastslow.models.lifecycle.signing import sign

from conftest import copy_model, run_cli
from test_batch import log_lines, run
from test_cli import records

# --------------------------------------------------------------------------------------------------
# 1. a lone surrogate is its row's error, in every output format

SURROGATE_LINES = [
    r'{"id": "ok", "query": "打开空调"}',
    r'{"id": "q", "query": "打开\ud800空调"}',
    r'{"id": "\udfff", "query": "下一首"}',
    r'{"id": "c", "query": "好的", "context": [{"role": "user", "system": null, "text": "\ud83d"}]}',
    r'{"id": "pair", "query": "打开空调\ud83d\ude00"}',  # a valid pair (an emoji): scored
    r'{"id": "k", "query": "开空调", "\ud800": 1}',
    r'{"id": "t", "query": "上车时打开空调", "existing_tasks": [{"id": "x", "name": "a\udc00"}]}',
    r'{"id": "escaped", "query": "打开空调 \\ud800"}',  # an escaped backslash: the text \ud800, scored
]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_lone_surrogate_is_its_rows_error_record_in_every_output_format(trained, tmp_path, fmt):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(SURROGATE_LINES) + "\n", encoding="utf-8")
    out = tmp_path / f"out.{fmt}"
    review = tmp_path / f"review.{fmt}"
    status, err = run(tmp_path, path, out, model=trained["path"], review_out=review)
    assert status == 0, err
    recs = list(read_records(out))
    assert [r.get("id") for r in recs] == ["ok", None, None, None, "pair", None, None, "escaped"]
    assert [r.get("error") for r in recs] == [
        None,
        "line 2: query: a lone surrogate (\\ud800) is not Unicode text",
        "line 3: id: a lone surrogate (\\udfff) is not Unicode text",
        "line 4: context[0].text: a lone surrogate (\\ud83d) is not Unicode text",
        None,
        "line 6: a field name: a lone surrogate (\\ud800) is not Unicode text",
        "line 7: existing_tasks[0].name: a lone surrogate (\\udc00) is not Unicode text",
        None,
    ]
    assert recs[4]["query"] == "打开空调\U0001F600" and recs[7]["query"] == "打开空调 \\ud800"
    assert "8 rows read, 3 scored, 5 errors, 8 records written" in err


def test_a_lone_surrogate_in_a_json_cell_of_a_csv_is_its_rows_error(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('id,query,context\n1,打开空调,\n2,好的,"[{""role"": ""user"", ""text"": ""\\ud800""}]"\n'
                    "3,下一首,\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    status, err = run(tmp_path, path, out, model=trained["path"], chunk_size=1)
    assert status == 0, err
    recs = list(read_records(out))
    assert [r.get("error") for r in recs] == [
        None, "row 3: context[0].text: a lone surrogate (\\ud800) is not Unicode text", None]


# --------------------------------------------------------------------------------------------------
# 2. workers never outlive their parent

def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def _descendants(pid: int) -> set[int]:
    table, found, todo = _processes(), set(), [pid]
    while todo:
        parent = todo.pop()
        children = {p for p, (ppid, _) in table.items() if ppid == parent}
        todo.extend(children - found)
        found |= children
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _processes()
    return {p for p in pids if p in table and table[p][1] != "Z"}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_no_worker_outlives_a_stopped_or_killed_parent_and_sigterm_leaves_a_resumable_run(trained, tmp_path,
                                                                                          signum):
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(log_lines(4000)) + "\n", encoding="utf-8")
    out, progress = tmp_path / "out.jsonl", tmp_path / "out.jsonl.progress.json"
    options = ["--model", trained["path"], "--chunk-size", "50"]
    argv = [sys.executable, "-m", "fastslow.cli", "score", str(path), "-o", str(out), "--jobs", "2",
            *map(str, options)]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, start_new_session=True)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None:
            workers = _descendants(process.pid) | workers
            if progress.exists() and json.loads(progress.read_text() or "{}").get("chunks", 0) >= 5:
                break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be stopped"
        workers |= _descendants(process.pid)
        assert len(workers) >= 2  # two workers (and multiprocessing's resource tracker)
        os.kill(process.pid, signum)  # the parent alone, as `kill PID` does
        status = process.wait(timeout=60)
        deadline = time.monotonic() + 5
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(workers), f"processes outlived their parent: {_alive(workers)}"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    stderr = process.stderr.read().decode()
    assert not out.exists()
    if signum == signal.SIGKILL:
        return
    assert status == 128 + signum, stderr
    assert f"interrupted; rerun with --resume to continue {out}" in stderr and "Traceback" not in stderr
    done = json.loads(progress.read_text())["chunks"]
    assert 5 <= done < 80
    if signum == signal.SIGINT:
        return  # the same progress file as after SIGTERM: resuming it once (below) holds for both
    # resumed by one process: the run's chunks, not its workers, are what a resume continues (and two more
    # workers loading the model cost ~9 s of CPU; test_batch.py resumes a killed run with two)
    resumed = run_cli("score", path, "-o", out, "--jobs", "1", "--resume", *options)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {out} after {done} chunks".encode() in resumed.stderr
    clean = tmp_path / "clean.jsonl"
    status, err = run(tmp_path, path, clean, model=trained["path"], chunk_size=50)
    assert status == 0, err
    assert out.read_bytes() == clean.read_bytes()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_a_run_stopped_while_its_workers_start_exits_and_leaves_no_worker(trained, tmp_path):
    """SIGTERM while the workers are still loading the model: the run says so and exits (it used to hang
    for ever at exit, a thread of its pool blocked writing to a pipe that no worker read)."""
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(log_lines(20000)) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "fastslow.cli", "score", str(path), "-o", str(out), "--jobs", "2",
            "--model", str(trained["path"]), "--chunk-size", "500"]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, start_new_session=True)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None and len(workers) < 2:
            workers |= _descendants(process.pid)
            time.sleep(0.02)
        assert process.poll() is None and len(workers) >= 2, "the workers did not start"
        os.kill(process.pid, signal.SIGTERM)
        status = process.wait(timeout=60)
        deadline = time.monotonic() + 5
        while _alive(workers | _descendants(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(workers), f"processes outlived their parent: {_alive(workers)}"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    stderr = process.stderr.read().decode()
    assert status == 128 + signal.SIGTERM, stderr
    assert f"interrupted; rerun with --resume to continue {out}" in stderr and "Traceback" not in stderr
    assert not out.exists()


# --------------------------------------------------------------------------------------------------
# 3. a number JSON cannot hold is its row's error and is never written back

NON_FINITE_LINES = [
    '{"id": 1e400, "query": "打开空调"}',
    '{"id": -1e400, "query": ""}',
    '{"id": NaN, "query": "下一首"}',
    '{"id": [1, Infinity], "query": "下一首"}',
    '{"id": 5, "query": "打开空调", "context": [{"role": "user", "system": null, "text": 1e999}]}',
    '{"id": 6, "query": "打开空调"}',
    '{"id": 7, "query": "打开空调", "endpoint": -1e400}',
]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_non_finite_number_is_its_rows_error_and_never_written(trained, tmp_path, fmt):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(NON_FINITE_LINES) + "\n", encoding="utf-8")
    out, review = tmp_path / f"out.{fmt}", tmp_path / f"review.{fmt}"
    status, err = run(tmp_path, path, out, model=trained["path"], review_out=review)
    assert status == 0, err
    recs = list(read_records(out))
    as_written = (lambda i: i) if fmt == "jsonl" else str
    assert [r.get("id") for r in recs] == [None, None, None, None, as_written(5), as_written(6), as_written(7)]
    errors = [
        "line 1: id: Infinity is not valid JSON",
        "line 2: query: empty or whitespace only",
        "line 3: id: NaN is not valid JSON",
        "line 4: id[1]: Infinity is not valid JSON",
        "line 5: context[0].text: Infinity is not valid JSON",
        None,
        "line 7: endpoint: -Infinity is not valid JSON",
    ]
    assert [r.get("error") for r in recs] == errors
    for written in (out, review):
        text = written.read_text(encoding="utf-8")
        if fmt == "jsonl":
            for line in text.splitlines():
                json.loads(line, parse_constant=pytest.fail)  # no NaN, Infinity or -Infinity anywhere
        for error in filter(None, errors):  # what is left once the messages that name the values are gone
            text = text.replace(error, "")
        assert not re.search(r"NaN|Infinity|1e400|\binf\b", text), text
    reviewed = list(read_records(review, layout=REVIEW))
    assert [(r["line"], r["context"], r["endpoint"]) for r in reviewed if r["review_reason"] == "error"] == [
        (1, None, None), (2, None, None), (3, None, None), (4, None, None), (5, None, None), (7, None, None)]
    assert "7 rows read, 1 scored, 6 errors, 7 records written" in err


# --------------------------------------------------------------------------------------------------
# 5. a stray quote in a CSV fails the run, naming the row where it opened

def test_a_stray_quote_in_a_long_csv_fails_the_run_naming_its_row(trained, tmp_path):
    rows = [f"{i},{'打开空调' if i % 2 else '下一首'}" for i in range(3, 10_003)]
    path = tmp_path / "in.csv"
    path.write_text("id,query\n" + '2,"打开空调\n' + "\n".join(rows) + "\n", encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 10_002
    out = tmp_path / "out.jsonl"
    result = run_cli("score", path, "-o", out, "--model", trained["path"], "--jobs", "1")
    assert result.returncode == 2, result.stderr
    assert (b"row 2 (line 2): a quoted field opened here is not closed within 50 lines (a stray '\"'?)"
            in result.stderr), result.stderr
    assert b"Traceback" not in result.stderr and not out.exists()


def test_a_quote_left_open_to_the_end_of_a_short_csv_fails_the_run(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('id,query\n1,打开空调\n2,下一首\n3,"导航去加油站\n4,打开座椅加热\n5,暂停\n', encoding="utf-8")
    result = run_cli("score", path, "--model", trained["path"])
    assert result.returncode == 2
    assert (b"row 4 (line 4): a quoted field opened here is not closed by the end of the file (a stray '\"'?)"
            in result.stderr), result.stderr
    assert b"Traceback" not in result.stderr


def test_quoted_cells_over_several_lines_and_a_last_row_without_newline_still_read(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('id,query\n1,"打开\n空调"\n2,"说""你好"""\n3,"下一首"', encoding="utf-8")
    status, err = run(tmp_path, path, tmp_path / "out.jsonl", model=trained["path"])
    assert status == 0, err
    recs = list(read_records(tmp_path / "out.jsonl"))
    assert [r["query"] for r in recs] == ["打开\n空调", '说"你好"', "下一首"]


# --------------------------------------------------------------------------------------------------
# 7. messages instead of tracebacks

@pytest.mark.parametrize("manifest, says", [
    (b"{not json", b"manifest fastslow.manifest.json is not valid JSON"),
    (b"", b"manifest fastslow.manifest.json is not valid JSON"),
    (b"\xff\xfe{}", b"manifest fastslow.manifest.json is not UTF-8 text"),
    (b"[]", b"manifest fastslow.manifest.json must hold a JSON object"),
    (b"{}", b"manifest fastslow.manifest.json has no sha256"),
    (b'{"sha256": 5}', b"manifest fastslow.manifest.json has no sha256"),
], ids=["broken", "empty", "not-utf8", "list", "no-sha256", "sha256-a-number"])
def test_score_reports_a_broken_manifest(trained, tmp_path, manifest, says):
    model = copy_model(trained, tmp_path / "m")
    (tmp_path / "m" / "fastslow.manifest.json").write_bytes(manifest)
    result = run_cli("score", "-", "--model", model, stdin='{"query": "暂停"}\n'.encode())
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_score_reports_a_truncated_model_whose_manifest_matches(trained, tmp_path, jobs, signing_key):
    """A damaged file whose manifest (and its signature) vouch for it: the unpickling error is a message."""
    model = copy_model(trained, tmp_path / "m")
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    manifest_file = tmp_path / "m" / "fastslow.manifest.json"
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest = {**manifest, "sha256": sha256_of(model)}
    manifest["signature"] = sign(manifest, signing_key)
    manifest_file.write_text(json.dumps(manifest), encoding="utf-8")
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(log_lines(6)) + "\n", encoding="utf-8")
    result = run_cli("score", path, "-o", tmp_path / "out.jsonl", "--model", model, "--jobs", jobs,
                     "--chunk-size", "2")
    assert result.returncode == 2, result.stderr
    assert f"fastslow score: cannot load {model}: ".encode() in result.stderr, result.stderr
    assert b"Traceback" not in result.stderr and not (tmp_path / "out.jsonl").exists()


def test_score_reports_an_output_folder_it_cannot_write(trained, tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root ignores the mode; sysfs refuses a new file even to root
        folder = Path("/sys")
    result = run_cli("score", "-", "-o", folder / "out.jsonl", "--model", trained["path"],
                     stdin='{"query": "暂停"}\n'.encode())
    assert result.returncode == 2, result.stderr
    assert f"fastslow score: cannot write {folder / 'out.jsonl.partial'}: ".encode() in result.stderr
    assert b"Traceback" not in result.stderr


def test_a_refused_review_file_leaves_no_partial_output_behind(trained, tmp_path):
    (tmp_path / "review.jsonl.partial").mkdir()  # the review file cannot be opened, even by root
    out = tmp_path / "out.jsonl"
    result = run_cli("score", "-", "-o", out, "--review-out", tmp_path / "review.jsonl", "--model", trained["path"],
                     stdin='{"query": "暂停"}\n'.encode())
    assert result.returncode == 2, result.stderr
    assert f"cannot write {tmp_path / 'review.jsonl.partial'}".encode() in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["review.jsonl.partial"]


def test_score_refuses_an_output_that_is_the_review_file_or_the_input(trained, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(log_lines(3)) + "\n", encoding="utf-8")
    before = path.read_bytes()
    out = tmp_path / "out.jsonl"
    result = run_cli("score", path, "-o", out, "--review-out", tmp_path / "." / "out.jsonl", "--model",
                     trained["path"])
    assert result.returncode == 2 and b"--review-out and -o name the same file" in result.stderr, result.stderr
    assert not out.exists() and not (tmp_path / "out.jsonl.partial").exists()
    for option in ("-o", "--review-out"):
        result = run_cli("score", path, option, path, "--model", trained["path"])
        assert result.returncode == 2, result.stderr
        assert f"{option} {path} is the input file".encode() in result.stderr
        assert path.read_bytes() == before


@pytest.mark.parametrize("option, target", [("-o", "folder"), ("-o", "out.txt"), ("--review-out", "review.txt")])
def test_an_output_whose_format_cannot_be_told_is_refused_naming_the_option(trained, tmp_path, option, target):
    (tmp_path / "folder").mkdir()
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(log_lines(3)) + "\n", encoding="utf-8")
    argv = ["score", path, "--model", trained["path"], option, tmp_path / target]
    if option == "--review-out":
        argv += ["-o", tmp_path / "out.jsonl"]
    result = run_cli(*argv)
    assert result.returncode == 2, result.stderr
    assert (f"fastslow score: {option}: cannot tell the format of {tmp_path / target} from its extension"
            .encode() in result.stderr), result.stderr  # not the input's name, as if the input were at fault
    assert b"Traceback" not in result.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["folder", "in.jsonl"]


def test_a_csv_with_a_byte_order_mark_keeps_its_id_column(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes("\ufeffid,query\nr1,打开空调\n".encode("utf-8"))
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes('\ufeff{"id": "j1", "query": "下一首"}\n'.encode("utf-8"))
    for source, expected in ((path, "r1"), (jsonl, "j1")):
        result = run_cli("score", source, "--model", trained["path"])
        assert result.returncode == 0, result.stderr
        assert records(result.stdout)[0]["id"] == expected and "error" not in records(result.stdout)[0]


@pytest.mark.parametrize("argv, says", [
    (["score", "-", "--jobs", "0"], "--jobs/-j: must be a whole number of at least 1, got '0'"),
    (["score", "-", "--jobs", "-1"], "--jobs/-j: must be a whole number of at least 1, got '-1'"),
    (["score", "-", "--chunk-size", "0"], "--chunk-size/--batch-size: must be a whole number of at least 1"),
    (["score", "-", "--review-below", "nan"], "--review-below: must be a number from 0 to 1, got 'nan'"),
    (["score", "-", "--review-below", "1.5"], "--review-below: must be a number from 0 to 1, got '1.5'"),
    (["serve", "--workers", "0"], "--workers: must be a whole number of at least 1, got '0'"),
    (["serve", "--max-batch-items", "0"], "--max-batch-items: must be a whole number of at least 1, got '0'"),
    (["serve", "--max-body-bytes", "-1"], "--max-body-bytes: must be a whole number of at least 1, got '-1'"),
    (["score", "-", "--memo", "-5"], "--memo: must be a whole number of at least 0, got '-5'"),
])
def test_the_argument_parser_refuses_absurd_numbers(argv, says, capsys):
    from fastslow.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and says in capsys.readouterr().err


def test_a_huge_querys_echo_in_its_error_record_is_capped(trained, tmp_path):
    path = tmp_path / "in.jsonl"
    size = 50 << 20
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"id": "ok", "query": "打开空调"}\n{"id": "huge", "query": "' + "a" * size + '"}\n')
    out = tmp_path / "out.jsonl"
    status, err = run(tmp_path, path, out, model=trained["path"], review_out=tmp_path / "review.jsonl")
    assert status == 0, err
    assert out.stat().st_size < 2000 and (tmp_path / "review.jsonl").stat().st_size < 2000
    huge = list(read_records(out))[1]
    assert huge["query"] == "a" * 200 + f"… ({size} characters)"
    assert huge["error"] == f"line 2: query: too long: {size} characters (limit 1000)"


def test_a_huge_wrong_value_is_repeated_in_its_error_only_as_its_head(trained, tmp_path):
    """Not only the query: an endpoint, a turn's role or system, a task id or a field name of a megabyte."""
    big = "a" * (1 << 20)
    head = "a" * 200 + f"… ({1 << 20} characters)"
    rows = [{"id": 1, "query": "打开空调", "endpoint": big},
            {"id": 2, "query": "打开空调", "context": [{"role": big, "text": "好的"}]},
            {"id": 3, "query": "打开空调", "context": [{"role": "user", "system": big, "text": "好的"}]},
            {"id": 4, "query": "打开空调", "existing_tasks": [{"id": [big]}]},
            {"id": 5, "query": "打开空调", "existing_tasks": [{"id": "t", big: 1}]}]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, review = tmp_path / "out.jsonl", tmp_path / "review.jsonl"
    status, err = run(tmp_path, path, out, model=trained["path"], review_out=review)
    assert status == 0, err
    assert [r["error"] for r in read_records(out)] == [
        f"line 1: endpoint: must be one of ['car', 'speaker', 'home'] or null, got '{head}'",
        f"line 2: context[0].role: must be one of ['user', 'assistant'], got '{head}'",
        f"line 3: context[0].system: must be 'fast', 'slow' or null, got '{head}'",
        "line 4: existing_tasks[0].id: must be a non-empty string or an integer, got list",
        f"line 5: existing_tasks[0].{head}: unknown field (allowed: id, name, condition, querys)",
    ]
    assert out.stat().st_size < 5000


def test_blank_jsonl_lines_are_rows_with_an_error_record(trained, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "query": "打开空调"}\n\n   \n{"id": "b", "query": "下一首"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    status, err = run(tmp_path, path, out, model=trained["path"])
    assert status == 0, err
    recs = list(read_records(out))
    assert [r.get("id") for r in recs] == ["a", None, None, "b"]
    assert [r.get("error") for r in recs[1:3]] == ["line 2: empty line", "line 3: empty line"]
    assert "4 rows read, 2 scored, 2 errors, 4 records written" in err


def test_score_reads_the_model_from_fastslow_model_like_serve(trained, tmp_path):
    result = run_cli("score", "-", env={"FASTSLOW_MODEL": str(trained["path"])}, cwd=tmp_path,
                     stdin='{"query": "暂停"}\n'.encode())
    assert result.returncode == 0, result.stderr
    assert records(result.stdout)[0]["label"] == "快"


def test_after_a_kill_only_the_pool_managers_error_is_silenced(monkeypatch):
    import threading

    from fastslow.serve.batch import silence_pool_manager_after_kill

    seen = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append((args.thread.name, args.exc_type)))
    silence_pool_manager_after_kill()

    def fail():
        raise KeyError("gone")

    for name in ("ExecutorManagerThread", "another-thread"):
        thread = threading.Thread(target=fail, name=name)
        thread.start()
        thread.join()
    assert seen == [("another-thread", KeyError)]
