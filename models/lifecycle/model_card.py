"""The model card: a markdown page generated from one training run's data, metrics and errors."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from fastslow.models.taxonomy import LABEL_SLUGS


@dataclass
class DatasetSummary:
    name: str
    context: str      # training, dev or fixture
    rows: int
    digest: str
    source: str


@dataclass
class CardFacts:
    version: str
    run_id: str
    trained_at: str
    params: dict
    datasets: list[DatasetSummary]
    evaluations: list            # fastslow.models.routing.metrics.Evaluation (fixture, dev, train, blind)
    automation_evaluations: list = field(default_factory=list)  # AutomationEvaluation (fixture, dev, blind)
    capture_conformance: float = 0.0
    capture_failures: list = field(default_factory=list)
    cv: dict = field(default_factory=dict)


def _table(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)


def weaknesses(facts: CardFacts, worst: int = 3) -> list[str]:
    """What the evaluation says this model gets wrong: worst reason codes on dev with their main
    confusion, automation rules below 100% on dev, calibration, capture."""
    notes = []
    dev = next((ev for ev in facts.evaluations if ev.name == "dev"), None)
    if dev is not None:
        codes = dev.per_code[(dev.per_code["support"] > 0) & (dev.per_code["f1"] < 1.0)].sort_values("f1")
        for code, row in codes.head(worst).iterrows():
            confused = dev.code_confusion.loc[code].drop(code, errors="ignore") if code in dev.code_confusion.index else None
            other = f"; most often taken for {confused.idxmax()} ({int(confused.max())}×)" \
                if confused is not None and len(confused) and confused.max() > 0 else ""
            notes.append(f"`{code}`: F1 {row['f1']:.3f} on dev (support {int(row['support'])}){other}.")
        if dev.metrics["dev_ece"] > 0.05:
            notes.append(f"Confidence is not well calibrated on dev (ECE {dev.metrics['dev_ece']:.3f}).")
    blind = next((ev for ev in facts.evaluations if ev.name == "blind"), None)
    if blind is not None and abs(blind.metrics["blind_confidence_gap"]) > 0.02:
        gap = blind.metrics["blind_confidence_gap"]
        notes.append(f"{'Over' if gap > 0 else 'Under'}-confident on the blind set: mean confidence minus label "
                     f"accuracy {gap:+.3f} (the temperature is fitted on the sets of the run's `calibration` parameter).")
    for ev in facts.automation_evaluations:
        if ev.name == "dev" and len(ev.errors):
            notes.append(f"Automation: {len(ev.errors)} of {ev.metrics['automation_dev_n']} dev queries get other "
                         f"groups than the gold ones (evaluation/automation_dev_errors.jsonl).")
            for r in ev.per_rule[ev.per_rule["group_exact"] < 1.0].sort_values("group_exact").head(worst).itertuples():
                notes.append(f"Automation rule `{r.rule}`: groups exact {r.group_exact:.3f} on dev (n {r.n}).")
    if facts.capture_conformance < 1.0:
        notes.append(f"Capture contract conformance {facts.capture_conformance:.3f}: NOT promotable "
                     f"({len(facts.capture_failures)} failing checks).")
    notes.append("The dev sets were also used for error analysis while the model was built: read their "
                 "figures as optimistic. Much of the training data is generated from templates.")
    return notes


def model_card(facts: CardFacts) -> str:
    lines = [f"# Model card: {facts.version}", "",
             f"MLflow run `{facts.run_id}`, trained {facts.trained_at}.", "",
             "## Intended use", "",
             "Route Chinese voice-assistant queries (car, speaker, home) to the fast or the slow system "
             "(XA4.1: 快 / 慢 / 模糊 with one reason code), parse their condition/action groups, and "
             "propose (never create) tasks under INV-TASK-2. Low-confidence records carry "
             "`review_required` for a person to check.", "",
             "Not for: other languages, deciding anything about a user without the fast/slow systems "
             "behind it, or writing tasks (capture only proposes).", "",
             "## Data", "",
             _table(pd.DataFrame([{"dataset": d.name, "used for": d.context, "rows": d.rows,
                                   "digest": d.digest[:12], "source": d.source} for d in facts.datasets])), "",
             "## Metrics", "", "Routing (full record path: splitter, router, aggregation):", ""]
    rows = []
    for ev in facts.evaluations:
        m, n = ev.metrics, ev.name
        rows.append({"set": n, "n": m[f"{n}_n"], "label acc": m[f"{n}_label_accuracy"],
                     "macro-F1": m[f"{n}_label_macro_f1"], "code acc": m[f"{n}_code_accuracy"], "ECE": m[f"{n}_ece"],
                     **{f"F1 {s}": m[f"{n}_{s}_f1"] for s in LABEL_SLUGS.values()}})
    lines += [_table(pd.DataFrame(rows)), ""]
    if facts.cv:
        lines += ["Cross-validation on the training data: " + ", ".join(
            f"{k[3:-5]} {facts.cv[k]:.3f} ± {facts.cv[k[:-5] + '_std']:.3f}" for k in facts.cv if k.endswith("_mean")), ""]
    if facts.automation_evaluations:
        auto = []
        for ev in facts.automation_evaluations:
            m, p = ev.metrics, f"automation_{ev.name}_"
            auto.append({"set": ev.name, "n": m[p + "n"], "groups exact": m[p + "group_exact"],
                         "no-intent": m[p + "group_exact_no_intent"], "conditions": m[p + "condition_exact"],
                         "structure": m[p + "group_structure"],
                         "span F1": m.get(p + "span_all_f1", float("nan"))})
        lines += ["Automation parser:", "", _table(pd.DataFrame(auto)), ""]
    lines += [f"Capture contract (INV-TASK-2) conformance: {facts.capture_conformance:.3f}.", "",
              "## Known weaknesses", "", *[f"- {note}" for note in weaknesses(facts)], "",
              "## Settings", "", ", ".join(f"`{k}={v}`" for k, v in sorted(facts.params.items())), ""]
    return "\n".join(lines)
