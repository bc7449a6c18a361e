"""Explanations: exact per-feature shares of the router's decision and the parser's span tags, through
the library, `fastslow explain`, `fastslow score --explain` (the server's `explain: true` is tested in
tests/test_server.py on the real server)."""

import csv
import dataclasses
import io
import json
import subprocess
import sys

import pytest
from conftest import run_cli

from fastslow.models.record import InputError, validate_input
from fastslow.models.routing.explain import explain_utterances, format_explanation
from fastslow.models.taxonomy import CODE_LABEL

QUERIES = ["打开座椅加热", "太冷了，帮我调一下", "明天早上八点提醒我开会", "第二个", "为什么天空是蓝色的",
           "把空调调到24度，然后打开座椅加热", "上车时打开空调"]


def fastslow(*args, stdin=None):
    """`python -m fastslow.cli ARGS` in a process of its own (``run_cli`` runs the same in this process)."""
    return subprocess.run([sys.executable, "-m", "fastslow.cli", *map(str, args)], input=stdin,
                          capture_output=True, timeout=300)


def rounding_slack(n_terms: int) -> float:
    return 5e-5 * (n_terms + 2)  # every shown figure is rounded to 4 decimals


@pytest.mark.parametrize("top_k", [None, 3])
def test_contributions_and_intercept_sum_to_the_logit_margin_over_the_runner_up(model, top_k):
    router = model.router
    utterances = router.utterances(QUERIES)
    logits = router.decision_function(QUERIES) / router.temperature_
    classes = list(router.classes_)
    for u, logit, ex, route in zip(utterances, logits, explain_utterances(router, utterances, top_k),
                                   router.route(utterances)):
        p, r = classes.index(ex["primary_reason_code"]), classes.index(ex["runner_up"]["reason_code"])
        assert ex["primary_reason_code"] == route.primary_reason_code and ex["label"] == route.label
        assert ex["runner_up"]["label"] != ex["label"] == CODE_LABEL[ex["primary_reason_code"]]
        # the runner-up is the most probable code of another label
        others = [k for k, c in enumerate(classes) if CODE_LABEL[c] != route.label]
        assert r == max(others, key=lambda k: logit[k])
        assert ex["margin"] == pytest.approx(logit[p] - logit[r], abs=1e-4)
        total = ex["intercept"] + sum(f["difference"] for f in ex["features"]) + ex["rest"]
        assert total == pytest.approx(ex["margin"], abs=rounding_slack(len(ex["features"])))
        for f in ex["features"]:
            assert f["difference"] == pytest.approx(f["contribution"] - f["runner_up_contribution"], abs=2e-4)
        if top_k is None:
            assert ex["rest"] == 0 and len(ex["features"]) == ex["active_features"] == router.features([u]).nnz
        else:
            assert len(ex["features"]) == min(top_k, ex["active_features"])
        sizes = [abs(f["difference"]) for f in ex["features"]]
        assert sizes == sorted(sizes, reverse=True)


def test_features_have_readable_names(model):
    [ex] = explain_utterances(model.router, model.router.utterances(["打开座椅加热"]), top_k=None)
    names = {f["feature"] for f in ex["features"]}
    assert 'devices:car_device "座椅加热"' in names
    assert 'char "座椅"' in names and 'char "热"' in names
    assert 'word "座椅加热"' in names and "endpoint:unknown" in names and "ctx:none" in names
    assert any(n.startswith('actions:on "打开"') for n in names)


def test_explain_is_a_checked_request_field_and_only_then_gives_an_explanation(model):
    with pytest.raises(InputError) as err:
        validate_input({"query": "开空调", "explain": "yes"})
    assert err.value.field == "explain"
    plain, asked, off = model.score([{"query": "上车时打开空调"}, {"query": "上车时打开空调", "explain": True},
                                     {"query": "上车时打开空调", "explain": False}])
    assert "explanation" not in plain and "explanation" not in off
    assert {k: v for k, v in asked.items() if k != "explanation"} == plain
    spans = asked["explanation"]["automation"]
    assert spans["decided_by"] == "tagger"
    assert [(s["kind"], s["text"]) for s in spans["spans"]] == [("condition", "上车时"), ("action", "打开空调")]
    assert all(0.5 < s["confidence"] <= 1.0 for s in spans["spans"])
    assert [part["text"] for part in asked["explanation"]["routing"]] == ["上车时打开空调"]


def test_split_requests_explain_each_subrequest_and_plain_commands_skip_the_tagger(model):
    record = model.score([{"query": "把空调调到24度，然后打开座椅加热", "endpoint": "car"}], explain=True)[0]
    routing = record["explanation"]["routing"]
    assert [part["text"] for part in routing] == [s["text"] for s in record["subrequests"]]
    assert [part["primary_reason_code"] for part in routing] == [s["primary_reason_code"] for s in record["subrequests"]]
    plain = model.score([{"query": "打开空调"}], explain=True)[0]["explanation"]["automation"]
    assert plain == {"text": "打开空调", "decided_by": "no_signal", "spans": []}


