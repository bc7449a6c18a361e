"""The labelling round trip through Label Studio: `fastslow review` turns a log into tasks (one per distinct
query, the most teaching first, the model's answer pre-annotated) and a labelling config generated from
the taxonomy; `train.py --data` reads Label Studio's export, leaving skipped and unannotated tasks out.

The last test runs the whole loop against a real Label Studio on loopback, started for it by
tools/start_label_studio.sh (Label Studio lives in its own venv, installed on first use) unless the
FASTSLOW_LABEL_STUDIO_* variables name one already running."""

import json
import os
import signal
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import sample_rows, small_train, write_jsonl

from fastslow import cli
from fastslow.models.automation.intents import IntentTaxonomy
from fastslow.models.lifecycle.extra_data import Reference, load_extra
from fastslow.models.lifecycle.label_studio import labelling_config, read_export, review_tasks
from fastslow.models.taxonomy import LABELS, REASON_CODES

CLIENT = Path(__file__).with_name("label_studio_client.py")


def test_the_labelling_config_offers_every_label_reason_code_and_intent():
    view = ET.fromstring(labelling_config())
    choices = {c.get("name"): [x.get("value") for x in c.iter("Choice")] for c in view.iter("Choices")}
    assert choices == {"label": list(LABELS), "primary_reason_code": list(REASON_CODES)}
    assert {c.get("toName") for c in view.iter("Choices")} == {"query"}
    assert [t.get("value") for t in view.iter("Text")] == ["$context_text", "$query"]
    assert [t.get("name") for t in view.iter("TextArea")] == ["automation"]
    headers = " ".join(h.get("value") for h in view.iter("Header"))
    assert all(intent in headers for intent in IntentTaxonomy.load().intents)
    assert "$endpoint" in headers and "$count" in headers


class Answers:
    """A model stand-in: each query's record as given (what review ranks on), the rest filled in."""

    def __init__(self, records):
        self.records = records
        self.scored = []

    def score(self, items):
        self.scored += [i["query"] for i in items]
        return [{"query": i["query"], "label": "快", "primary_reason_code": "DIRECT_ACTION", "reason_codes": ["DIRECT_ACTION"],
                 "automation": [], "model_version": "fastslow-test", **self.records[i["query"].strip(" 。")]}
                for i in items]


def test_review_makes_one_task_per_distinct_query_with_its_count_the_most_teaching_first():
    model = Answers({"打开空调": {"confidence": 0.95},
                     "明天下雨吗": {"confidence": 0.55, "label": "模糊", "primary_reason_code": "OPEN_CHAT_OR_QA"},
                     "到家时打开空调": {"confidence": 0.9, "automation": [{"condition": "到家时", "querys": [
                         {"subquery": "打开空调", "intent": "设备控制"}]}]},
                     "放首歌": {"confidence": 0.6}})
    log = [(1, {"query": "打开空调"}, None), (2, {"query": "打开空调。"}, None), (3, {"query": " 打开空调"}, None),
           (4, {"query": "明天下雨吗", "endpoint": "car"}, None), (5, {"query": ""}, None), (6, None, "line 6: bad JSON"),
           (7, {"query": "到家时打开空调", "context": [{"role": "assistant", "system": "slow", "text": "好的"}]}, None),
           (8, {"query": "放首歌"}, None), (9, {"query": "明天下雨吗", "endpoint": "car"}, None)]
    tasks, summary = review_tasks(model, log)
    assert (summary.rows, summary.distinct, summary.tasks) == (9, 4, 4)
    assert summary.left_out == {"no query": 1, "unreadable row": 1}
    assert sorted(model.scored) == sorted(["打开空调", "明天下雨吗", "到家时打开空调", "放首歌"])   # each distinct query once
    # 明天下雨吗: doubt 0.45, said twice; 到家时打开空调: the parser finds a condition the router does not see
    assert [t["data"]["query"] for t in tasks] == ["到家时打开空调", "明天下雨吗", "放首歌", "打开空调"]
    first, second = tasks[0]["data"], tasks[1]["data"]
    assert first["context_text"] == "assistant (slow): 好的" and first["endpoint"] == "unknown"
    assert "router and parser disagree" in first["why"]
    assert (second["count"], second["endpoint"], second["model_label"]) == (2, "car", "模糊")
    assert tasks[3]["data"]["count"] == 3
    prediction = tasks[1]["predictions"][0]
    assert prediction["model_version"] == "fastslow-test" and prediction["score"] == 0.55
    assert [(r["from_name"], r["value"]) for r in prediction["result"]] == [
        ("label", {"choices": ["模糊"]}), ("primary_reason_code", {"choices": ["OPEN_CHAT_OR_QA"]})]
    groups = tasks[0]["predictions"][0]["result"][2]
    assert groups["from_name"] == "automation" and json.loads(groups["value"]["text"][0])[0]["condition"] == "到家时"
    assert [t["data"]["query"] for t in review_tasks(model, log, limit=2)[0]] == ["到家时打开空调", "明天下雨吗"]


