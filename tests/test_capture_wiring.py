"""Capture wired into the records (DESIGN.md "How capture applies to voice queries"): every automation
group that would create or change a task is decided on its own by the INV-TASK-2 policy."""

import pytest

from fastslow.models.capture.policy import Outcome
from fastslow.models.capture.candidates import capture_candidates, idempotency_key, match_existing
from fastslow.models.record import InputError, validate_input

ALLOWED = {o.value for o in Outcome}
FIELDS = ["outcome", "interruption", "candidate_action", "condition", "querys", "capture_confidence", "idempotency_key"]


def candidates(model, query, **extra):
    record = model.score([{"query": query, **extra}])[0]
    assert "error" not in record, record
    for c in record["candidates"]:
        assert list(c)[:len(FIELDS)] == FIELDS and c["outcome"] in ALLOWED
        assert (c["candidate_action"] is None) == (c["outcome"] == "ignore")
    return record["candidates"]


@pytest.mark.parametrize("query, condition", [
    ("上车时打开空调", "上车时"),
    ("我到家的时候把客厅灯打开", "我到家的时候"),
    ("每周五晚上八点提醒我给妈妈打电话", "每周五晚上八点"),
    ("要是明天下雨就提醒我带伞", "要是明天下雨"),
    ("提醒我去买菜", "default"),
])
def test_conditional_commands_become_pending_candidates(model, query, condition):
    [c] = candidates(model, query)
    assert (c["outcome"], c["candidate_action"], c["interruption"]) == ("pending_candidate", "create", "none")
    assert c["condition"] == condition and c["querys"] and 0.8 <= c["capture_confidence"] <= 1.0


def test_a_pure_condition_is_ignored(model):
    [c] = candidates(model, "停车超过90分钟时")
    assert (c["outcome"], c["candidate_action"], c["querys"]) == ("ignore", None, [])


@pytest.mark.parametrize("query", ["走远时车门上锁", "倒车时后视镜自动下翻", "锁车时关闭车窗"])
def test_a_builtin_behaviour_is_ignored(model, query):
    [c] = candidates(model, query)
    assert c["outcome"] == "ignore"


@pytest.mark.parametrize("query", ["打开空调", "导航去机场然后播放周杰伦的歌", "把空调调到24度，然后打开座椅加热"])
def test_a_plain_command_is_no_candidate(model, query):
    assert candidates(model, query) == []


def test_a_rejected_group_leaves_its_accepted_sibling_untouched(model):
    accepted, rejected = candidates(model, "上车时打开空调，走远时车门上锁")
    assert (accepted["outcome"], accepted["condition"]) == ("pending_candidate", "上车时")
    assert (rejected["outcome"], rejected["condition"]) == ("ignore", "走远时")
    # the same per item, without the model: a sibling below the floor changes nothing of the other entry
    item = {"id": "q1", "query": "上车时打开空调，下车时关闭空调", "existing_tasks": []}
    good = {"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}
    weak = {"condition": "下车时", "querys": [{"subquery": "关闭空调", "intent": "设备控制"}]}
    alone = capture_candidates(item, [good], [0.99], 0.5)
    both = capture_candidates(item, [good, weak], [0.99, 0.3], 0.5)
    assert both[0] == alone[0] and both[1]["outcome"] == "ignore"
    both = capture_candidates(item, [weak, good], [0.3, 0.99], 0.5)
    assert both[1] == alone[0]


def test_rescoring_gives_identical_idempotency_keys(model):
    rows = [{"id": "log-1", "query": "上车时打开空调"}, {"query": "每周五晚上八点提醒我给妈妈打电话"},
            {"id": 7, "query": "上车时打开空调，下车时关闭空调"}]
    first = model.score(rows)
    again = model.score([{"query": "打开空调"}] + list(reversed(rows)))[1:][::-1]
    keys = [[c["idempotency_key"] for c in r["candidates"]] for r in first]
    assert keys == [[c["idempotency_key"] for c in r["candidates"]] for r in again]
    flat = [k for ks in keys for k in ks]
    assert len(flat) == len(set(flat)) == 4 and all(len(k) == 64 for k in flat)
    # another id → other keys; no id → the normalised query decides
    other = model.score([{"id": "log-2", "query": "上车时打开空调"}, {"query": "上车时 打开空调"},
                         {"query": "上车时打开空调"}])
    assert other[0]["candidates"][0]["idempotency_key"] != keys[0][0]
    assert other[1]["candidates"][0]["idempotency_key"] == other[2]["candidates"][0]["idempotency_key"]


def test_equal_groups_in_one_query_get_their_occurrence_index():
    group = {"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": None}]}
    assert idempotency_key("a", "q", group, 0) != idempotency_key("a", "q", group, 1)
    item = {"id": "a", "query": "上车时打开空调，上车时打开空调", "existing_tasks": []}
    out = capture_candidates(item, [group, group], [0.9, 0.9], None)
    assert out[0]["idempotency_key"] != out[1]["idempotency_key"]