def test_routing_reads_the_automation_parse_of_the_query(model):
    """The pipeline parses first and passes the groups to routing: a condition the parser found shows among the
    routed whole's features, crossed with its endpoint; a query without a condition has no parse feature."""
    every_feature = dataclasses.replace(model, explain_top_k=0)
    said, plain = every_feature.score([{"query": "孩子房间一有哭声就打开小夜灯", "endpoint": "home", "explain": True},
                                       {"query": "打开小夜灯", "endpoint": "home", "explain": True}])
    assert said["automation"] and said["automation"][0]["condition"]
    [whole] = said["explanation"]["routing"]
    names = {f["feature"] for f in whole["features"]}
    assert {"parse:condition", "parse:condition@home"} <= names
    assert not any(f["feature"].startswith("parse:") for part in plain["explanation"]["routing"] for f in part["features"])


def test_text_table_shows_margin_features_and_spans(model):
    record = model.score([{"query": "上车时打开空调", "endpoint": "car"}], explain=True)[0]
    text = format_explanation(record)
    part = record["explanation"]["routing"][0]
    assert text.splitlines()[0] == "query       上车时打开空调"
    assert f"margin {part['margin']:+.3f} = intercept {part['intercept']:+.3f}" in text
    assert part["features"][0]["feature"] in text
    span = next(sp for sp in record["explanation"]["automation"]["spans"] if sp["kind"] == "condition")
    assert f"condition  {span['confidence']:>10.3f}  上车时" in text.splitlines()
    assert "group  condition '上车时': 打开空调 (设备控制)" in text


# ------------------------------------------------------------------------------------------ the CLI


def test_cli_explain_prints_a_table_and_json(trained):
    # a real process printing the table to a pipe; the other command lines run in this process
    result = fastslow("explain", "打开座椅加热", "--endpoint", "car", "--top", "3", "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    header = next(i for i, line in enumerate(out.splitlines()) if line.lstrip().startswith("margin   chosen"))
    rows = out.splitlines()[header + 1: header + 5]
    assert len([r for r in rows[:3] if r.strip() and r.split()[0][0] in "+-"]) == 3
    assert "other features)" in rows[3]
    assert "automation spans (decided by no_signal)" in out

    context = json.dumps([{"role": "assistant", "system": "slow", "text": "找到三家川菜馆，要去哪一家？"}],
                         ensure_ascii=False)
    result = run_cli("explain", "第二个", "--context", context, "--json", "--top", "0", "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    part = record["explanation"]["routing"][0]
    assert record["query"] == "第二个" and part["label"] == record["label"]
    assert len(part["features"]) == part["active_features"] and part["rest"] == 0
    context_features = [f["feature"] for f in part["features"] if f["feature"].startswith("ctx:")]
    state, crossed = sorted(context_features, key=len)  # a short query: its state and the state & short
    assert crossed == state + "&short"


def test_cli_explain_refuses_bad_context_and_bad_input(trained):
    result = run_cli("explain", "打开空调", "--context", "[broken", "--model", trained["path"])
    assert result.returncode == 2 and b"--context is not JSON" in result.stderr
    result = run_cli("explain", "打开空调", "--context", '[{"role": "robot", "text": "x"}]', "--model", trained["path"])
    assert result.returncode == 2 and b"context[0].role" in result.stderr
    result = run_cli("explain", "   ", "--model", trained["path"])
    assert result.returncode == 2 and b"query: empty" in result.stderr


def test_score_explain_adds_the_explanation_to_every_record_in_jsonl_and_csv(trained, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": 1, "query": "上车时打开空调"}\n{"id": 2, "query": ""}\n{"id": 3, "query": "导航回家"}\n',
                    encoding="utf-8")
    result = run_cli("score", path, "--explain", "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert [("explanation" in r, "error" in r) for r in records] == [(True, False), (False, True), (True, False)]
    direct = trained["model"].score([{"id": 1, "query": "上车时打开空调"}], explain=True)[0]
    assert records[0] == direct

    out = tmp_path / "out.csv"
    result = run_cli("score", path, "-o", out, "--explain", "--model", trained["path"])
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert json.loads(rows[0]["explanation"]) == direct["explanation"] and rows[1]["explanation"] == ""

    plain = run_cli("score", path, "--model", trained["path"])
    assert all("explanation" not in json.loads(line) for line in plain.stdout.decode("utf-8").splitlines())