def annotation(label, code, automation=None, cancelled=False, at="2026-01-01T10:00:00Z"):
    result = [] if cancelled else [
        {"from_name": "label", "to_name": "query", "type": "choices", "value": {"choices": [label]}},
        {"from_name": "primary_reason_code", "to_name": "query", "type": "choices", "value": {"choices": [code]}}]
    if automation is not None:
        result.append({"from_name": "automation", "to_name": "query", "type": "textarea", "value": {"text": [automation]}})
    return {"id": 1, "result": result, "was_cancelled": cancelled, "updated_at": at}


def export_task(task_id, query, annotations, endpoint="unknown", context=()):
    return {"id": task_id, "data": {"query": query, "context": list(context), "endpoint": endpoint, "count": 3},
            "annotations": annotations, "predictions": []}


def test_an_export_gives_one_row_per_annotated_task_and_counts_the_rest(tmp_path):
    groups = json.dumps([{"condition": "下班到家时", "querys": [{"subquery": "打开客厅的灯", "intent": "设备控制"}]}],
                        ensure_ascii=False)
    tasks = [export_task(11, "帮我把后排出风口关小一点", [annotation("快", "DIRECT_ACTION")], endpoint="car"),
             export_task(12, "周末带爸妈去哪里玩比较好", [annotation("快", "DIRECT_ACTION"),   # corrected later
                                                        annotation("慢", "MULTI_STEP_PLANNING", at="2026-01-02T09:00:00Z")]),
             export_task(13, "下班到家时打开客厅的灯", [annotation("慢", "AUTOMATION_SLOW_POLICY", automation=groups)]),
             export_task(14, "随便聊聊", [annotation("", "", cancelled=True)]),
             export_task(15, "还没人看过的", []),
             export_task(16, "你们这车的续航是怎么算的", [annotation("模糊", "PRODUCT_KNOWLEDGE", automation="[]")],
                         context=[{"role": "user", "text": "续航"}])]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    export = read_export(path)
    assert (export.skipped, export.unannotated) == (1, 1)
    rows = {number: row for number, row, error in export.rows}
    assert list(rows) == [11, 12, 13, 16]
    assert rows[11] == {"query": "帮我把后排出风口关小一点", "context": [], "endpoint": "car", "label": "快",
                        "primary_reason_code": "DIRECT_ACTION"}
    assert rows[12]["label"] == "慢"                       # the latest annotation
    assert rows[13]["automation"] == groups and "automation" not in rows[16]
    assert rows[16]["context"] == [{"role": "user", "text": "续航"}] and "endpoint" not in rows[16]
    ref = Reference(intents=set(IntentTaxonomy.load().intents))
    extra = load_extra([path], ref)
    assert extra.problems == []
    assert extra.counts == {str(path): {"routing": 4, "automation": 1}}
    assert extra.left_out == {str(path): {"skipped": 1, "unannotated": 1}}
    assert [r["where"] for r in extra.routing] == [f"{path}:{n}" for n in (11, 12, 13, 16)]


def test_a_json_min_export_reads_the_same_rows(tmp_path):
    path = tmp_path / "min.json"
    path.write_text(json.dumps([{"id": 3, "query": "周末带爸妈去哪里玩比较好", "context": [], "endpoint": "unknown",
                                 "label": "慢", "primary_reason_code": "MULTI_STEP_PLANNING", "count": 2}],
                               ensure_ascii=False), encoding="utf-8")
    assert read_export(path).rows == [(3, {"query": "周末带爸妈去哪里玩比较好", "context": [], "label": "慢",
                                           "primary_reason_code": "MULTI_STEP_PLANNING"}, None)]


def test_a_file_that_is_not_an_export_is_one_problem_naming_it(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"query": "x"}', encoding="utf-8")
    assert load_extra([path], Reference()).problems == [
        f"{path}: not a Label Studio JSON export (a list of tasks), got dict"]


