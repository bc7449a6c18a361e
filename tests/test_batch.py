"""`fastslow score` on logs: every row accounted for, order kept on several cores, resumable after a
kill, three formats in and out, rows for review. Real files; real processes where it matters."""

import io
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from fastslow.serve.batch import BatchError, BatchOptions, Progress, run_batch
from fastslow.data.io import RowSource
from fastslow.data.sinks import REVIEW, JsonlSink, read_records

from conftest import copy_model, run_cli
from test_cli import records

QUERIES = ["把空调调到24度", "下一首", "给我讲个笑话", "上车时打开空调，下车时关闭空调", "太冷了，调一下空调",
           "导航去最近的加油站", "查一下明天北京的天气再决定要不要开窗", "那个呢", "打开座椅加热", "帮我订一张去上海的机票"]


def log_lines(n: int) -> list[str]:
    return [json.dumps({"id": f"q{i}", "query": QUERIES[i % len(QUERIES)], "endpoint": "car"}, ensure_ascii=False)
            for i in range(n)]


def run(tmp_path, input_path, output=None, **options) -> tuple[int, str]:
    """run_batch in this process (--jobs 1 unless said), its exit status and standard error."""
    err = io.StringIO()
    status = run_batch(BatchOptions(input=str(input_path), output=output, jobs=options.pop("jobs", 1),
                                    model=options.pop("model"), **options), stderr=err)
    return status, err.getvalue()


def test_a_corrupted_log_reconciles_exactly_with_line_numbers(trained, tmp_path):
    megabyte_line = json.dumps({"id": "huge", "query": "开" * (1 << 20)}, ensure_ascii=False).encode()
    lines = [
        b'{"id": "ok1", "query": "\xe6\x89\x93\xe5\xbc\x80\xe7\xa9\xba\xe8\xb0\x83"}',  # 打开空调
        b'{"id": "broken", "query": "\xe5\xbc\x80',                                    # cut off mid-line
        b'{"id": "no-query"}',                                                          # missing field
        b'{"id": "empty", "query": ""}',
        b'{"id": "blank", "query": "   "}',
        b'\xff\xfe{"id": "latin", "query": "caf\xe9"}',                                  # not UTF-8
        b'',                                                                            # blank: a row too
        megabyte_line,                                                                  # a 1 MB line
        b'[1, 2, 3]',
        b'{"id": "ok2", "query": "\xe4\xb8\x8b\xe4\xb8\x80\xe9\xa6\x96"}',               # 下一首
        b'{"query": null, "id": "null-query"}',
    ]
    path = tmp_path / "corrupted.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    result = run_cli("score", path, "-o", out, "--model", trained["path"], "--jobs", "1", "--chunk-size", "3")
    assert result.returncode == 0, result.stderr
    recs = records(out.read_bytes())
    assert len(recs) == len(lines) == 11
    errors = [r for r in recs if "error" in r]
    assert [r["line"] for r in errors] == [2, 3, 4, 5, 6, 7, 8, 9, 11]
    assert all(r["error"].startswith(f"line {r['line']}: ") for r in errors)
    assert [r["id"] for r in recs if "error" not in r] == ["ok1", "ok2"]
    assert "too long: 1048576 characters" in errors[6]["error"] and errors[6]["id"] == "huge"
    assert "not valid UTF-8" in errors[4]["error"] and "broken JSON" in errors[0]["error"]
    assert "query: missing" in errors[1]["error"] and "query: empty" in errors[2]["error"]
    assert errors[5]["error"] == "line 7: empty line"
    assert b"11 rows read, 2 scored, 9 errors, 11 records written" in result.stderr
    assert not (tmp_path / "out.jsonl.partial").exists() and not (tmp_path / "out.jsonl.progress.json").exists()


