"""Evaluation of the full record path (splitter, router, aggregation) against labelled rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from fastslow.models.taxonomy import LABEL_SLUGS, LABELS, REASON_CODES


@dataclass
class Evaluation:
    name: str
    metrics: dict
    per_label: pd.DataFrame
    per_code: pd.DataFrame
    label_confusion: pd.DataFrame
    code_confusion: pd.DataFrame
    errors: pd.DataFrame
    risk_coverage: list  # ``risk_coverage`` points: accuracy of the most confident 100/90/80%


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    edges = np.linspace(0.0, 1.0, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (confidence > lo) & (confidence <= hi)
        if mask.any():
            ece += mask.mean() * abs(confidence[mask].mean() - correct[mask].mean())
    return float(ece)


COVERAGES = (1.0, 0.9, 0.8)


def risk_coverage(confidence: np.ndarray, correct: np.ndarray, coverages=COVERAGES) -> list[dict]:
    """Accuracy of the most confident share of the rows, per coverage: what answering only the rows
    above a confidence threshold buys. ``threshold`` is the lowest confidence kept (ties broken by order)."""
    order = np.argsort(-confidence, kind="stable")
    out = []
    for coverage in coverages:
        k = int(np.ceil(coverage * len(order) - 1e-9))
        kept = order[:k]
        out.append({"coverage": coverage, "n": k,
                    "accuracy": round(float(correct[kept].mean()), 4) if k else 0.0,
                    "mean_confidence": round(float(confidence[kept].mean()), 4) if k else 0.0,
                    "threshold": round(float(confidence[kept].min()), 4) if k else 0.0})
    return out


def coverage_key(coverage: float) -> str:
    return f"accuracy_at_{round(coverage * 100)}_coverage"


def _table(y_true, y_pred, classes) -> pd.DataFrame:
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=list(classes), zero_division=0)
    return pd.DataFrame({"precision": p, "recall": r, "f1": f, "support": s}, index=list(classes)).round(4)


def evaluate(model, rows: list[dict], name: str, records: list[dict] | None = None,
             keep_errors: bool = True) -> Evaluation:
    """Metrics ``{name}_*`` of ``model`` on labelled ``rows`` (or of ``records`` already scored for
    them). ``keep_errors=False`` leaves ``errors`` empty: a blind set's mistakes are never written down."""
    records = model.score(rows) if records is None else records
    gold_label = [r["label"] for r in rows]
    gold_code = [r["primary_reason_code"] for r in rows]
    pred_label = [rec.get("label", "error") for rec in records]
    pred_code = [rec.get("primary_reason_code", "error") for rec in records]
    confidence = np.array([rec.get("confidence", 0.0) for rec in records], dtype=float)
    correct = np.array([g == p for g, p in zip(gold_label, pred_label)])
    per_label = _table(gold_label, pred_label, LABELS)
    codes = [c for c in REASON_CODES if c in set(gold_code) | set(pred_code)]
    per_code = _table(gold_code, pred_code, codes)
    n = len(rows)
    # macro-F1 over the labels that occur (gold or predicted): a file of one label is not scored 1/3
    present = per_label.index.isin(set(gold_label) | set(pred_label))
    metrics = {
        f"{name}_n": n,
        f"{name}_label_accuracy": round(float(correct.mean()), 4) if n else 0.0,
        f"{name}_label_macro_f1": round(float(per_label["f1"][present].mean()), 4) if present.any() else 0.0,
        f"{name}_code_accuracy": round(float(np.mean([g == p for g, p in zip(gold_code, pred_code)])), 4) if n else 0.0,
        f"{name}_ece": round(expected_calibration_error(confidence, correct), 4),
        f"{name}_mean_confidence": round(float(confidence.mean()), 4) if n else 0.0,
        # over-confident when positive: the "mean confidence minus accuracy"
        f"{name}_confidence_gap": round(float(confidence.mean() - correct.mean()), 4) if n else 0.0,
        f"{name}_review_rate": round(float(np.mean([rec.get("review_required", True) for rec in records])), 4),
    }
    points = risk_coverage(confidence, correct) if n else []
    for point in points:
        metrics[f"{name}_{coverage_key(point['coverage'])}"] = point["accuracy"]
    for label, row in per_label.iterrows():
        for metric in ("precision", "recall", "f1"):
            metrics[f"{name}_{LABEL_SLUGS[label]}_{metric}"] = float(row[metric])
    label_cm = pd.DataFrame(confusion_matrix(gold_label, pred_label, labels=list(LABELS)),
                            index=list(LABELS), columns=list(LABELS))
    code_cm = pd.DataFrame(confusion_matrix(gold_code, pred_code, labels=codes), index=codes, columns=codes)
    errors = pd.DataFrame([
        {"query": row["query"], "context": row.get("context") or [], "endpoint": row.get("endpoint"),
         "gold_label": row["label"], "pred_label": rec.get("label"),
         "gold_code": row["primary_reason_code"], "pred_code": rec.get("primary_reason_code"),
         "confidence": rec.get("confidence"), "source": row.get("source", "")}
        for row, rec in zip(rows, records)
        if keep_errors and (rec.get("label") != row["label"] or rec.get("primary_reason_code") != row["primary_reason_code"])
    ], columns=["query", "context", "endpoint", "gold_label", "pred_label", "gold_code", "pred_code",
                "confidence", "source"])
    return Evaluation(name, metrics, per_label, per_code, label_cm, code_cm, errors, points)


