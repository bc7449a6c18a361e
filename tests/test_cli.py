"""`fastslow score` and `fastslow eval` as a user runs them: real files, exit codes, messages. ``fastslow``
starts a real process, as the user does, for at least one run of each command; the others run the same
command line in this process (``run_cli``, tests/conftest.py), which checks the same behaviour for a tenth
of the CPU time."""

import json
import subprocess
import sys

import pytest
from conftest import run_cli

from fastslow.models.lifecycle.dataset import FIXTURE_FILE


def fastslow(*args, stdin=None):
    """`python -m fastslow.cli ARGS` in a process of its own."""
    return subprocess.run([sys.executable, "-m", "fastslow.cli", *map(str, args)], input=stdin,
                          capture_output=True, timeout=300)


def records(stdout: bytes):
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]


def test_score_jsonl_gives_one_record_per_line_in_order_with_clear_errors(trained, tmp_path):
    lines = [
        '{"id": "a", "query": "把空调调到24度"}',
        '{"id": "b", "query": ""}',
        '{"id": "c", "query": "   "}',
        '{"id": 4, "query": "下一首"}',
        '{"id": "e", "query": "' + "开" * 10_000 + '"}',
        '{"query": "broken',
        '{"id": {"nested": 1}, "query": "开空调"}',
        '{"id": "h", "query": 12}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "i", "query": "\xff\xfe"}\n')
    out = tmp_path / "out.jsonl"
    result = run_cli("score", path, "-o", out, "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    recs = records(out.read_bytes())
    assert len(recs) == 9
    assert [r.get("id") for r in recs] == ["a", "b", "c", 4, "e", None, {"nested": 1}, "h", None]
    assert recs[0]["label"] == "快" and "error" not in recs[0]
    assert recs[1]["error"] == "line 2: query: empty or whitespace only"
    assert "query: empty" in recs[2]["error"]
    assert "too long: 10000 characters" in recs[4]["error"]
    assert recs[5]["line"] == 6 and "broken JSON" in recs[5]["error"]
    assert "id: must be a string or an integer" in recs[6]["error"]
    assert "query: must be a string" in recs[7]["error"]
    assert "line 9: not valid UTF-8" in recs[8]["error"]
    assert b"9 rows read, 2 scored, 7 errors" in result.stderr


def test_score_csv_to_stdout(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("id,query,endpoint\n1,打开座椅加热,car\n2,,\n3,给我讲个笑话,\n", encoding="utf-8")
    result = run_cli("score", path, "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    recs = records(result.stdout)
    assert [r["id"] for r in recs] == ["1", "2", "3"]
    assert recs[0]["label"] == "快" and "error" in recs[1] and recs[2]["label"] == "模糊"


def test_score_csv_without_query_column_fails_with_a_clear_message(trained, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("text,id\n开空调,1\n", encoding="utf-8")
    result = run_cli("score", path, "--model", trained["path"])
    assert result.returncode == 2
    assert b"CSV has no 'query' column (columns: text, id)" in result.stderr
    assert result.stdout == b""


def test_score_reads_standard_input(trained):
    """A real process reading a real pipe, writing the records to another."""
    result = fastslow("score", "-", "--model", trained["path"], stdin='{"query": "暂停"}\n'.encode())
    assert result.returncode == 0 and records(result.stdout)[0]["label"] == "快"


def test_score_refuses_a_missing_model(tmp_path):
    result = fastslow("score", "-", "--model", tmp_path / "none.joblib", stdin=b"")
    assert result.returncode == 2 and b"model file not found" in result.stderr


def test_eval_prints_the_metrics_of_a_labelled_file(trained):
    result = fastslow("eval", FIXTURE_FILE, "--model", trained["path"], "--json")
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert metrics["eval_label_accuracy"] == trained["metrics"]["fixture_label_accuracy"]
    assert b"per reason code" in result.stdout


def test_eval_names_file_and_row_of_bad_labels(trained, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "开空调", "label": "快", "primary_reason_code": "DIRECT_ACTION"}\n'
                    '{"query": "开空调", "label": "慢", "primary_reason_code": "DIRECT_ACTION"}\n', encoding="utf-8")
    result = run_cli("eval", path, "--model", trained["path"])
    assert result.returncode == 2
    assert f"{path}:2: label 慢 disagrees with DIRECT_ACTION".encode() in result.stderr


@pytest.mark.parametrize("run", [
    lambda: subprocess.run([sys.executable, "train.py", "--help"], capture_output=True, timeout=120),  # the script
    lambda: run_cli("train", "--help"),  # `fastslow train`
], ids=["train.py", "fastslow train"])
def test_train_entry_points_agree(run):
    result = run()
    assert result.returncode == 0 and b"--tracking-uri" in result.stdout


def test_robustness_prints_the_share_kept_per_kind_and_logs_a_run(trained, tmp_path, store_in):
    """A real process: the run is logged by the command's own MLflow client, not by this process's."""
    import mlflow

    from fastslow.models.robustness import robustness

    path = tmp_path / "queries.jsonl"
    rows = [{"query": "把温度调到24度"}, {"query": "那个灯开一下"}, {"query": "脚底下好冷"}, {"query": ""}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    uri = store_in(tmp_path)
    flips = tmp_path / "flips.jsonl"
    result = fastslow("robustness", path, "--model", trained["path"], "--tracking-uri", uri, "--flips", flips,
                      "--seed", "3")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    expected = robustness(trained["model"], rows[:3], seed=3)
    for kind in expected.total:
        assert f"{kind:<24} {expected.total[kind]:>9} {expected.share(kind):>11.3f}" in out
    assert f"overall{'':<17} {sum(expected.total.values()):>9} {expected.overall:>11.3f}" in out
    assert "1 rows skipped (line 4: " in out
    assert len(flips.read_text(encoding="utf-8").splitlines()) == len(expected.flips)
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["fastslow"])
    assert len(runs) == 1
    assert runs.iloc[0]["metrics.robustness"] == round(expected.overall, 4)
    assert runs.iloc[0]["params.robustness_rows"] == "3"


def test_the_robustness_table_names_each_target_it_misses():
    from fastslow.models.robustness import KIND_TARGETS, ROBUSTNESS_TARGET, Robustness

    short = Robustness(rows=10, total={"filler": 100, "asr": 100}, stayed={"filler": 100, "asr": 96})
    lines = short.table().splitlines()
    assert lines[2].split()[:3] == ["asr", "100", "0.960"] and f"(target ≥ {KIND_TARGETS['asr']})" in lines[2]
    assert lines[3].startswith("overall") and f"(target ≥ {ROBUSTNESS_TARGET})" in lines[3]
    assert "target" not in lines[1]
    met = Robustness(rows=10, total={"filler": 100, "asr": 100}, stayed={"filler": 100, "asr": 100})
    assert "target" not in met.table()


def test_robustness_refuses_an_unknown_kind(trained, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "打开空调"}\n', encoding="utf-8")
    result = run_cli("robustness", path, "--model", trained["path"], "--kinds", "whisper", "--no-mlflow")
    assert result.returncode == 2
    assert "whisper" in result.stderr.decode()
