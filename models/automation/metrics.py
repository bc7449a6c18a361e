"""Automation parser metrics: span precision/recall/F1, condition exact match, group exact match
(with and without intents), group structure, oracle-span group match (the rules alone), per-rule
accuracy, and how many gold built-in vehicle behaviours were flagged ``builtin`` (``builtin_recognised``
of ``builtin_total``).

Group comparison: same number of groups, and per group the same condition, the same subqueries in
order, the same ``builtin`` flag; with intents, every gold intent that is not null must match
(a null gold intent means "not given by the source", as in the spec examples without one).

Group structure is the same comparison without the subqueries' wording: as many subqueries per group,
with the same intents. The spec rewrites actions beyond its listed rules (打开空调 said after 主驾有人上车时
is 打开主驾空调), and writers differ in how far they reword an action (后视镜自己折起来 or 折叠后视镜); the
structure says whether the parser found what triggers what kind of action, whatever the wording.

No groups at all (``expected: []``) is how some writers mark a query that is no automation (几点了, 周末的时候
一般去哪里玩): the spec has no such form (a plain request is one ``null`` group), so the parser never gives it, and
any prediction without a condition, a ``default`` or a built-in group agrees with it, in every comparison.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from fastslow.models.automation.rules import analyse, plan_groups


def _group_key(group: dict, wording: bool = True) -> tuple:
    """What two groups must share: condition, ``builtin`` flag, and the subqueries in order (``wording``) or
    only how many there are."""
    querys = group.get("querys") or []
    return (group.get("condition"), bool(group.get("builtin")),
            tuple(q.get("subquery") for q in querys) if wording else len(querys))


def _intents_agree(pred: dict, gold: dict) -> bool:
    """Every gold intent that is not null is the predicted one, subquery by subquery."""
    return all(g.get("intent") is None or p.get("intent") == g.get("intent")
               for p, g in zip(pred.get("querys") or [], gold.get("querys") or []))


def no_automation(groups: list[dict]) -> bool:
    """Do ``groups`` say the query is no automation: no condition, no ``default``, nothing built in?"""
    return all(g.get("condition") is None and not g.get("builtin") for g in groups)


def groups_match(pred: list[dict], gold: list[dict], intents: bool = True) -> bool:
    """Exact match of a query's groups (see the module doc)."""
    if not gold:
        return no_automation(pred)
    return len(pred) == len(gold) and all(
        _group_key(p) == _group_key(g) and (not intents or _intents_agree(p, g)) for p, g in zip(pred, gold))


def structure_matches(pred: list[dict], gold: list[dict]) -> bool:
    """The groups agree in everything but the subqueries' wording (see the module doc)."""
    if not gold:
        return no_automation(pred)
    return len(pred) == len(gold) and all(
        _group_key(p, wording=False) == _group_key(g, wording=False) and _intents_agree(p, g)
        for p, g in zip(pred, gold))


def rules_output(text: str, spans, lexicons) -> list[dict]:
    """The groups the rules alone make of gold spans (no intents): the oracle the data is checked with."""
    return [{"condition": g.condition, "builtin": g.builtin, "querys": [{"subquery": s} for s in g.subqueries]}
            for g in plan_groups(analyse(text, lexicons), spans)]


def conditions_match(pred: list[dict], gold: list[dict]) -> bool:
    """The query's conditions, in order, are exactly the gold ones (``default`` and null included)."""
    if not gold:
        return no_automation(pred)
    return [g.get("condition") for g in pred] == [g.get("condition") for g in gold]


def builtin_recognised(pred: list[dict], gold: list[dict]) -> tuple[int, int]:
    """(recognised, total) of the query's gold built-in behaviour groups: a gold group flagged
    ``builtin`` counts as recognised when the prediction flags as many built-in groups (never proposed
    as a task), whatever its condition text; so ``builtin_recognised`` reads the issue's "≥ 10 of 12"."""
    total = sum(1 for g in gold if g.get("builtin"))
    return min(total, sum(1 for g in pred if g.get("builtin"))), total


def span_scores(gold_spans: list, pred_spans: list) -> dict:
    """Micro precision/recall/F1 of exact spans (kind, start, end), overall and per kind."""
    tp, fp, fn = defaultdict(int), defaultdict(int), defaultdict(int)
    for gold, pred in zip(gold_spans, pred_spans):
        g = {(s.kind, s.start, s.end) for s in gold}
        p = {(s.kind, s.start, s.end) for s in pred}
        for kind, *_ in g & p:
            tp[kind] += 1
        for kind, *_ in p - g:
            fp[kind] += 1
        for kind, *_ in g - p:
            fn[kind] += 1
    out = {}
    for kind in sorted(set(tp) | set(fp) | set(fn)) + ["all"]:
        t = sum(tp.values()) if kind == "all" else tp[kind]
        f_p = sum(fp.values()) if kind == "all" else fp[kind]
        f_n = sum(fn.values()) if kind == "all" else fn[kind]
        precision = t / (t + f_p) if t + f_p else 1.0
        recall = t / (t + f_n) if t + f_n else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[kind] = {"precision": precision, "recall": recall, "f1": f1, "support": t + f_n}
    return out