def test_an_existing_equal_task_gives_an_enrichment_proposal(model):
    existing = [{"id": "t-ac", "name": "上车开空调", "condition": "上车时",
                 "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]
    [c] = candidates(model, "上车时打开空调", existing_tasks=existing)
    assert (c["outcome"], c["candidate_action"], c["target_task_id"]) == ("propose_enrichment", "update", "t-ac")
    [c] = candidates(model, "下车时关闭空调", existing_tasks=existing)  # not the same task
    assert c["outcome"] == "pending_candidate" and "target_task_id" not in c


def test_a_change_to_a_named_habit_gives_an_update_proposal(model):
    existing = [{"id": 42, "name": "上车习惯", "condition": "上车时", "querys": [{"subquery": "打开空调"}]}]
    out = candidates(model, "修改上车习惯，上车时打开座椅加热", existing_tasks=existing)
    assert out and all((c["outcome"], c["candidate_action"], c["target_task_id"]) == ("propose_update", "update", "42")
                       for c in out)
    # without existing tasks the same words are a new proposal, never a write
    assert {c["outcome"] for c in candidates(model, "修改上车习惯，上车时打开座椅加热")} <= {"pending_candidate", "ignore"}


def test_builtin_behaviours_are_never_proposed_even_beside_an_equal_existing_task(model):
    existing = [{"id": "t", "name": None, "condition": "走远时", "querys": [{"subquery": "车门上锁"}]}]
    [c] = candidates(model, "走远时车门上锁", existing_tasks=existing)
    assert c["outcome"] == "ignore"


def test_match_existing_needs_a_change_word_for_a_refinement():
    existing = [{"id": "h", "name": "回家模式", "condition": "到家时", "querys": []}]
    group = {"condition": "到家时", "querys": [{"subquery": "打开空调", "intent": None}]}
    assert match_existing("到家时打开空调", group, existing) == (None, None)
    assert match_existing("把回家模式改成到家时打开空调", group, existing) == (None, "h")


@pytest.mark.parametrize("tasks, field", [
    ("x", "existing_tasks"),
    (["x"], "existing_tasks[0]"),
    ([{"name": "a"}], "existing_tasks[0].id"),
    ([{"id": True}], "existing_tasks[0].id"),
    ([{"id": "a", "querys": "打开空调"}], "existing_tasks[0].querys"),
    ([{"id": "a", "querys": [{"subquery": 3}]}], "existing_tasks[0].querys[0].subquery"),
    ([{"id": "a", "querys": [{"subquery": "x", "extra": 1}]}], "existing_tasks[0].querys[0].extra"),
    ([{"id": "a"}, {"id": "b", "condition": 5}], "existing_tasks[1].condition"),
    ([{"id": "a", "owner": "me"}], "existing_tasks[0].owner"),
])
def test_existing_tasks_are_validated_strictly(tasks, field):
    with pytest.raises(InputError) as err:
        validate_input({"query": "上车时打开空调", "existing_tasks": tasks})
    assert err.value.field == field


def test_a_bad_existing_task_gives_an_error_record_and_the_other_rows_are_scored(model):
    bad, good = model.score([{"id": 1, "query": "上车时打开空调", "existing_tasks": [{"id": "a", "querys": "x"}]},
                             {"id": 2, "query": "上车时打开空调"}])
    assert bad["error"].startswith("existing_tasks[0].querys:") and "candidates" not in bad
    assert good["candidates"][0]["outcome"] == "pending_candidate"


def test_parser_confidence_leaves_the_groups_unchanged(model):
    queries = ["上车时打开空调", "打开空调", "停车超过90分钟时", "修改上车习惯，上车时打开座椅加热", ""]
    groups, confidences = model.automation.parse_many_with_confidence(queries)
    assert groups == model.automation.parse_many(queries)
    assert [len(c) for c in confidences] == [len(g) for g in groups]
    assert confidences[1] == [None]  # no signal word: no tagger, a plain null group
    assert all(0.0 <= c <= 1.0 for cs in confidences for c in cs if c is not None)


def test_unseen_conditional_tasks_are_proposed_and_nothing_else(model):
    # written for this test, none of them in any training, dev or fixture file
    tasks = ["等孩子放学到家的时候把客厅空调打开", "如果车内温度超过三十度就打开车窗通风", "每天晚上九点半提醒我给花浇水",
             "明早七点叫我起床", "快到公司的时候提醒我带工牌"]
    plain = ["把音量调小一点", "给老王打电话", "今天天气怎么样", "关闭阅读灯"]
    for query in tasks:
        out = candidates(model, query)
        assert out and all(c["outcome"] == "pending_candidate" for c in out), (query, out)
    for query in plain:
        assert all(c["outcome"] == "ignore" for c in candidates(model, query)), query


def test_training_logs_capture_conformance_to_mlflow_and_the_manifest(trained):
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=trained["tracking_uri"]).get_run(trained["run_id"])
    assert run.data.metrics["capture_conformance"] == 1.0
    assert run.data.tags["capture_promotable"] == "true"
    assert trained["manifest"]["capture_conformance"] == 1.0
    assert trained["metrics"]["capture_conformance"] == 1.0
