"""The saved model: router + splitter + rule settings, written with joblib beside a manifest.

A pickle runs code when it is loaded, so ``load_bundle`` checks the file's SHA-256 against the
manifest written at training time before it unpickles anything.
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from pathlib import Path

import joblib

from features.text import Utterance
from models.automation import AutomationParser
from models.capture_wiring import capture_candidates
from models.record import DEFAULT_MAX_QUERY_CHARS, InputError, build_record, error_record, validate_input
from models.router import Router
from models.rules import aggregate, review_required
from models.splitter import SplitLexicon, split_subrequests
from models.manifest import (DEFAULT_MODEL_PATH, ModelLoadError, library_versions, manifest_path, sha256_of,
                             verify_bundle)
from models.taxonomy import MULTI_STEP_PLANNING



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

    def warm_up(self) -> "FastslowModel":
        self.router.segmenter.warm_up()
        self.score([{"query": "打开空调"}, {"query": "上车时打开空调"}])
        return self

    def score(self, rows: list) -> list[dict]:
        """One record per input row, in order; invalid rows get an error record, never an exception."""
        records: list[dict | None] = [None] * len(rows)
        valid: list[tuple[int, dict]] = []
        for i, raw in enumerate(rows):
            try:
                valid.append((i, validate_input(raw, self.max_query_chars)))
            except InputError as exc:
                qid = raw.get("id") if isinstance(raw, dict) else None
                query = raw.get("query") if isinstance(raw, dict) else None
                records[i] = error_record(qid, query, str(exc))
        if valid:
            for (i, item), record in zip(valid, self._score_valid([item for _, item in valid])):
                records[i] = record
        return records

    def _score_valid(self, items: list[dict]) -> list[dict]:
        wholes = self.router.utterances(items)
        spans = [split_subrequests(u.tokens, self.splitter) for u in wholes]
        segmenter = self.router.segmenter
        pieces = [piece(segmenter, u, a, b, first=k == 0)
                  for u, item_spans in zip(wholes, spans) if len(item_spans) > 1
                  for k, (a, b) in enumerate(item_spans)]
        routes = self.router.route(wholes + pieces)
        whole_routes, piece_routes = routes[: len(wholes)], iter(routes[len(wholes):])
        if self.automation is None:
            groups, group_confidences = [None] * len(items), [None] * len(items)
        else:
            groups, group_confidences = self.automation.parse_many_with_confidence([item["query"] for item in items])
        records = []
        for item, whole, item_spans, automation, confidences in zip(items, whole_routes, spans, groups,
                                                                     group_confidences):
            subs = [next(piece_routes) for _ in item_spans] if len(item_spans) > 1 else [whole]
            if len(subs) > 1 and whole.primary_reason_code == MULTI_STEP_PLANNING:
                subs = [whole]  # the model sees a dependent chain: not independently splittable
            route = aggregate(subs, text=whole.text)
            review = review_required(route, bool(item["context"]), self.review_threshold)
            # HARD RULE: the capture policy, per group (INV-TASK-2: proposals only, never a written task)
            candidates = capture_candidates(item, automation or [], confidences, route.confidence)
            records.append(build_record(item, route, subs, review, self.version, automation, candidates))
        return records


def piece(segmenter, whole: Utterance, start: int, end: int, first: bool) -> Utterance:
    """A subrequest as an utterance of its own. Its earlier sibling is its context: in
    把座椅通风打开，副驾的也打开 the second part continues an established direct flow (上下文: 上一轮快时，
    当前简单直接动作可继续快); if the earlier part was slow, aggregation makes the whole slow anyway."""
    return segmenter.annotate(whole.tokens[start:end], whole.context if first else "prev_fast", whole.endpoint)


def save_bundle(model: FastslowModel, path: Path, extra: dict | None = None) -> dict:
    """Write the joblib file and its manifest (SHA-256, library versions, metrics, ...)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, path, compress=3)
    manifest = {
        "model_version": model.version,
        "file": path.name,
        "sha256": sha256_of(path),
        "libraries": library_versions(),
        **model.info,
        **(extra or {}),
    }
    manifest_path(path).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return manifest


def load_bundle(path: Path | str = DEFAULT_MODEL_PATH, check_versions: bool = True) -> FastslowModel:
    """Load a bundle after checking its SHA-256 (and library versions) against its manifest."""
    path = Path(path)
    manifest = verify_bundle(path, check_versions)
    actual = manifest["sha256"]
    model = joblib.load(path)
    if not isinstance(model, FastslowModel):
        raise ModelLoadError(f"{path} does not hold a fastslow model")
    # The model is hundreds of thousands of long-lived objects (vocabularies, lexicons). Left in the
    # collector's generations, every full collection walks them all: a third of batch scoring time.
    gc.collect()
    gc.freeze()
    model.info = {**model.info, "sha256": actual, "manifest": manifest}
    return model
