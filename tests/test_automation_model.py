"""The trained automation parser: the frozen fixture (every spec example), the dev set targets, and the
scikit-learn conventions that let a data scientist retrain and a server load it."""

import io
import json

import joblib
import pytest
from sklearn.base import clone

from fastslow.models.automation.parser import AutomationParser, AutomationTagger
from fastslow.models.automation.data import (
    AUTOMATION_DEV_FILE, AUTOMATION_FIXTURE_FILE, load_automation, load_automation_training,
)
from fastslow.models.automation.metrics import evaluate_automation, groups_match
from fastslow.models.lifecycle.dataset import training_files

FIXTURE = load_automation(AUTOMATION_FIXTURE_FILE)


@pytest.fixture(scope="module")
def parser(request):
    """The parser of the session's trained bundle when the routing data exist, else one trained here."""
    if training_files():
        automation = getattr(request.getfixturevalue("model"), "automation", None)
        if automation is not None:
            return automation
    train = load_automation_training()
    return AutomationParser().fit([r["query"] for r in train], train)


@pytest.mark.parametrize("row", FIXTURE, ids=[r["id"] for r in FIXTURE])
def test_every_spec_example_parses_exactly(parser, row):
    # the frozen fixture: 100% group exact match, intents compared where the spec gives them
    predicted = parser.parse(row["query"])
    assert groups_match(predicted, row["expected"], intents=True), json.dumps(predicted, ensure_ascii=False)


def test_spec_output_target_record_shape(parser):
    # 输出目标: [{"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]
    assert parser.parse("上车时打开空调") == [{"condition": "上车时",
                                              "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]


def test_dev_set_meets_the_targets(parser):
    ev = evaluate_automation(parser, load_automation(AUTOMATION_DEV_FILE), "dev")
    assert ev.metrics["automation_dev_n"] >= 150
    assert ev.metrics["automation_dev_group_exact"] >= 0.85
    assert ev.metrics["automation_dev_condition_exact"] >= 0.92


def test_fixture_metrics_are_perfect(parser):
    ev = evaluate_automation(parser, FIXTURE, "fixture")
    assert ev.metrics["automation_fixture_group_exact"] == 1.0
    assert ev.metrics["automation_fixture_condition_exact"] == 1.0
    assert set(ev.per_rule["group_exact"]) == {1.0}


def test_plain_feelings_are_not_conditions(parser):
    assert parser.parse("无聊死了，放首歌") == [{"condition": None,
                                              "querys": [{"subquery": "无聊死了，放首歌", "intent": "音乐播放"}]}]
    assert [g["condition"] for g in parser.parse("今天天气怎么样")] == [None]


def test_builtin_behaviour_is_flagged(parser):
    [group] = parser.parse("倒车时后视镜自动下翻")
    assert group["builtin"] is True
    # said with no trigger word: a situation with 了 running on into what the appliance does by itself
    [group] = parser.parse("洗衣机洗完了自动断电")
    assert (group["condition"], group["builtin"]) == ("洗衣机洗完了", True)


def test_a_term_put_back_from_a_slip_is_given_as_the_user_said_it(parser):
    # the tagger and the intent classifier read 天窗; the condition and the subquery are the user's words
    heard, meant = parser.parse("下雨的时候把天创关上吧"), parser.parse("下雨的时候把天窗关上吧")
    assert [g["condition"] for g in heard] == [g["condition"] for g in meant] == ["下雨的时候"]
    assert [q["subquery"] for q in heard[0]["querys"]] == ["把天创关上"]
    assert [q["intent"] for q in heard[0]["querys"]] == [q["intent"] for q in meant[0]["querys"]]


def test_parser_round_trips_through_joblib(parser):
    buffer = io.BytesIO()
    joblib.dump(parser, buffer)
    buffer.seek(0)
    loaded = joblib.load(buffer)
    queries = [r["query"] for r in FIXTURE]
    assert loaded.parse_many(queries) == parser.parse_many(queries)


def test_the_groups_with_confidences_are_the_groups_the_parser_gives(parser):
    """Records and the server read groups with their confidences; training scores the groups alone: both
    come from one assembly, so every bundled automation query parses the same way on both paths."""
    from conftest import DEV_AND_FIXTURE_FILES, bundled_queries

    queries = bundled_queries([f for f in DEV_AND_FIXTURE_FILES if "automation" in f])
    groups, confidences = parser.parse_many_with_confidence(queries)
    assert groups == parser.parse_many(queries)
    assert [len(c) for c in confidences] == [len(g) for g in groups]


def test_a_query_said_again_gets_the_groups_of_its_first_parse_as_dicts_of_its_own(parser):
    """The parser keeps the parses of this process: a repeat answers as a fresh parse does, and no two records
    share a group."""
    from fastslow.features.memo import clear_memos

    queries = ["上车时打开空调，下车时关闭空调", "打开空调", "每天早上八点提醒我带伞", "", "上车时打开空调，下车时关闭空调"]
    clear_memos()
    first = parser.parse_many_with_confidence(queries)
    again = parser.parse_many_with_confidence(queries[::-1])
    assert again == (first[0][::-1], first[1][::-1])
    clear_memos()
    assert parser.parse_many_with_confidence(queries) == first and parser.parse_many(queries) == first[0]
    assert first[0][0] == first[0][4] and first[0][0][0] is not first[0][4][0]
    first[0][0][0]["querys"][0]["intent"] = "changed"
    assert parser.parse_many(queries)[0] == again[0][0]


def test_estimators_follow_scikit_learn_conventions():
    params = AutomationParser(c1=0.1).get_params()
    assert params["c1"] == 0.1 and "intent_C" in params
    assert clone(AutomationTagger(max_iterations=5)).get_params()["max_iterations"] == 5
    assert not hasattr(AutomationParser(), "tagger_")


@pytest.mark.skipif(not training_files(), reason="the routing training data are not there yet")
def test_records_carry_the_automation_groups(model):
    # the `automation` field of every record from `fastslow score`
    records = model.score([{"id": "r1", "query": "电量低于20%时通知我立刻充电"}, {"id": "r2", "query": ""}])
    assert records[0]["automation"] == [{"condition": "电量低于20%时",
                                         "querys": [{"subquery": "提醒我立刻充电", "intent": "提醒"}]}]
    assert "error" in records[1] and "automation" not in records[1]


@pytest.mark.parametrize("query, action", [("开会的时候别给我打电话", "别给我打电话"),
                                           ("到家时千万别再帮我开空调", "千万别再帮我开空调")])
def test_a_prohibition_is_never_parsed_as_a_command(parser, query, action):
    assert [q["subquery"] for g in parser.parse(query) for q in g["querys"]] == [action]


def test_the_intent_fast_path_equals_the_fitted_scikit_learn_model(parser):
    """``IntentClassifier.decision_function`` is the row-by-row path of ``model_`` over ``_features``."""
    from fastslow.models.automation.rules import lowered

    intents = parser.intents_
    subs = [q["subquery"] for row in load_automation_training() for g in (row.get("expected") or [])
            for q in g["querys"]][:2000] + ["", "a", "打开打开打开"]
    reference = intents.model_.decision_function(intents._features([lowered(s) for s in subs]))
    fast = intents.decision_function(subs)
    assert fast.shape == reference.shape
    assert abs(fast - reference).max() < 1e-5  # the vectorizer computes in float32
    assert (fast.argmax(axis=1) == reference.argmax(axis=1)).all()