def name_width(evaluations) -> int:
    """The width of a table's set-name column: 10, or the longest name and a space."""
    return max([10, *(len(ev.name) + 1 for ev in evaluations)])


def summary_table(evaluations) -> str:
    """The routing figures of each evaluation, one line a set (what train.py and `fastslow eval` print)."""
    w = name_width(evaluations)
    head = (f"{'set':<{w}}{'n':>6}{'label acc':>11}{'macro-F1':>10}{'code acc':>10}{'P fast':>8}{'conf':>7}"
            f"{'conf-acc':>9}{'ECE':>7}")
    slugs = "".join(f"{'F1 ' + s:>14}" for s in LABEL_SLUGS.values())
    lines = [head + slugs, "-" * (len(head) + len(slugs))]
    for ev in evaluations:
        m, n = ev.metrics, ev.name
        line = (f"{n:<{w}}{m[f'{n}_n']:>6}{m[f'{n}_label_accuracy']:>11.3f}{m[f'{n}_label_macro_f1']:>10.3f}"
                f"{m[f'{n}_code_accuracy']:>10.3f}{m[f'{n}_fast_precision']:>8.3f}{m[f'{n}_mean_confidence']:>7.3f}"
                f"{m[f'{n}_confidence_gap']:>+9.3f}{m[f'{n}_ece']:>7.3f}")
        line += "".join(f"{m[f'{n}_{s}_f1']:>14.3f}" for s in LABEL_SLUGS.values())
        lines.append(line)
    return "\n".join(lines)


def risk_coverage_table(evaluations) -> str:
    """Accuracy (and mean confidence) of the most confident 100/90/80% of each set's rows."""
    w = name_width(evaluations)
    head = f"{'set':<{w}}" + "".join(f"{f'acc@{round(c * 100)}%':>10}" for c in COVERAGES) + f"{'conf@80%':>10}{'threshold@80%':>15}"
    lines = [head, "-" * len(head)]
    for ev in evaluations:
        points = ev.risk_coverage
        lines.append(f"{ev.name:<{w}}" + "".join(f"{p['accuracy']:>10.3f}" for p in points)
                     + f"{points[-1]['mean_confidence']:>10.3f}{points[-1]['threshold']:>15.3f}")
    return "\n".join(lines)


def risk_coverage_frame(evaluations) -> pd.DataFrame:
    """The risk–coverage points of each set as one table (an MLflow artifact)."""
    return pd.DataFrame([{"set": ev.name, **p} for ev in evaluations for p in ev.risk_coverage],
                        columns=["set", "coverage", "n", "accuracy", "mean_confidence", "threshold"])
