"""Automation metrics that need no trained parser: the built-in behaviour count and the group structure."""

from fastslow.models.automation.metrics import (
    builtin_recognised, conditions_match, evaluate_automation, groups_match, structure_matches,
)


def group(condition, sub, builtin=False, intent=None):
    g = {"condition": condition, "querys": [{"subquery": sub, "intent": intent}]}
    if builtin:
        g["builtin"] = True
    return g


def test_builtin_recognised_counts_gold_builtin_groups_flagged_in_the_prediction():
    gold = [group("急刹车的时候", "打开双闪", builtin=True)]
    assert builtin_recognised([group("急刹车的时候", "打开双闪", builtin=True)], gold) == (1, 1)
    # flagged, though the condition text differs: still not proposed as a task
    assert builtin_recognised([group("刹车的时候", "打开双闪", builtin=True)], gold) == (1, 1)
    assert builtin_recognised([group("急刹车的时候", "打开双闪")], gold) == (0, 1)
    # a user task flagged builtin is no recognised built-in behaviour
    assert builtin_recognised([group("到家时", "打开空调", builtin=True)], [group("到家时", "打开空调")]) == (0, 0)


class _Fixed:
    """A stand-in parser answering every query with the same groups."""

    def __init__(self, groups):
        self.groups = groups

    def parse_many(self, queries):
        return [self.groups for _ in queries]


def test_evaluation_reports_builtin_recognised_with_its_total():
    rows = [{"id": str(i), "query": q, "expected": [group("倒车时", "后视镜下翻", builtin=b)], "spans": None, "rules": []}
            for i, (q, b) in enumerate([("倒车时后视镜下翻", True), ("倒车时后视镜往下", True), ("上车时开空调", False)])]
    ev = evaluate_automation(_Fixed([group("倒车时", "后视镜下翻", builtin=True)]), rows, "x")
    assert (ev.metrics["automation_x_builtin_recognised"], ev.metrics["automation_x_builtin_total"]) == (2, 2)


def test_structure_ignores_the_wording_of_actions_and_nothing_else():
    gold = [group("熄火以后", "折叠后视镜", builtin=True, intent="车载控制")]
    assert structure_matches([group("熄火以后", "后视镜自己折起来", builtin=True, intent="车载控制")], gold)
    assert not structure_matches([group("熄火以后", "折叠后视镜", intent="车载控制")], gold)  # proposed as a task
    assert not structure_matches([group("熄火后", "折叠后视镜", builtin=True, intent="车载控制")], gold)
    assert not structure_matches([group("熄火以后", "折叠后视镜", builtin=True, intent="设备控制")], gold)
    two = {"condition": "熄火以后", "builtin": True,
           "querys": [{"subquery": "折叠后视镜", "intent": "车载控制"}, {"subquery": "锁车", "intent": "车载控制"}]}
    assert not structure_matches([two], gold)
    assert not structure_matches(gold + [group(None, "播放音乐")], gold)
    # a gold intent left out (null) is not compared, as in the exact comparison
    assert structure_matches([group("到家时", "开灯", intent="设备控制")], [group("到家时", "打开灯")])


def test_evaluation_reports_the_structure_beside_the_exact_groups():
    rows = [{"id": "1", "query": "熄火以后后视镜自己折起来", "spans": None, "rules": [],
             "expected": [group("熄火以后", "折叠后视镜", builtin=True)]}]
    ev = evaluate_automation(_Fixed([group("熄火以后", "后视镜自己折起来", builtin=True)]), rows, "x")
    assert (ev.metrics["automation_x_group_exact"], ev.metrics["automation_x_group_structure"]) == (0.0, 1.0)


def test_no_groups_in_the_gold_is_no_automation_and_agrees_only_with_a_plain_parse():
    plain = [group(None, "几点了", intent="查询")]
    for agrees in (groups_match, structure_matches, conditions_match):
        assert agrees(plain, [])
        assert agrees([], [])
        assert not agrees([group("周末的时候", "去哪里玩比较好")], [])  # a condition where there is none
        assert not agrees([group("default", "查询备忘录")], [])
        assert not agrees([group(None, "后视镜下翻", builtin=True)], [])
        assert not agrees([], plain)  # the reverse: a plain request the parser dropped is still an error
