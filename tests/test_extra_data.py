"""`train.py --data`: extra labelled files are read (JSONL, CSV, Parquet), validated row by row, and every
problem is reported with its file and row before anything is fitted."""

import json

import pandas as pd
import pytest

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.lifecycle.dataset import query_key
from fastslow.models.lifecycle.extra_data import Reference, derive_markup, load_extra, read_extra
from fastslow.models.automation.intents import IntentTaxonomy

AUTOMATION = [{"condition": "下班到家时", "querys": [{"subquery": "打开客厅的灯", "intent": "设备控制"}]}]


@pytest.fixture(scope="module")
def ref():
    bundled = {"query": "把座椅通风开到最大", "label": "快", "primary_reason_code": "DIRECT_ACTION",
               "context": [], "endpoint": None, "where": "data/train/core.jsonl:5"}
    return Reference(routing_train=[bundled], automation_train=[],
                     held_out={"frozen fixture routing_v1.jsonl": {query_key({"query": "开空调"})},
                               "dev set automation_dev.jsonl": {query_key({"query": "我上车的时候把座椅加热打开"})}},
                     intents=set(IntentTaxonomy.load().intents), lexicons=load_automation_lexicons())


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def routing(query, label="快", code="DIRECT_ACTION", **extra):
    return {"query": query, "label": label, "primary_reason_code": code, **extra}


def test_every_problem_is_reported_with_file_and_row(tmp_path, ref):
    path = write_jsonl(tmp_path / "reviewed.jsonl", [
        routing("帮我把后排出风口关小一点"),                                              # 1 fine
        routing("导航去最近的加油站", label="超快"),                                       # 2 unknown label
        routing("导航去最近的充电站", code="VERY_FAST"),                                  # 3 unknown code
        routing("周末带爸妈去哪里玩比较好", label="快", code="MULTI_STEP_PLANNING"),          # 4 label vs group
        {"query": "下班到家时打开客厅的灯", "automation": "[{\"condition\": "},                # 5 malformed JSON
        {"query": "下班到家时打开客厅的灯", "automation": [{"condition": "下班到家时",
                                                       "querys": [{"subquery": "打开客厅的灯", "intent": "开灯"}]}]},
        routing("帮我把后排出风口关小一点", label="慢", code="INTENT_INFERENCE"),            # 7 contradicts row 1
        routing("开空调"),                                                               # 8 frozen fixture
        {"query": "打开天窗", "id": 9},                                                  # 9 no labels at all
        '{"query": "broken',                                                            # 10 not JSON
        routing("把座椅通风开到最大", label="慢", code="INTENT_INFERENCE"),                 # 11 contradicts the corpus
        {"query": "我上车的时候把座椅加热打开", "automation": AUTOMATION},                     # 12 automation dev set
    ])
    data = load_extra([path], ref)
    assert [p.split(": ", 1)[0] for p in data.problems] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)]
    problems = dict(p.split(": ", 1) for p in data.problems)
    assert "label must be one of" in problems[f"{path}:2"]
    assert "unknown primary_reason_code 'VERY_FAST'" in problems[f"{path}:3"]
    assert "label 快 disagrees with MULTI_STEP_PLANNING, whose group is 慢" in problems[f"{path}:4"]
    assert problems[f"{path}:5"].startswith("automation is not JSON")
    assert "unknown intent '开灯'" in problems[f"{path}:6"]
    assert problems[f"{path}:7"] == f"'帮我把后排出风口关小一点' is labelled 慢/INTENT_INFERENCE here but 快/DIRECT_ACTION in {path}:1"
    assert "is in the frozen fixture routing_v1.jsonl, which is never trained on" in problems[f"{path}:8"]
    assert problems[f"{path}:9"].startswith("neither routing labels")
    assert "broken JSON" in problems[f"{path}:10"]
    assert "in data/train/core.jsonl:5" in problems[f"{path}:11"]
    assert "dev set automation_dev.jsonl" in problems[f"{path}:12"]
    assert [r["query"] for r in data.routing] == ["帮我把后排出风口关小一点"]


def test_exact_duplicates_are_kept_and_not_a_problem(tmp_path, ref):
    path = write_jsonl(tmp_path / "dups.jsonl", [routing("把座椅通风开到最大"), routing("打开座椅按摩"),
                                                 routing("打开座椅按摩")])
    data = load_extra([path], ref)
    assert data.problems == [] and len(data.routing) == 3


def test_the_same_query_may_differ_by_endpoint(tmp_path, ref):
    path = write_jsonl(tmp_path / "endpoints.jsonl", [routing("打开灯", endpoint="car"),
                                                      routing("打开灯", "模糊", "POLICY_UNCERTAIN", endpoint=None)])
    assert load_extra([path], ref).problems == []


