"""Train the fastslow router, evaluate it on the frozen fixture, the dev set and the blind set, log it to MLflow.

    python train.py                 # the same as `fastslow train`
    python train.py --seed 7 --C 4  # other settings; every run is logged to MLflow
    python train.py --data reviewed.csv          # the bundled corpus plus your labelled rows
    python train.py --config my.toml --cv 5      # settings from a file; 5-fold cross-validation

Defaults: bundled data under data/, a local SQLite MLflow store (sqlite:///mlflow.db, or
$MLFLOW_TRACKING_URI), the model written to models/artifacts/fastslow.joblib with its manifest and
model card, and registered as a new version of `fastslow`; the alias `champion` moves to it only when
its frozen-fixture metrics are not below the champion's and capture conformance is 100%.

Calibration: the router's temperature is fitted on the calibration set, written from the specs alone by
someone who never saw the training data and never studied since (``--calibrate-on``), never on the
training data's own out-of-fold predictions nor on a set whose errors were read (see ``fit_temperature``).
The blind sets under data/blind/ are scored in every run, their figures printed and logged as
``blind_*`` / ``automation_blind_*`` metrics; their rows and errors are never printed or logged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from fastslow.data import DATA_DIR, DataError
from fastslow.data.io import InputFileError, read_rows
from fastslow.features.spoken import augment_rows
from fastslow.features.normalise import normalise
from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.features.lexicon import lexicons_digest
from fastslow.models.lifecycle import automation_training
from fastslow.models.automation.data import load_automation, load_automation_training
from fastslow.models.automation.intents import IntentTaxonomy
from fastslow.models.capture.contract import CAPTURE_FIXTURE_FILE, evaluate_contract
from fastslow.models.lifecycle import registry, signing
from fastslow.models.lifecycle.bundle import FastslowModel, save_bundle
from fastslow.models.lifecycle.config import ConfigError, parse_args
from fastslow.models.lifecycle.cross_validation import cross_validate, cv_summary
from fastslow.models.lifecycle.dataset import (BLIND_FILE, CALIBRATION_FILE, DEV_FILE, EXTRA_DEV_FILES, FIXTURE_FILE,
                                               TRAIN_DIR, digest, leak_error, leaked, load_blind, load_labelled,
                                               load_training, query_key, training_files, without)
from fastslow.models.lifecycle.extra_data import ExtraDataError, Reference, load_extra
from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH
from fastslow.models.lifecycle.model_card import CardFacts, DatasetSummary, model_card
from fastslow.models.lifecycle.progress import Progress, score_with_progress
from fastslow.models.lifecycle.pyfunc import log_pyfunc_model
from fastslow.models.pipeline import with_groups
from fastslow.models.lifecycle.registry import DEFAULT_REGISTERED_MODEL, DEFAULT_TRACKING_URI, RegistryError
from fastslow.models.robustness import robustness
from fastslow.models.lifecycle.plots import correctness, plot_confusion_matrix, plot_reliability, plot_risk_coverage
from fastslow.models.routing.baseline import PlainBaseline, comparison_table
from fastslow.models.routing.metrics import evaluate, risk_coverage_frame, risk_coverage_table, summary_table
from fastslow.models.routing.router import Router
from fastslow.models.routing.splitter import SplitLexicon

DEFAULT_EXPERIMENT = "fastslow"
BLIND_DIR = DATA_DIR / "blind"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="train.py", description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=None,
                        help="TOML file of settings (see fastslow.toml); options given here win over it")
    parser.add_argument("--seed", type=int, default=13, help="random seed (cross-validation folds)")
    parser.add_argument("--C", type=float, default=8.0, help="inverse regularisation of the router")
    parser.add_argument("--fast-min-probability", type=float, default=0.0, metavar="P",
                        help="快 only when its calibrated probability is at least P, else the more probable of 慢 and "
                             "模糊: a slow query answered fast is the costly error (0: plain argmax)")
    parser.add_argument("--class-weight", choices=("balanced", "none"), default="none",
                        help="weight reason codes inversely to their frequency (balanced), or not")
    parser.add_argument("--hmm", action="store_true",
                        help="let jieba's HMM guess unknown words (off: dictionaries only, ~25%% faster, "
                             "same dev accuracy; char n-grams cover unknown words)")
    parser.add_argument("--spoken-variants", type=int, default=2, metavar="N",
                        help="spoken variants (fillers, wake words, tails, stutters, no punctuation, numerals, "
                             "homophones, ASR-like sound swaps) added per routing training row, with its label (0: none)")
    parser.add_argument("--review-threshold", type=float, default=0.5,
                        help="records whose label confidence is below this need review")
    parser.add_argument("--train-dir", type=Path, default=TRAIN_DIR, help="folder of labelled *.jsonl")
    parser.add_argument("--data", type=Path, nargs="+", default=[], metavar="PATH",
                        help="extra labelled files (.jsonl, .csv, .parquet, or a Label Studio JSON export .json): "
                             "routing labels and/or automation parses, merged with the bundled corpus; checked "
                             "before anything is fitted")
    parser.add_argument("--only", action="store_true",
                        help="train on the --data files alone instead of adding them to the bundled corpus")
    parser.add_argument("--no-plots", dest="plots", action="store_false",
                        help="draw no pictures (confusion matrices, reliability diagram, risk–coverage curve): "
                             "a few seconds less per run; every metric and table is logged as always")
    parser.add_argument("--cv", type=int, default=0, metavar="K",
                        help="also run K-fold cross-validation of the router on the training data (0: off)")
    parser.add_argument("--dev", type=Path, default=DEV_FILE, help="hand-written dev set")
    parser.add_argument("--dev-also", type=Path, nargs="*", default=list(EXTRA_DEV_FILES), metavar="PATH",
                        help="more labelled dev sets, scored every run and reported as dev_<stem> (default: the "
                             "retired blind sets routing_blind_vN → dev_blind_vN (N = 1 … 20), "
                             "routing_dev_v2 → dev_v2); never trained on")
    parser.add_argument("--calibrate-on", type=Path, nargs="*", default=[CALIBRATION_FILE], metavar="PATH",
                        help="labelled sets written apart from the training data and never studied: the router's "
                             "temperature is fitted on them, each row scored cross-fitted by halves (default: "
                             "data/calibration/routing_calibration.jsonl → calibration; none: dev); never trained on")
    parser.add_argument("--fixture", type=Path, default=FIXTURE_FILE, help="frozen spec fixture")
    parser.add_argument("--blind", type=Path, default=BLIND_FILE,
                        help="blind set: scored every run, only its figures shown (never its rows or errors)")
    parser.add_argument("--capture-fixture", type=Path, default=CAPTURE_FIXTURE_FILE,
                        help="frozen capture contract (INV-TASK-2)")
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_PATH, help="where to write the model")
    parser.add_argument("--tracking-uri", default=None,
                        help=f"MLflow tracking URI (default: $MLFLOW_TRACKING_URI or {DEFAULT_TRACKING_URI})")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment name")
    parser.add_argument("--run-name", default=None, help="MLflow run name")
    parser.add_argument("--registered-model", default=DEFAULT_REGISTERED_MODEL,
                        help="registered model name each run adds a version to")
    parser.add_argument("--signing-key-file", type=Path, default=None,
                        help=f"sign the model with the key in this file, created if missing (default: "
                             f"${signing.KEY_ENV}, else ${signing.KEY_FILE_ENV}, else {signing.default_key_file()})")

    return automation_training.add_arguments(parser)


def model_version(params: dict, data_digest: str) -> str:
    """Same data, lexicons and settings → same version (training is deterministic)."""

    blob = json.dumps(params, sort_keys=True) + data_digest + lexicons_digest()
    return "fastslow-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def log_evaluation(mlflow, ev, folder: Path, plots: bool = True) -> None:

    mlflow.log_metrics(ev.metrics)
    if ev.name == "blind":
        return  # figures only: no per-code tables, confusions or misclassified rows of the blind set
    ev.per_label.to_csv(folder / f"{ev.name}_per_label.csv")
    ev.per_code.to_csv(folder / f"{ev.name}_per_reason_code.csv")
    ev.errors.to_json(folder / f"{ev.name}_misclassified.jsonl", orient="records", lines=True, force_ascii=False)
    ev.label_confusion.to_csv(folder / f"{ev.name}_confusion_label.csv")  # the numbers behind the plots
    ev.code_confusion.to_csv(folder / f"{ev.name}_confusion_code.csv")
    if not plots:
        return
    plot_confusion_matrix(ev.label_confusion, f"{ev.name}: label", folder / f"{ev.name}_confusion_label.png")
    plot_confusion_matrix(ev.code_confusion, f"{ev.name}: reason code", folder / f"{ev.name}_confusion_code.png")


RELIABILITY_PNG = "reliability.png"
RISK_COVERAGE_PNG = "risk_coverage.png"


def plot_calibration(sets: dict[str, tuple[list[dict], list[dict]]], folder: Path) -> None:
    """The reliability diagram and the risk–coverage curve of ``{name: (rows, records)}`` (the blind
    set and the sets the temperature is fitted on): figures of a whole set, no row shown."""
    curves = {name: correctness(rows, records) for name, (rows, records) in sets.items()}
    plot_reliability(curves, folder / RELIABILITY_PNG)
    plot_risk_coverage(curves, folder / RISK_COVERAGE_PNG)


def ensure_experiment(mlflow, name: str) -> None:
    """Select the experiment, creating it if needed. With a local SQLite store, new experiments keep
    their artifacts beside the database (``mlartifacts/`` next to ``mlflow.db``) instead of in
    whatever directory training happened to start from."""
    uri = mlflow.get_tracking_uri()
    if mlflow.get_experiment_by_name(name) is None and uri.startswith("sqlite:///"):
        store = Path(uri[len("sqlite:///"):]).resolve().parent / "mlartifacts"
        mlflow.create_experiment(name, artifact_location=store.as_uri())
    mlflow.set_experiment(name)


def load_extra_data(args: argparse.Namespace, train_rows: list[dict], automation_train: list[dict],
                    routing_held_out: list[HeldOutSet]):
    """Check the ``--data`` files against the corpus they join and the sets never trained on (the routing
    held-out sets: dev, the extra dev sets and the calibration set); raise ``ExtraDataError`` listing every
    problem (file and row) before anything is fitted."""

    held_out = {f"frozen fixture {args.fixture.name}": load_labelled(args.fixture),
                **{f"{s.name} set {s.path.name}": s.rows for s in routing_held_out},
                f"frozen fixture {args.automation_fixture.name}": load_automation(args.automation_fixture),
                f"dev set {args.automation_dev.name}": load_automation(args.automation_dev),
                **{f"dev set {path.name}": load_automation(path) for path in args.automation_dev_also},
                f"blind set {args.blind.name}": load_blind(args.blind),
                f"blind set {args.automation_blind.name}": load_blind(args.automation_blind, load_automation)}
    ref = Reference(routing_train=train_rows, automation_train=automation_train,
                    held_out={name: {query_key(r) for r in rows} for name, rows in held_out.items()},
                    intents=set(IntentTaxonomy.load().intents), lexicons=load_automation_lexicons())
    extra = load_extra(args.data, ref)
    if extra.problems:
        raise ExtraDataError(extra.problems)
    return extra


def calibration_halves(rows: list[dict]) -> tuple[list[int], list[int]]:
    """Two halves of ``rows`` by a hash of each query (every copy of a query in one half; the same
    split in every run, whatever the seed)."""
    halves: tuple[list[int], list[int]] = ([], [])
    for i, row in enumerate(rows):
        halves[hashlib.sha256(query_key(row).encode("utf-8")).digest()[0] % 2].append(i)
    return halves


def fit_temperature(model: FastslowModel, rows: list[dict]) -> tuple[list[dict], dict]:
    """Fit the router's temperature on held-out ``rows``; return their records, cross-fitted.

    The rows were written apart from the training data, so their logits are what the router gives
    queries it has not seen; out-of-fold predictions of the (largely generated) training data are
    not, and left the router over-confident on new speech. A set whose errors were studied is no
    better: fixed error by error, it reads easier than new speech and sharpens the temperature (the
    retired blind set did: +0.034 on the next blind set). The temperature the model keeps is fitted
    on all ``rows``. Their own figures would then be scored with a temperature fitted on the very
    rows they measure, so each half (``calibration_halves``) is scored with the temperature fitted on
    the other half: every row is scored, none by a temperature it helped fit. Returns the records in
    order and the temperatures (``temperature``, ``temperature_half_a``, ``temperature_half_b``).
    """
    router = model.router
    codes = [r["primary_reason_code"] for r in rows]
    parsed = model.with_parses(rows)  # the router reads each query's automation groups
    halves = calibration_halves(rows)
    records: list[dict] = [{}] * len(rows)
    temperatures = {}
    if all(halves):
        for name, fit_on, score in (("a", halves[0], halves[1]), ("b", halves[1], halves[0])):
            router.calibrate([parsed[i] for i in fit_on], [codes[i] for i in fit_on])
            temperatures[f"temperature_half_{name}"] = round(router.temperature_, 4)
            for i, record in zip(score, model.score([rows[i] for i in score])):
                records[i] = record
    router.calibrate(parsed, codes)
    temperatures["temperature"] = round(router.temperature_, 4)
    if not all(halves):  # one row, or one query: nothing to cross-fit with
        records = model.score(rows)
    return records, temperatures


@dataclass(frozen=True)
class HeldOutSet:
    """A labelled set scored every run and never trained on: dev, a ``--dev-also`` or ``--calibrate-on`` set."""

    name: str
    path: Path
    rows: list
    fits_temperature: bool


def held_out_name(path: Path) -> str:
    """The evaluation name of a held-out set from its file name, without ``routing_``, and ``dev_`` before
    it unless it names a dev or the calibration set (``blind`` alone names only the set that is still
    blind): routing_blind_v1 → dev_blind_v1, routing_dev_v2 → dev_v2, routing_calibration → calibration."""
    stem = Path(path).stem.removeprefix("routing_")
    return stem if stem.startswith(("dev", "calibration")) else "dev_" + stem


def held_out_sets(dev: Path, dev_also: list[Path], calibrate_on: list[Path]) -> list[HeldOutSet]:
    """dev, the ``--dev-also`` and the ``--calibrate-on`` sets, each file once, in that order; the
    temperature is fitted on the calibration sets, or on dev when none is given."""
    calibrate = {Path(p).resolve() for p in calibrate_on}
    sets, seen = [], set()
    for path in (dev, *dev_also, *calibrate_on):
        key = Path(path).resolve()
        if key in seen:
            continue
        seen.add(key)
        name = "dev" if key == Path(dev).resolve() else held_out_name(path)
        sets.append(HeldOutSet(name, Path(path), load_labelled(path),
                               key in calibrate or (not calibrate and name == "dev")))
    return sets


def score_held_out(model: FastslowModel, sets: list[HeldOutSet]) -> tuple[dict[str, list[dict]], dict]:
    """Fit the temperature on the sets that fit it (``fit_temperature``: their rows cross-fitted), then
    score the others with it. Returns each set's records by name, and the temperatures."""
    fitting = [s for s in sets if s.fits_temperature]
    records, temperatures = fit_temperature(model, [row for s in fitting for row in s.rows])
    by_name, start = {}, 0
    for s in fitting:
        by_name[s.name] = records[start:start + len(s.rows)]
        start += len(s.rows)
    for s in sets:
        if not s.fits_temperature:
            by_name[s.name] = model.score(s.rows)
    return by_name, temperatures


