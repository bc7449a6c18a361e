"""Automation metrics that need no trained parser: the built-in behaviour count."""

from fastslow.models.automation.metrics import builtin_recognised, evaluate_automation


def group(condition, sub, builtin=False):
    g = {"condition": condition, "querys": [{"subquery": sub, "intent": None}]}
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