def test_csv_jsonl_and_parquet_give_the_same_rows(tmp_path, ref):
    rows = [routing("帮我把后排出风口关小一点", endpoint="car", context=[{"role": "user", "system": "fast", "text": "开空调"}]),
            {"query": "下班到家时打开客厅的灯", "automation": AUTOMATION},
            {**routing("上车时打开座椅加热"), "automation": [{"condition": "上车时", "querys": [
                {"subquery": "打开座椅加热", "intent": "车载控制"}]}]}]
    jsonl = write_jsonl(tmp_path / "rows.jsonl", rows)
    flat = pd.DataFrame([{"query": r["query"], "label": r.get("label"), "primary_reason_code": r.get("primary_reason_code"),
                          "endpoint": r.get("endpoint"),
                          "context": json.dumps(r["context"], ensure_ascii=False) if "context" in r else None,
                          "automation": json.dumps(r["automation"], ensure_ascii=False) if "automation" in r else None}
                         for r in rows])
    flat.to_csv(tmp_path / "rows.csv", index=False)
    flat.to_parquet(tmp_path / "rows.parquet", index=False)
    results = [load_extra([tmp_path / name], ref) for name in ("rows.jsonl", "rows.csv", "rows.parquet")]
    for data in results:
        assert data.problems == []
        assert [(r["query"], r["label"], r["endpoint"], r["context"]) for r in data.routing] == \
            [(r["query"], r["label"], r["endpoint"], r["context"]) for r in results[0].routing]
        assert [(r["query"], r["markup"], r["expected"]) for r in data.automation] == \
            [(r["query"], r["markup"], r["expected"]) for r in results[0].automation]
    assert len(results[0].routing) == 2 and len(results[0].automation) == 2
    assert results[0].counts == {str(jsonl): {"routing": 2, "automation": 2}}
    merged = results[0].by_file()[str(jsonl)]  # the row with a label and a parse is one row of the file
    assert [r["query"] for r in merged] == [r["query"] for r in rows]
    assert merged[2]["label"] == "快" and merged[2]["expected"][0]["condition"] == "上车时"
    assert results[0].automation[0]["markup"] == "[C:下班到家时][A:打开客厅的灯]"


def test_csv_row_numbers_count_the_header(tmp_path, ref):
    path = tmp_path / "rows.csv"
    path.write_text("query,label,primary_reason_code\n打开座椅按摩,快,DIRECT_ACTION\n关闭座椅按摩,快,NOPE\n", encoding="utf-8")
    assert load_extra([path], ref).problems[0].startswith(f"{path}:3: unknown primary_reason_code 'NOPE'")


def test_unreadable_files_are_problems_too(tmp_path, ref):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "noquery.csv").write_text("text,label\n开空调,快\n", encoding="utf-8")
    problems = load_extra([tmp_path / "missing.jsonl", tmp_path / "notes.txt", tmp_path / "noquery.csv"], ref).problems
    assert problems == [f"{tmp_path / 'missing.jsonl'}: file not found",
                        f"{tmp_path / 'notes.txt'}: use .jsonl, .csv, .parquet or a Label Studio export (.json)",
                        f"{tmp_path / 'noquery.csv'}: CSV has no 'query' column (columns: text, label)"]


def test_automation_spans_come_from_markup_or_verbatim_text(tmp_path, ref):
    assert derive_markup("下班到家时打开客厅的灯", AUTOMATION) == "[C:下班到家时][A:打开客厅的灯]"
    rewritten = [{"condition": "下班到家时", "querys": [{"subquery": "提醒我说带钥匙", "intent": "提醒"}]}]
    path = write_jsonl(tmp_path / "auto.jsonl", [
        {"query": "下班到家时提醒我带钥匙", "automation": rewritten},                        # not verbatim: needs markup
        {"query": "下班到家时打开客厅的灯", "markup": "[A:下班到家时打开客厅的灯]", "automation": AUTOMATION},  # disagrees
        {"query": "下班到家时打开客厅的灯", "automation": [{"condition": "下班到家时", "querys": [
            {"subquery": "打开客厅的灯", "intent": None}]}]},                                # no intent to learn from
    ])
    problems = load_extra([path], ref).problems
    assert problems[0].startswith(f"{path}:1: ") and "add a 'markup' column" in problems[0]
    assert problems[1].startswith(f"{path}:2: the spans '[A:下班到家时打开客厅的灯]' give the groups")
    assert problems[2].startswith(f"{path}:3: every subquery needs its intent")


def test_read_extra_keeps_every_row_with_its_number(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [routing("打开座椅按摩"), "", routing("关闭座椅按摩")])
    assert [n for n, _, _ in read_extra(path)] == [1, 3]


def test_train_stops_before_fitting_and_prints_every_problem(tmp_path, capsys):
    from fastslow.models.lifecycle import training as train

    bad = write_jsonl(tmp_path / "bad.jsonl", [routing("开空调"), routing("导航去单位", label="慢")])
    code = train.main(["--data", str(bad), "--output", str(tmp_path / "m.joblib"),
                       "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "2 problem(s) in the extra data, nothing was trained" in err
    assert f"{bad}:1: '开空调' is in the frozen fixture routing_v1.jsonl" in err
    assert f"{bad}:2: label 慢 disagrees with DIRECT_ACTION" in err
    assert not (tmp_path / "m.joblib").exists() and not (tmp_path / "mlflow.db").exists()


def test_only_with_routing_rows_alone_needs_no_automation_and_says_so_before_fitting(tmp_path, capsys):
    from fastslow.models.lifecycle import training as train

    good = write_jsonl(tmp_path / "good.jsonl", [routing("打开座椅按摩")])
    assert train.main(["--only", "--data", str(good), "--output", str(tmp_path / "m.joblib"),
                       "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]) == 2
    assert "no automation rows to train the parser on" in capsys.readouterr().err
    assert not (tmp_path / "mlflow.db").exists()