def baseline_metrics(baseline: PlainBaseline, sets: dict[str, list[dict]]) -> dict:
    """``baseline_<set>_label_accuracy`` and ``baseline_<set>_code_accuracy`` of each set (``{name: rows}``),
    computed as the router's are (``evaluate``); no row of a set is kept."""
    metrics = {}
    for name, rows in sets.items():
        ev = evaluate(baseline, rows, f"baseline_{name}", records=baseline.records(rows), keep_errors=False)
        metrics.update({f"{ev.name}_{what}_accuracy": ev.metrics[f"{ev.name}_{what}_accuracy"]
                        for what in ("label", "code")})
    return metrics


def dataset_frame(rows: list[dict]):
    """Rows as a flat table for MLflow's dataset tracking (nested fields as JSON text)."""
    import pandas as pd

    columns = ("query", "label", "primary_reason_code", "endpoint", "context", "markup", "expected", "source")
    return pd.DataFrame([{c: (json.dumps(r[c], ensure_ascii=False) if isinstance(r.get(c), (list, dict)) else r.get(c))
                          for c in columns if c in r} for r in rows])


def log_datasets(mlflow, datasets: list[tuple[str, str, list[dict], Path]]) -> list:
    """``mlflow.log_input`` for each (name, context, rows, source); returns their summaries."""

    summaries = []
    for name, context, rows, source in datasets:
        with warnings.catch_warnings():  # MLflow registers two local-file source types for file:// URIs and says so
            warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted in multiple ways")
            ds = mlflow.data.from_pandas(dataset_frame(rows), source=Path(source).resolve().as_uri(), name=name)
        mlflow.log_input(ds, context=context)
        summaries.append(DatasetSummary(name, context, len(rows), ds.digest, str(source)))
    return summaries


