"""The pipeline: one query → Utterance → routing, automation, capture → one record.

``FastslowModel`` composes the three jobs (``models.routing``, ``models.automation``,
``models.capture``), which know nothing of each other; the hard rules they share are applied here in
the spec's order. Saving and loading it is ``models.lifecycle.bundle``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field

from fastslow.features.text import Utterance, last_turn_text
from fastslow.models.automation.parser import AutomationParser
from fastslow.models.capture.candidates import capture_candidates
from fastslow.models.record import DEFAULT_MAX_QUERY_CHARS, InputError, build_record, error_record, validate_input
from fastslow.models.routing.explain import DEFAULT_TOP_K, explain_utterances
from fastslow.models.routing.router import Router
from fastslow.models.routing.rules import (
    aggregate, asked_again, is_follow_up, missing_slot, review_required, routed_parts, subrequest_context,
)
from fastslow.models.routing.splitter import SplitLexicon, split_subrequests



@dataclass
class FastslowModel:
    """Everything needed to turn input rows into records."""

    router: Router
    splitter: SplitLexicon
    version: str
    review_threshold: float = 0.5
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS
    info: dict = field(default_factory=dict)
    automation: AutomationParser | None = None  # the condition/action parser; None: `automation` stays []
    explain_top_k: int = DEFAULT_TOP_K  # features per routed (sub)request in an explanation; 0: all of them

    def warm_up(self) -> "FastslowModel":
        self.router.segmenter.warm_up()
        self.score([{"query": "打开空调"}, {"query": "上车时打开空调"}])
        return self

    def score(self, rows: list, memo: "Memo | None" = None, explain: bool = False,
              values_checked: bool = False) -> list[dict]:
        """One record per input row, in order; invalid rows get an error record, never an exception.
        ``explain`` (or a row's own ``"explain": true``) adds an ``explanation`` to the records.
        ``values_checked``: as ``validate_input``'s (the server has found every value of every row clean).

        ``memo`` (opt-in, for logs that repeat their head queries): the analysis of a
        (query, context, endpoint) already seen is reused; the record itself (id, capture candidates
        against the row's own existing tasks, idempotency keys) is still built for each row."""
        records: list[dict | None] = [None] * len(rows)
        valid: list[tuple[int, dict]] = []
        for i, raw in enumerate(rows):
            try:
                valid.append((i, validate_input(raw, self.max_query_chars, values_checked)))
            except InputError as exc:
                qid = raw.get("id") if isinstance(raw, dict) else None
                query = raw.get("query") if isinstance(raw, dict) else None
                records[i] = error_record(qid, query, str(exc))
        if valid:
            for (i, item), record in zip(valid, self._score_valid([item for _, item in valid], memo, explain)):
                records[i] = record
        return records

    def score_valid(self, items: list[dict]) -> list[dict]:
        """``score`` of inputs that ``validate_input`` has already cleaned (the server validates each
        request as it reads it): one record per item, no error records."""
        return self._score_valid(items)

    def _score_valid(self, items: list[dict], memo: "Memo | None" = None, explain: bool = False) -> list[dict]:
        if memo is None:
            analyses = self._analyse(items)
        else:
            keys = [memo_key(item) for item in items]
            missing = {key: item for key, item in zip(keys, items) if key not in memo}
            fresh = dict(zip(missing, self._analyse(list(missing.values()))))
            analyses = [fresh[key] if key in fresh else memo[key] for key in keys]
            memo.update(fresh)
        records = []
        for item, (whole, subs, automation, confidences, utterances) in zip(items, analyses):
            route = aggregate(subs, text=whole.text)
            review = review_required(route, bool(item["context"]), self.review_threshold)
            # HARD RULE: the capture policy, per group (INV-TASK-2: proposals only, never a written task)
            candidates = capture_candidates(item, automation or [], confidences, route.confidence)
            records.append(build_record(item, route, subs, review, self.version, automation, candidates))
            if explain or item.get("explain"):
                records[-1]["explanation"] = self.explanation(item, utterances)
        return records

    def with_parses(self, rows: list[dict]) -> list[dict]:
        """``rows`` as the router reads them in this model: each with its query's automation groups
        (``with_groups``; the rows themselves when the model has no parser)."""
        if self.automation is None:
            return rows
        return with_groups(rows, self.automation.parse_many([row["query"] for row in rows]))

    def explanation(self, item: dict, utterances: list[Utterance]) -> dict:
        """Why the record is what it is: per routed (sub)request, each feature's share of the logit
        margin over the runner-up (``models.routing.explain``), and the automation parser's spans with
        their confidences (``None`` when the model has no parser)."""
        return {"routing": explain_utterances(self.router, utterances, self.explain_top_k or None),
                "automation": self.automation.explain_spans(item["query"]) if self.automation is not None else None}

    def _analyse(self, items: list[dict]) -> list[tuple]:
        """Per item, what its query, context and endpoint alone decide: the whole's route, the routes
        aggregated, the automation groups and their confidences, and the utterances of the routed parts. The
        query is parsed first: routing reads the groups as input (``with_groups``)."""
        if self.automation is None:
            groups, group_confidences = [None] * len(items), [None] * len(items)
        else:
            groups, group_confidences = self.automation.parse_many_with_confidence([item["query"] for item in items])
        wholes = self.router.utterances(with_groups(items, groups))
        spans = [split_subrequests(u.tokens, self.splitter) for u in wholes]
        segmenter = self.router.segmenter
        pieces = [piece(segmenter, u, a, b, k)
                  for u, item_spans in zip(wholes, spans) if len(item_spans) > 1
                  for k, (a, b) in enumerate(item_spans)]
        routes = [missing_slot(route) for route in self.router.route(wholes + pieces)]  # HARD RULE: 缺关键槽位
        whole_routes, routed_pieces = routes[: len(wholes)], iter(zip(pieces, routes[len(wholes):]))
        follow_ups = [i for i, (item, u) in enumerate(zip(items, wholes)) if item["context"] and is_follow_up(u.text)]
        if follow_ups:  # few: the user's turn before each, routed as said alone
            earlier = [{"query": last_turn_text(items[i]["context"], "user"), "endpoint": items[i].get("endpoint"),
                        "context": []} for i in follow_ups]
            for i, before in zip(follow_ups, self.router.route(self.with_parses(earlier))):
                whole_routes[i] = asked_again(whole_routes[i], before)
        analyses = []
        for utterance, whole, item_spans, automation, confidences in zip(wholes, whole_routes, spans, groups,
                                                                          group_confidences):
            pairs = [next(routed_pieces) for _ in item_spans] if len(item_spans) > 1 else []
            subs = routed_parts(whole, [route for _, route in pairs])
            utterances = [u for u, _ in pairs] if len(subs) > 1 else [utterance]
            analyses.append((whole, subs, automation, confidences, utterances))
        return analyses


def memo_key(item: dict) -> tuple:
    """What a record's analysis depends on: the query, the context turns and the endpoint."""
    context = json.dumps(item["context"], ensure_ascii=False, sort_keys=True) if item["context"] else ""
    return item["query"], context, item.get("endpoint")


class Memo(OrderedDict):
    """The analyses of the last ``size`` distinct (query, context, endpoint), least recently used out."""

    def __init__(self, size: int = 100_000):
        super().__init__()
        self.size = size

    def __getitem__(self, key):
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def update(self, fresh: dict) -> None:
        for key, value in fresh.items():
            self[key] = value
        while len(self) > self.size:
            self.popitem(last=False)


def with_groups(rows: list[dict], groups: list) -> list[dict]:
    """Each row with its query's automation groups as its ``automation`` field, the input routing reads them
    from (``features.text.parse_signals``): copies, the rows are left as they are. A row without groups
    (``None``: no parser) is passed as it is."""
    return [row if g is None else {**row, "automation": g} for row, g in zip(rows, groups)]


def piece(segmenter, whole: Utterance, start: int, end: int, index: int) -> Utterance:
    """The ``index``-th subrequest (tokens ``start:end``) as an utterance of its own, in the context
    ``subrequest_context`` gives it."""
    tokens = whole.tokens[start:end]
    return segmenter.annotate(tokens, subrequest_context(whole.context, index, "".join(tokens)), whole.endpoint)