@dataclass
class AutomationEvaluation:
    name: str
    metrics: dict
    per_rule: pd.DataFrame
    errors: pd.DataFrame


def evaluate_automation(parser, rows: list[dict], name: str) -> AutomationEvaluation:
    """Score ``parser`` on annotated rows; metric names are ``automation_{name}_*``."""
    queries = [r["query"] for r in rows]
    predicted = parser.parse_many(queries)
    with_gold = [i for i, r in enumerate(rows) if r["expected"] is not None]
    group_ok = {i: groups_match(predicted[i], rows[i]["expected"], intents=True) for i in with_gold}
    group_ok_ni = {i: groups_match(predicted[i], rows[i]["expected"], intents=False) for i in with_gold}
    cond_ok = {i: conditions_match(predicted[i], rows[i]["expected"]) for i in with_gold}
    structure_ok = {i: structure_matches(predicted[i], rows[i]["expected"]) for i in with_gold}
    builtin = [builtin_recognised(predicted[i], rows[i]["expected"]) for i in with_gold]
    p = f"automation_{name}_"
    n = max(len(with_gold), 1)
    metrics = {
        p + "n": len(rows),
        p + "group_exact": sum(group_ok.values()) / n,
        p + "group_exact_no_intent": sum(group_ok_ni.values()) / n,
        p + "condition_exact": sum(cond_ok.values()) / n,
        p + "group_structure": sum(structure_ok.values()) / n,
        p + "builtin_recognised": sum(r for r, _ in builtin),
        p + "builtin_total": sum(t for _, t in builtin),
    }
    marked = [i for i, r in enumerate(rows) if r["spans"] is not None]
    if marked:
        pred_spans = parser.predict_spans([rows[i]["query"] for i in marked])
        scores = span_scores([rows[i]["spans"] for i in marked], pred_spans)
        for kind, s in scores.items():
            for k in ("precision", "recall", "f1"):
                metrics[f"{p}span_{kind}_{k}"] = s[k]
        oracle = [i for i in marked if rows[i]["expected"] is not None]
        if oracle:
            ok = 0
            for i in oracle:
                ok += groups_match(rules_output(rows[i]["text"], rows[i]["spans"], parser.lexicons_),
                                   rows[i]["expected"], intents=False)
            metrics[p + "oracle_span_group_exact"] = ok / len(oracle)
    per_rule: dict[str, list[bool]] = defaultdict(list)
    for i in with_gold:
        for rule in rows[i]["rules"] or []:
            per_rule[rule].append(group_ok[i])
    table = pd.DataFrame(
        [{"rule": rule, "n": len(v), "group_exact": sum(v) / len(v)} for rule, v in sorted(per_rule.items())],
        columns=["rule", "n", "group_exact"])
    for _, row in table.iterrows():
        metrics[f"{p}rule_{row['rule']}_group_exact"] = row["group_exact"]
    errors = pd.DataFrame([
        {"id": rows[i]["id"], "query": rows[i]["query"], "expected": rows[i]["expected"],
         "predicted": predicted[i], "condition_ok": cond_ok[i], "groups_ok_no_intent": group_ok_ni[i]}
        for i in with_gold if not group_ok[i]],
        columns=["id", "query", "expected", "predicted", "condition_ok", "groups_ok_no_intent"])
    return AutomationEvaluation(name, metrics, table, errors)


def summary_lines(evaluations: list[AutomationEvaluation]) -> str:
    """A short table: n, group exact (with / without intents), condition exact, structure, span F1, oracle."""
    head = (f"{'automation':<12}{'n':>6}{'groups':>9}{'no-intent':>11}{'conditions':>12}{'structure':>11}"
            f"{'span F1':>9}{'oracle':>8}")
    lines = [head, "-" * len(head)]
    for ev in evaluations:
        m, p = ev.metrics, f"automation_{ev.name}_"
        lines.append(f"{ev.name:<12}{m[p + 'n']:>6}{m[p + 'group_exact']:>9.3f}{m[p + 'group_exact_no_intent']:>11.3f}"
                     f"{m[p + 'condition_exact']:>12.3f}{m[p + 'group_structure']:>11.3f}"
                     f"{m.get(p + 'span_all_f1', float('nan')):>9.3f}"
                     f"{m.get(p + 'oracle_span_group_exact', float('nan')):>8.3f}")
    lines.append("built-in behaviours recognised (flagged builtin, not proposed as tasks): " + ", ".join(
        f"{ev.name} {ev.metrics.get(f'automation_{ev.name}_builtin_recognised', 0)}"
        f"/{ev.metrics.get(f'automation_{ev.name}_builtin_total', 0)}" for ev in evaluations))
    return "\n".join(lines)