def held_out_keys(routing_rows: list[dict], args: argparse.Namespace) -> set[str]:
    """Normalised queries a spoken variant of a training row must never equal: the routing rows given
    (fixture, dev), the automation dev sets and fixture, and every held-out file of ``data/blind/`` (read
    here only for this guard; nothing of them is printed)."""
    queries = [r["query"] for r in routing_rows]
    for path in (args.automation_dev, *args.automation_dev_also, args.automation_fixture,
                 *sorted(BLIND_DIR.glob("*.jsonl"))):
        if Path(path).is_file():
            queries += [obj["query"] for _, obj, err in read_rows(path)
                        if err is None and isinstance(obj, dict) and isinstance(obj.get("query"), str)]
    return {normalise(q) for q in queries}


def run(args: argparse.Namespace) -> dict:

    started = time.perf_counter()
    progress = Progress("train")
    progress.stage("checking the tracking store and the signing key")
    registry.check_tracking_server(registry.tracking_uri(args.tracking_uri))  # in seconds, not after fitting
    if args.only and not args.data:
        raise DataError("--only trains on the --data files alone: give at least one")
    key, created_key = signing.ensure_key(args.signing_key_file)  # a key that cannot be used fails before fitting
    progress.stage("reading the training, held-out and blind sets")
    blind_rows = load_blind(args.blind)
    # the bundled corpus never trains on a blind query (the --data files are refused for one instead)
    bundled, dropped_blind = without([] if args.only else load_training(args.train_dir), blind_rows)
    held_out = held_out_sets(args.dev, args.dev_also, args.calibrate_on)
    dev_rows = held_out[0].rows
    others = [s for s in held_out if s.name != "dev"]
    # nor on a query of another held-out set (a few short queries of the retired blind set, 换一条路线,
    # are in the hand-written core too); a dev query in the corpus is refused below instead
    bundled, dropped_held_out = without(bundled, [r for s in others for r in s.rows])
    bundled_automation = ([] if args.only or not args.automation else
                          load_automation_training(args.automation_train_dir, set(IntentTaxonomy.load().intents)))
    extra = load_extra_data(args, bundled, bundled_automation, held_out) if args.data else None
    train_rows = bundled + (extra.routing if extra else [])
    if not train_rows:
        raise DataError("no routing rows to train on: the --data files hold automation parses only")
    automation_rows = bundled_automation + (extra.automation if extra else [])
    if args.automation and not automation_rows:
        raise DataError("no automation rows to train the parser on: the --data files hold routing labels only; "
                        "add automation rows or pass --no-automation")
    fixture_rows = load_labelled(args.fixture)
    for name, rows in (("frozen fixture", fixture_rows), ("blind set", blind_rows),
                       *((f"{s.name} set {s.path.name}", s.rows) for s in held_out)):
        overlap = leaked(train_rows, rows)
        if overlap:
            raise DataError(leak_error(overlap, name, blind=rows is blind_rows))

    progress.stage(f"adding {args.spoken_variants} spoken variants per routing row to {len(train_rows)} rows")
    held_out_queries = held_out_keys(fixture_rows + [r for s in held_out for r in s.rows], args)
    augmented = augment_rows(train_rows, args.spoken_variants, args.seed, held_out_queries)

    router = Router(C=args.C, class_weight=None if args.class_weight == "none" else args.class_weight,
                    fast_min_probability=args.fast_min_probability,
                    hmm=args.hmm, random_state=args.seed)
    params = {**{k: v for k, v in router.get_params().items()}, "seed": args.seed,
              "review_threshold": args.review_threshold, "spoken_variants": args.spoken_variants}
    data_digest = digest(train_rows)
    # the version covers the rows the temperature is fitted on too
    routing_digest = data_digest + "".join(digest(s.rows) for s in held_out if s.fits_temperature)
    splitter = SplitLexicon.from_lexicons()
    automation_run = None
    if args.automation:  # the condition/action parser rides in the same bundle and run, and routing reads its parse
        progress.stage(f"training the automation parser on {len(automation_rows)} rows (span tagger, intents)")
        automation_run = automation_training.train(args, automation_rows)
    parser = automation_run.parser if automation_run is not None else None
    fit_rows = train_rows + augmented
    if parser is not None:
        progress.stage(f"parsing the {len(fit_rows)} routing rows: the router reads their automation groups")
        fit_rows = with_groups(fit_rows, parser.parse_many([r["query"] for r in fit_rows]))
    if args.cv:
        progress.stage(f"{args.cv}-fold cross-validation of the router")
    cv = cross_validate(router, splitter, fit_rows[:len(train_rows)], args.cv, args.seed, args.review_threshold,
                        automation=parser) if args.cv else {}
    progress.stage(f"fitting the router on {len(fit_rows)} rows")
    router.fit(fit_rows, [r["primary_reason_code"] for r in fit_rows])
    progress.stage(f"fitting the plain baseline (char n-gram tf-idf, logistic regression) on the same {len(fit_rows)} rows")
    baseline_started = time.perf_counter()
    baseline = PlainBaseline(random_state=args.seed).fit(fit_rows, [r["primary_reason_code"] for r in fit_rows])
    baseline_seconds = round(time.perf_counter() - baseline_started, 1)
    trained_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    model = FastslowModel(router=router, splitter=splitter,
                          version=model_version(params, routing_digest),
                          review_threshold=args.review_threshold, automation=parser,
                          info={"trained_at": trained_at, "train_digest": data_digest, "train_rows": len(train_rows)})
    if automation_run is not None:
        model.version = model_version({**params, **automation_run.params},
                                      routing_digest + automation_run.digests["automation_train_digest"])
    progress.stage("fitting the temperature and scoring the held-out sets: "
                   + ", ".join(s.name for s in held_out) + ", fixture, train, blind")
    held_out_records, temperatures = score_held_out(model, held_out)
    blind_records = score_with_progress(model, blind_rows, progress, "blind rows")
    train_records = score_with_progress(model, train_rows, progress, "training rows")
    evaluations = [evaluate(model, fixture_rows, "fixture"),
                   *(evaluate(model, s.rows, s.name, records=held_out_records[s.name]) for s in held_out),
                   evaluate(model, train_rows, "train", records=train_records),
                   evaluate(model, blind_rows, "blind", records=blind_records, keep_errors=False)]
    calibrated = [ev for ev in evaluations if ev.name not in ("fixture", "train")]
    compared = [ev for ev in evaluations if ev.name != "train"]  # the baseline on every set not trained on
    progress.stage("scoring the plain baseline: " + ", ".join(ev.name for ev in compared))
    baseline_figures = baseline_metrics(baseline, {"fixture": fixture_rows, **{s.name: s.rows for s in held_out},
                                        "blind": blind_rows})
    calibrated_on = " + ".join(s.path.name for s in held_out if s.fits_temperature)
    metrics = {k: v for ev in evaluations for k, v in ev.metrics.items()}
    metrics.update(cv)
    progress.stage("robustness of the dev set under spoken variation")
    dev_robustness = robustness(model, dev_rows, seed=args.seed)  # label unchanged under spoken variation
    metrics.update(dev_robustness.metrics("dev"))
    if automation_run is not None:
        metrics.update(automation_run.metrics)

    progress.stage("checking the capture contract")
    capture = evaluate_contract(args.capture_fixture)  # INV-TASK-2 contract: below 1.0 is never promotable
    metrics["capture_conformance"] = capture.conformance
    fit_seconds = round(time.perf_counter() - started, 1)

    progress.stage("logging the run, its plots and the model to MLflow" if args.plots else
                   "logging the run and the model to MLflow (no plots)")
    import mlflow

    uri = registry.tracking_uri(args.tracking_uri)
    mlflow.set_tracking_uri(uri)
    ensure_experiment(mlflow, args.experiment)
    with mlflow.start_run(run_name=args.run_name) as active, tempfile.TemporaryDirectory() as tmp:
        run_id = active.info.run_id
        mlflow.log_params({k: str(v) for k, v in params.items()})
        mlflow.log_params({"train_digest": data_digest, "train_rows": len(train_rows), "only": args.only,
                           "spoken_rows": len(augmented),
                           "train_files": ",".join([] if args.only else [p.name for p in training_files(args.train_dir)]),
                           "extra_files": ",".join(str(p) for p in args.data),
                           "dev_digest": digest(dev_rows), "fixture_digest": digest(fixture_rows),
                           "blind_digest": digest(blind_rows), "train_rows_dropped_blind": dropped_blind,
                           "train_rows_dropped_held_out": dropped_held_out,
                           "calibration": f"{calibrated_on}, halves cross-fitted",
                           **{k: v for k, v in temperatures.items() if k != "temperature"}})
        if args.config:
            mlflow.log_artifact(str(args.config), artifact_path="config")
        datasets = [("routing_train", "training", train_rows, args.data[0] if args.only else args.train_dir),
                    ("routing_fixture", "fixture", fixture_rows, args.fixture),
                    ("routing_blind", "blind", blind_rows, args.blind),
                    *((f"routing_{s.name}", "calibration" if s.fits_temperature else "dev", s.rows, s.path)
                      for s in held_out)]
        if extra:
            datasets += [(f"extra:{Path(name).name}", "training", rows, Path(name)) for name, rows in extra.by_file().items()]
        if automation_run is not None:
            datasets += automation_run.datasets
        dataset_summaries = log_datasets(mlflow, datasets)
        mlflow.set_tags({"model_version": model.version, "temperature": f"{router.temperature_:.3f}"})
        folder = Path(tmp)
        for ev in evaluations:
            log_evaluation(mlflow, ev, folder, args.plots)
        mlflow.log_metric("temperature", router.temperature_)
        risk_coverage_frame(calibrated).to_csv(folder / "risk_coverage.csv", index=False)
        if args.plots:
            plot_calibration({**{s.name: (s.rows, held_out_records[s.name]) for s in held_out if s.fits_temperature},
                              "blind": (blind_rows, blind_records)}, folder)
        mlflow.log_metrics(dev_robustness.metrics("dev"))
        (folder / "dev_robustness_flips.jsonl").write_text(
            "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in dev_robustness.flips), encoding="utf-8")
        if cv:
            mlflow.log_metrics(cv)
            mlflow.log_param("cv_folds", args.cv)
        mlflow.log_metric("fit_seconds", fit_seconds)
        mlflow.log_metrics({**baseline_figures, "baseline_fit_seconds": baseline_seconds})
        mlflow.log_metric("capture_conformance", capture.conformance)
        mlflow.set_tag("capture_promotable", str(capture.conformance == 1.0).lower())
        (folder / "capture_contract_failures.json").write_text(
            json.dumps(capture.failures, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        if automation_run is not None:
            automation_training.log(mlflow, automation_run, folder)
        mlflow.log_artifacts(tmp, artifact_path="evaluation")
        manifest = save_bundle(model, args.output, extra={"mlflow_run_id": run_id, "metrics": metrics,
                                                          "capture_conformance": capture.conformance,
                                                          "params": {k: str(v) for k, v in params.items()}},
                               key=key)
        card_path = args.output.with_suffix(".model_card.md")
        card_path.write_text(model_card(CardFacts(
            model.version, run_id, trained_at, {**params, **(automation_run.params if automation_run else {})},
            dataset_summaries, evaluations,
            automation_run.evaluations if automation_run else [], capture.conformance, capture.failures, cv)),
            encoding="utf-8")
        for path in (args.output, args.output.with_suffix(".manifest.json"), card_path):
            mlflow.log_artifact(str(path), artifact_path=registry.MODEL_ARTIFACT_DIR)

        pyfunc_uri = log_pyfunc_model(args.output)  # the same bundle for mlflow.pyfunc / Spark's spark_udf
    # the registered version is the pyfunc model, so models:/fastslow@champion also works in spark_udf
    progress.stage(f"registering a version of {args.registered_model}")
    version, refused = registry.register_run(registry.client(uri), run_id, args.registered_model, source=pyfunc_uri,
                                             sha256=manifest["sha256"])
    progress.stage("done")

    print(summary_table(evaluations))
    print(f"\nrouter vs the plain baseline (char n-gram tf-idf + logistic regression, fitted on the same rows "
          f"in {baseline_seconds}s; Δ = router − baseline):\n" + comparison_table(compared, baseline_figures))
    if dropped_blind:
        print(f"({dropped_blind} bundled training rows left out: their query is in the blind set {args.blind.name})")
    if dropped_held_out:
        print(f"({dropped_held_out} bundled training rows left out: their query is in a held-out set, "
              + ", ".join(s.path.name for s in others) + ")")
    print(f"\nrisk–coverage (accuracy of the most confident rows; temperature {router.temperature_:.3f}, "
          f"fitted on {calibrated_on}, each scored cross-fitted by halves):\n" + risk_coverage_table(calibrated))
    print("\n" + dev_robustness.table("dev") + f"\n(trained on {len(train_rows)} rows + {len(augmented)} spoken variants)")
    if cv:
        print("\n" + cv_summary(cv, args.cv))
    if automation_run is not None:
        print("\n" + automation_training.summary(automation_run))
    print(f"\ncapture contract {args.capture_fixture.name}: conformance {capture.conformance:.3f} "
          f"({capture.passed}/{capture.total})" + ("" if capture.conformance == 1.0 else " — NOT promotable"))
    if extra:
        print("\nextra data: " + ", ".join(f"{name}: {c['routing']} routing, {c['automation']} automation rows"
                                            for name, c in extra.counts.items())
              + (" (alone: --only)" if args.only else " (added to the bundled corpus)"))
        for name, counts in extra.left_out.items():
            print(f"{name}: Label Studio export; left out {counts['skipped']} skipped and "
                  f"{counts['unannotated']} unannotated tasks")
    print(f"\nmodel {model.version} → {args.output} (sha256 {manifest['sha256'][:12]}…), card {card_path.name}")
    print(f"signed with the key from {key.source} (key id {key.key_id})"
          + (f", created now (mode 0600): loaders need its public key {signing.public_key_path(created_key)}, the "
             "registry's pin (models:/) or --expect-sha256" if created_key else ""))
    print(f"MLflow run {run_id} in {uri} (experiment {args.experiment!r}); "
          f"fit+eval {fit_seconds}s; `mlflow ui --backend-store-uri {uri}` to browse")
    print(f"pyfunc model for Spark: {pyfunc_uri}")
    print(f"registered {args.registered_model} version {version}: " +
          (f"now models:/{args.registered_model}@{registry.CHAMPION}" if not refused else
           "NOT champion — " + "; ".join(refused)))
    return {"run_id": run_id, "metrics": metrics, "baseline_metrics": baseline_figures, "manifest": manifest,
            "model": model, "registered_version": version, "refused": refused, "extra": extra, "pyfunc_uri": pyfunc_uri}


def main(argv: list[str] | None = None) -> int:

    parser = build_parser()
    try:
        args = parse_args(parser, argv)
    except ConfigError as exc:
        print(f"train: {exc}", file=sys.stderr)
        return 2
    if args.cv == 1 or args.cv < 0:
        parser.error(f"--cv needs at least 2 folds (0: off), got {args.cv}")
    try:
        run(args)
    except (DataError, InputFileError, FileNotFoundError, RegistryError, signing.SigningKeyError) as exc:
        print(f"train: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
