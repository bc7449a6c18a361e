"""The automation parser's part of ``train.py``: its options, training, evaluation and MLflow logging.

Kept here so that ``train.py`` only calls it: ``add_arguments`` → ``train`` → ``log`` → ``summary``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

from fastslow.models.automation.parser import AutomationParser
from fastslow.models.automation.data import (
    AUTOMATION_BLIND_FILE, AUTOMATION_DEV_FILE, AUTOMATION_EXTRA_DEV_FILES, AUTOMATION_FIXTURE_FILE, AUTOMATION_TRAIN_DIR, automation_digest, automation_leaked,
    automation_training_files, load_automation, load_automation_training,
)
from fastslow.models.automation.metrics import AutomationEvaluation, evaluate_automation, summary_lines
from fastslow.data import DataError
from fastslow.models.lifecycle.dataset import leak_error, load_blind, without
from fastslow.models.automation.intents import IntentTaxonomy


def automation_dev_name(path: Path) -> str:
    """The evaluation name of an extra automation dev set: its file name without ``automation_``
    (automation_dev_v2 → dev_v2), ``dev_`` before it if it does not start so."""
    stem = Path(path).stem.removeprefix("automation_")
    return stem if stem.startswith("dev") else "dev_" + stem


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    group = parser.add_argument_group("automation parser")
    group.add_argument("--automation-train-dir", type=Path, default=AUTOMATION_TRAIN_DIR,
                       help="folder of annotated automation *.jsonl")
    group.add_argument("--automation-dev", type=Path, default=AUTOMATION_DEV_FILE, help="hand-written dev set")
    group.add_argument("--automation-dev-also", type=Path, nargs="*", default=list(AUTOMATION_EXTRA_DEV_FILES),
                       metavar="PATH", help="more automation dev sets, scored every run and named by their file "
                       "without ``automation_`` (default: automation_dev_v2 → dev_v2, written from the spec alone, "
                       "the retired blind sets automation_blind_vN → dev_blind_vN and automation_study_v3 → dev_study_v3); bundled training rows with "
                       "one of their queries are left out")
    group.add_argument("--automation-fixture", type=Path, default=AUTOMATION_FIXTURE_FILE,
                       help="frozen spec fixture")
    group.add_argument("--automation-blind", type=Path, default=AUTOMATION_BLIND_FILE,
                       help="blind set (gold groups, no markup): scored every run, only its figures shown")
    group.add_argument("--crf-c1", type=float, default=0.05, help="L1 regularisation of the span tagger (CRF)")
    group.add_argument("--crf-c2", type=float, default=0.01, help="L2 regularisation of the span tagger (CRF)")
    group.add_argument("--crf-iterations", type=int, default=150, help="L-BFGS iterations of the span tagger")
    group.add_argument("--intent-C", type=float, default=8.0, help="inverse regularisation of the intent classifier")
    group.add_argument("--no-automation", dest="automation", action="store_false",
                       help="train the router only (records get an empty `automation` field)")
    return parser


@dataclass
class AutomationRun:
    parser: AutomationParser
    evaluations: list[AutomationEvaluation]
    params: dict
    digests: dict
    train_rows: int
    fit_seconds: float
    datasets: list[tuple[str, str, list[dict], Path]]  # (name, context, rows, source) for MLflow's dataset tracking
    dropped_blind: int = 0  # training rows left out because their query is in the blind set
    dropped_held_out: int = 0  # ... because their query is in an extra dev set (--automation-dev-also)

    @property
    def metrics(self) -> dict:
        return {k: v for ev in self.evaluations for k, v in ev.metrics.items()}


def train(args: argparse.Namespace, train_rows: list[dict] | None = None) -> AutomationRun:
    """Load and check the data (no fixture, dev or blind query in training), fit, evaluate fixture, dev
    and the blind set (its figures only: its errors are dropped, never logged).
    ``train_rows``: the training rows when the caller already has them (``train.py --data``)."""
    started = time.perf_counter()
    intents = set(IntentTaxonomy.load().intents)
    if train_rows is None:
        train_rows = load_automation_training(args.automation_train_dir, intents)
    fixture = load_automation(args.automation_fixture, intents)
    dev = load_automation(args.automation_dev, intents)
    dev_also = [(automation_dev_name(path), path, load_automation(path, intents)) for path in args.automation_dev_also]
    blind = load_blind(args.automation_blind, load_automation, intents=intents)
    # as the router's corpus: the training rows never hold a query of the blind set or of an extra dev set
    # (a short command of a retired blind set may be in the hand-written core too); the --data files were
    # refused for one already (``training.load_extra_data``), and a query of the fixture or the
    # hand-written dev set in the corpus is refused below
    train_rows, dropped_blind = without(train_rows, blind, key=lambda r: r["text"])
    train_rows, dropped_held_out = without(train_rows, [r for _, _, rows in dev_also for r in rows],
                                           key=lambda r: r["text"])
    for name, held_out in (("automation fixture", fixture), ("automation dev set", dev)):
        overlap = automation_leaked(train_rows, held_out)
        if overlap:
            raise DataError(leak_error(overlap, name))
    parser = AutomationParser(c1=args.crf_c1, c2=args.crf_c2, max_iterations=args.crf_iterations,
                              intent_C=args.intent_C)
    parser.fit([r["query"] for r in train_rows], train_rows)
    fit_seconds = round(time.perf_counter() - started, 1)
    blind_ev = evaluate_automation(parser, blind, "blind")
    blind_ev.errors = blind_ev.errors.iloc[0:0]  # the blind set's figures only: its errors stay unread
    evaluations = [evaluate_automation(parser, fixture, "fixture"), evaluate_automation(parser, dev, "dev"),
                   *(evaluate_automation(parser, rows, name) for name, _, rows in dev_also), blind_ev]
    params = {f"automation_{k}": v for k, v in parser.get_params().items()}
    digests = {"automation_train_digest": automation_digest(train_rows), "automation_dev_digest": automation_digest(dev),
               **{f"automation_{name}_digest": automation_digest(rows) for name, _, rows in dev_also},
               "automation_fixture_digest": automation_digest(fixture), "automation_blind_digest": automation_digest(blind),
               "automation_train_files": "" if args.only else
               ",".join(p.name for p in automation_training_files(args.automation_train_dir))}
    datasets = [("automation_train", "training", train_rows, args.automation_train_dir),
                ("automation_dev", "dev", dev, args.automation_dev),
                *((f"automation_{name}", "dev", rows, path) for name, path, rows in dev_also),
                ("automation_fixture", "fixture", fixture, args.automation_fixture),
                ("automation_blind", "blind", blind, args.automation_blind)]
    return AutomationRun(parser, evaluations, params, digests, len(train_rows), fit_seconds, datasets, dropped_blind,
                         dropped_held_out)


def log(mlflow, run: AutomationRun, folder: Path) -> None:
    """Metrics (``automation_*``), parameters, digests, the per-rule table and the error tables."""
    mlflow.log_params({k: str(v) for k, v in run.params.items()})
    mlflow.log_params({**run.digests, "automation_train_rows": run.train_rows,
                       "automation_train_rows_dropped_blind": run.dropped_blind,
                       "automation_train_rows_dropped_held_out": run.dropped_held_out})
    mlflow.log_metrics(run.metrics)
    mlflow.log_metric("automation_fit_seconds", run.fit_seconds)
    for ev in run.evaluations:
        if ev.name == "blind":
            continue  # figures (the metrics) only: no per-rule or error tables of the blind set
        ev.per_rule.to_csv(folder / f"automation_{ev.name}_per_rule.csv", index=False)
        with open(folder / f"automation_{ev.name}_errors.jsonl", "w", encoding="utf-8") as f:
            for record in ev.errors.to_dict(orient="records"):
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
    fixture = next(ev for ev in run.evaluations if ev.name == "fixture")
    mlflow.log_table(fixture.per_rule, artifact_file="evaluation/automation_fixture_per_rule.json")


def summary(run: AutomationRun) -> str:
    lines = [summary_lines(run.evaluations)]
    fixture = next(ev for ev in run.evaluations if ev.name == "fixture")
    failed = fixture.per_rule[fixture.per_rule["group_exact"] < 1.0]
    if len(failed):
        lines.append("fixture rules below 100%: " + ", ".join(f"{r.rule} {r.group_exact:.2f}" for r in failed.itertuples()))
    lines.append(f"automation parser: {run.train_rows} training queries, fit {run.fit_seconds}s"
                 + (f" ({run.dropped_blind} left out: their query is in the blind set)" if run.dropped_blind else "")
                 + (f" ({run.dropped_held_out} left out: their query is in an extra dev set)" if run.dropped_held_out else ""))
    return "\n".join(lines)