def test_a_corrupted_csv_reconciles_exactly(trained, tmp_path):
    path = tmp_path / "corrupted.csv"
    path.write_bytes("id,query,context\n1,打开空调,\n2,,\n3,好的,{broken\n".encode() + b"4,\xff\xfe,\n"
                     + b"5,a,b,c\n6," + ("开" * (1 << 19)).encode() + ",\n7,下一首,\n".encode())
    out = tmp_path / "out.csv"
    status, err = run(tmp_path, path, out, model=trained["path"], chunk_size=2)
    assert status == 0, err
    recs = list(read_records(out))
    assert [r["id"] for r in recs] == ["1", "2", None, None, None, "6", "7"]
    assert [r.get("line") for r in recs] == [None, 3, 4, 5, 6, 7, None]
    assert "7 rows read, 2 scored, 5 errors, 7 records written" in err


def test_runs_in_one_process_check_the_model_file_every_run_and_load_it_again_when_it_changed(trained, tmp_path):
    """A notebook or a tool scoring several runs in one process keeps the model of its last run only while
    the file holds the same bytes, and every run checks the file first."""
    from fastslow.models.lifecycle.bundle import load_bundle, save_bundle

    path = copy_model(trained, tmp_path)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": 1, "query": "打开空调"}\n', encoding="utf-8")

    def versions():
        done = run_cli("score", queries, "--model", path, "--jobs", "1")
        assert done.returncode == 0, done.stderr
        return [r["model_version"] for r in records(done.stdout)]

    assert versions() == versions() == [trained["model"].version]
    other = load_bundle(path)
    other.version = "fastslow-another-file"
    save_bundle(other, path)  # new bytes at the same path
    assert versions() == ["fastslow-another-file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    refused = run_cli("score", queries, "--model", path, "--jobs", "1")
    assert refused.returncode == 2 and b"does not match the manifest" in refused.stderr, refused.stderr


def test_jobs_2_keeps_input_order_and_equals_jobs_1(trained, tmp_path):
    """Bad lines among good ones keep their line numbers in the workers' chunks too."""
    lines = [line.encode("utf-8") for line in log_lines(300)]
    bad = {41: b'{"id": "broken", "query": "\xe5\xbc\x80', 120: b'\xff\xfe{"query": "caf\xe9"}', 200: b"",
           299: b'{"id": "no-query"}'}
    for at in sorted(bad, reverse=True):
        lines.insert(at, bad[at])
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert run(tmp_path, path, one, model=trained["path"], chunk_size=40)[0] == 0
    second = run_cli("score", path, "-o", two, "--model", trained["path"], "--jobs", "2", "--chunk-size", "40")
    assert second.returncode == 0, second.stderr
    got = records(two.read_bytes())
    assert [r["id"] for r in got if "error" not in r] == [f"q{i}" for i in range(300)]
    assert [r["line"] for r in got if "error" in r] == [n for n, line in enumerate(lines, 1) if line in bad.values()]
    assert two.read_bytes() == one.read_bytes()


def test_kill_and_resume_gives_the_bytes_of_an_uninterrupted_run(trained, tmp_path):
    output, review = "out.jsonl", "review.csv"  # both kinds of truncated-and-appended text output
    path = tmp_path / "big.jsonl"
    lines = log_lines(4000)
    lines[123] = '{"id": "bad", "query": ""}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = ["--model", trained["path"], "--chunk-size", "50", "--review-below", "0.9"]
    clean_out, clean_review = tmp_path / f"clean-{output}", tmp_path / f"clean-{review}"
    clean = run_cli("score", path, "-o", clean_out, "--review-out", clean_review, "--jobs", "1", *options)
    assert clean.returncode == 0, clean.stderr

    out, review_out = tmp_path / output, tmp_path / review
    progress = tmp_path / f"{output}.progress.json"
    argv = [sys.executable, "-m", "fastslow.cli", "score", str(path), "-o", str(out), "--review-out", str(review_out),
            "--jobs", "2", *map(str, options)]
    process = subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if progress.exists() and json.loads(progress.read_text() or "{}").get("chunks", 0) >= 5:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the whole process group: main process and workers
        process.wait()
    done = json.loads(progress.read_text())["chunks"]
    assert 5 <= done < 80 and not out.exists()
    assert (tmp_path / f"{output}.partial").stat().st_size >= json.loads(progress.read_text())["output_bytes"]

    # resumed in this process (the killed run's workers were the point above; --jobs 2 equals --jobs 1 below)
    resumed = run_cli("score", path, "-o", out, "--review-out", review_out, "--jobs", "1", "--resume", *options)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {out} after {done} chunks ({done * 50} rows)".encode() in resumed.stderr
    assert b"4000 rows read, 3999 scored, 1 errors, 4000 records written" in resumed.stderr
    assert out.read_bytes() == clean_out.read_bytes()
    assert review_out.read_bytes() == clean_review.read_bytes()
    assert not progress.exists() and not (tmp_path / f"{output}.partial").exists()


def test_resume_refuses_a_changed_input_and_parquet_output(trained, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(log_lines(30)) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").write_bytes(b"")
    (tmp_path / "out.jsonl.progress.json").write_text(json.dumps(
        {"identity": {"input": {"path": str(path), "size": 1}}, "chunks": 1, "version": 1}))
    with pytest.raises(BatchError, match="cannot resume: the input, model_sha256, options differ"):
        run(tmp_path, path, out, model=trained["path"], resume=True)
    with pytest.raises(BatchError, match="a Parquet file is readable only once complete"):
        run(tmp_path, path, tmp_path / "out.parquet", model=trained["path"], resume=True)
    result = run_cli("score", "-", "--model", trained["path"], "--resume", stdin=b"")
    assert result.returncode == 2 and b"--resume needs -o" in result.stderr


INPUT_ROWS = [
    {"id": "r1", "query": "把空调调到24度", "endpoint": "car", "context": None},
    {"id": "r2", "query": "好的", "endpoint": None,
     "context": [{"role": "assistant", "system": "slow", "text": "要帮你打开车窗吗？"}]},
    {"id": "r3", "query": "", "endpoint": None, "context": None},
    {"id": "r4", "query": "上车时打开空调，下车时关闭空调", "endpoint": "moon", "context": None},
    {"id": "r5", "query": "查一下明天北京的天气再决定要不要开窗", "endpoint": "home", "context": None},
]


def write_input(path, rows, fmt, text_col="query", id_col="id"):
    frame = pd.DataFrame([{text_col if k == "query" else id_col if k == "id" else k: v for k, v in r.items()}
                          for r in rows])
    if fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
        return
    frame["context"] = [json.dumps(c, ensure_ascii=False) if c else None for c in frame["context"]]
    (frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path, index=False))


def test_all_three_formats_round_trip(trained, tmp_path):
    reference = tmp_path / "in.jsonl"
    write_input(reference, INPUT_ROWS, "jsonl")
    assert run(tmp_path, reference, tmp_path / "ref.jsonl", model=trained["path"])[0] == 0
    expected = list(read_records(tmp_path / "ref.jsonl"))
    assert [r.get("label") for r in expected] == ["快", expected[1]["label"], None, None, expected[4]["label"]]
    assert expected[1]["label"] is not None and "endpoint" in expected[3]["error"]
    # CSV cannot tell an empty text from a missing one: the empty query of r3 reads back as null
    csv_expected = [{**r, "query": r["query"] or None} for r in expected]
    for fmt in ("csv", "parquet"):  # JSONL in, each format out, read back
        out = tmp_path / f"out.{fmt}"
        assert run(tmp_path, reference, out, model=trained["path"])[0] == 0
        assert list(read_records(out)) == (csv_expected if fmt == "csv" else expected)
    for fmt in ("csv", "parquet"):  # each format in, with other column names, JSONL out
        source = tmp_path / f"in.{fmt}"
        write_input(source, INPUT_ROWS, fmt, text_col="text", id_col="uid")
        out = tmp_path / f"from-{fmt}.jsonl"
        status, err = run(tmp_path, source, out, model=trained["path"], text_col="text", id_col="uid")
        assert status == 0, err
        got = list(read_records(out))
        strip_line = lambda rs: [{k: v for k, v in r.items() if k != "line"} for r in rs]
        want = [{**r, "error": r["error"].split(": ", 1)[1]} if "error" in r else r for r in expected]
        have = [{**r, "error": r["error"].split(": ", 1)[1]} if "error" in r else r for r in got]
        assert strip_line(have) == strip_line(want), fmt
        assert [r.get("line") for r in got if "error" in r] == ([4, 5] if fmt == "csv" else [3, 4])


def test_a_parquet_without_the_text_column_is_refused(trained, tmp_path):
    path = tmp_path / "in.parquet"
    pd.DataFrame({"utterance": ["开空调"]}).to_parquet(path)
    result = run_cli("score", path, "--model", trained["path"])
    assert result.returncode == 2 and b"Parquet file has no 'query' column (columns: utterance)" in result.stderr


def test_review_out_holds_errors_review_required_and_low_confidence_rows(trained, tmp_path):
    path = tmp_path / "in.jsonl"
    write_input(path, INPUT_ROWS, "jsonl")
    out, review = tmp_path / "out.jsonl", tmp_path / "review.csv"
    assert run(tmp_path, path, out, model=trained["path"])[0] == 0
    # a threshold inside the model's own spread of confidences: some scored rows fall below it, some do not
    confidences = sorted(r["confidence"] for r in read_records(out) if "error" not in r)
    below = (confidences[0] + confidences[-1]) / 2
    status, err = run(tmp_path, path, out, model=trained["path"], review_out=review, review_below=below)
    assert status == 0, err
    recs = list(read_records(out))
    expected = [r["id"] for r in recs if "error" in r or r["review_required"] or r["confidence"] < below]
    rows = list(read_records(review, layout=REVIEW))
    assert [r["id"] for r in rows] == expected and "r3" in expected and 0 < len(rows) < len(recs)
    by_id = {r["id"]: r for r in rows}
    assert by_id["r3"]["review_reason"] == "error" and by_id["r3"]["line"] == 3
    scored = [r for r in rows if r["review_reason"] != "error"]
    assert scored and all(r["predicted_label"] in ("快", "慢", "模糊") and r["confidence"] is not None for r in scored)
    if "r2" in by_id:
        assert by_id["r2"]["context"][0]["text"] == "要帮你打开车窗吗？"
    assert f"{len(rows)} rows for review → {review}" in err


def test_counts_that_do_not_reconcile_leave_no_output_and_fail(trained, tmp_path, monkeypatch):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(log_lines(10)) + "\n", encoding="utf-8")
    monkeypatch.setattr(JsonlSink, "count", staticmethod(lambda payload: payload.count(b"\n") - 1))
    out = tmp_path / "out.jsonl"
    status, err = run(tmp_path, path, out, model=trained["path"])
    assert status == 1 and "10 rows read, 10 scored, 0 errors, 9 records written" in err
    assert "the counts do not reconcile" in err and not out.exists()


def test_the_progress_bar_shows_rows_rate_and_eta_only_when_enabled(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(log_lines(4000)) + "\n", encoding="utf-8")
    source = RowSource(path)
    shown, silent = io.StringIO(), io.StringIO()
    bar, quiet = Progress(source, True, shown, every=0), Progress(source, False, silent, every=0)
    rows = iter(source)
    for _ in range(1000):
        next(rows)
    quiet.update(1000, 1000)
    bar.update(1000, 1000)
    bar.close()
    assert silent.getvalue() == ""
    text = shown.getvalue()
    assert text.startswith("\r1,000 rows  ") and " rows/s  " in text and "%  ETA 0:00:0" in text and text.endswith("\n")