def test_review_writes_tasks_and_config_that_training_reads_back(tmp_path, capsys, store_in, trained):
    """The whole loop on files: review a log with the model, annotate in the export's format, train."""
    uri = store_in(tmp_path)
    rows = sample_rows(200, seed=5)
    log = write_jsonl(tmp_path / "log.jsonl", [{"query": r["query"]} for r in rows[:30] * 2] + [{"query": ""}])
    tasks_path = tmp_path / "tasks.json"
    assert cli.main(["review", str(log), "-o", str(tasks_path), "--model", str(trained["path"]), "--limit", "20"]) == 0
    out = capsys.readouterr().out
    assert "61 rows read (1 no query left out); 30 distinct queries; the 20 most worth labelling" in out
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    assert len(tasks) == 20 and all(t["data"]["count"] == 2 for t in tasks)
    assert ET.fromstring((tmp_path / "tasks.label_config.xml").read_text(encoding="utf-8")).tag == "View"
    gold = {r["query"]: r for r in rows}
    for task in tasks[:5]:  # annotated: the gold answer; the next two skipped, the rest left for later
        row = gold[task["data"]["query"]]
        task["annotations"] = [annotation(row["label"], row["primary_reason_code"])]
    for task in tasks[5:7]:
        task["annotations"] = [annotation("", "", cancelled=True)]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    result = small_train(tmp_path / "again", uri, "--train-dir", str(write_jsonl(tmp_path / "tiny" / "core.jsonl",
                                                                                   rows[100:]).parent),
                         "--data", str(export))
    assert result["extra"].counts == {str(export): {"routing": 5, "automation": 0}}
    assert f"{export}: Label Studio export; left out 2 skipped and 13 unannotated tasks" in capsys.readouterr().out


# --- against a real Label Studio

START_SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "start_label_studio.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def label_studio(tmp_path_factory):
    """``{URL, TOKEN, PYTHON}`` of a Label Studio on 127.0.0.1: the one the environment names, or one started
    here (and stopped after the test)."""
    given = {name: os.environ.get(f"FASTSLOW_LABEL_STUDIO_{name}") for name in ("URL", "TOKEN", "PYTHON")}
    if all(given.values()):
        yield given
        return
    started = subprocess.run(["bash", str(START_SCRIPT)], capture_output=True, text=True, timeout=900,
                             env={**os.environ, "LABEL_STUDIO_PORT": str(free_port()),
                                  "TMPDIR": str(tmp_path_factory.mktemp("label-studio"))})
    assert started.returncode == 0, started.stderr[-3000:]
    variables = dict(item.split("=", 1) for item in started.stdout.split()[1:])
    try:
        yield {name: variables[f"FASTSLOW_LABEL_STUDIO_{name}"] for name in ("URL", "TOKEN", "PYTHON")}
    finally:
        os.kill(int(variables["FASTSLOW_LABEL_STUDIO_PID"]), signal.SIGTERM)


def test_the_round_trip_through_label_studio(tmp_path, capsys, label_studio, store_in, trained):
    """A log → review tasks → a Label Studio project with the generated config (through label-studio-sdk)
    → a few tasks annotated and one skipped through its API → its JSON export → a retrained model."""
    assert label_studio["URL"].startswith("http://127.0.0.1:")
    uri = store_in(tmp_path)
    rows = sample_rows(300, seed=9)
    log_rows = [{"id": i, "query": r["query"], "endpoint": r.get("endpoint")} for i, r in enumerate(rows[:80] * 3)]
    log_rows += [{"id": "blank", "query": ""}, {"id": "long", "query": "开" * 2000}]
    log = write_jsonl(tmp_path / "log.jsonl", log_rows)
    tasks_path = tmp_path / "tasks.json"
    assert cli.main(["review", str(log), "-o", str(tasks_path), "--model", str(trained["path"])]) == 0
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    gold = {r["query"]: r for r in rows}
    answers = {"annotate": [[t["data"]["query"], gold[t["data"]["query"]]["label"],
                             gold[t["data"]["query"]]["primary_reason_code"], None] for t in tasks[:4]],
               "skip": [tasks[4]["data"]["query"]]}
    answers_path = write_jsonl(tmp_path / "answers.json", [])
    answers_path.write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
    export = tmp_path / "export.json"
    done = subprocess.run([label_studio["PYTHON"], str(CLIENT), label_studio["URL"], label_studio["TOKEN"],
                           str(tmp_path / "tasks.label_config.xml"), str(tasks_path), str(answers_path), str(export)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["imported"] == report["tasks"] == len(tasks)   # the review file imports as written
    capsys.readouterr()
    result = small_train(tmp_path / "again", uri, "--train-dir", str(write_jsonl(tmp_path / "tiny" / "core.jsonl",
                                                                                   rows[100:]).parent),
                         "--data", str(export))
    assert result["extra"].counts == {str(export): {"routing": 4, "automation": 0}}
    assert result["extra"].left_out == {str(export): {"skipped": 1, "unannotated": len(tasks) - 5}}
    assert f"left out 1 skipped and {len(tasks) - 5} unannotated tasks" in capsys.readouterr().out
    assert result["registered_version"] == "1"
