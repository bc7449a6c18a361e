"""Train the fastslow router, evaluate it on the frozen fixture and the dev set, log it to MLflow.

    python train.py                 # the same as `fastslow train`
    python train.py --seed 7 --C 4  # other settings; every run is logged to MLflow

Defaults: bundled data under data/, a local SQLite MLflow store (sqlite:///mlflow.db, or
$MLFLOW_TRACKING_URI), the model written to models/artifacts/fastslow.joblib with its manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "fastslow"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    from models.bundle import DEFAULT_MODEL_PATH
    from models.capture_contract import CAPTURE_FIXTURE_FILE
    from models.dataset import DEV_FILE, FIXTURE_FILE, TRAIN_DIR

    parser = parser or argparse.ArgumentParser(prog="train.py", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=13, help="random seed (cross-validation folds)")
    parser.add_argument("--C", type=float, default=8.0, help="inverse regularisation of the router")
    parser.add_argument("--class-weight", choices=("balanced", "none"), default="none",
                        help="weight reason codes inversely to their frequency (balanced), or not")
    parser.add_argument("--hmm", action="store_true",
                        help="let jieba's HMM guess unknown words (off: dictionaries only, ~25%% faster, "
                             "same dev accuracy; char n-grams cover unknown words)")
    parser.add_argument("--review-threshold", type=float, default=0.5,
                        help="records whose label confidence is below this need review")
    parser.add_argument("--train-dir", type=Path, default=TRAIN_DIR, help="folder of labelled *.jsonl")
    parser.add_argument("--dev", type=Path, default=DEV_FILE, help="hand-written dev set")
    parser.add_argument("--fixture", type=Path, default=FIXTURE_FILE, help="frozen spec fixture")
    parser.add_argument("--capture-fixture", type=Path, default=CAPTURE_FIXTURE_FILE,
                        help="frozen capture contract (INV-TASK-2)")
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_PATH, help="where to write the model")
    parser.add_argument("--tracking-uri", default=None,
                        help=f"MLflow tracking URI (default: $MLFLOW_TRACKING_URI or {DEFAULT_TRACKING_URI})")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment name")
    parser.add_argument("--run-name", default=None, help="MLflow run name")
    from models import automation_training

    return automation_training.add_arguments(parser)


def model_version(params: dict, data_digest: str) -> str:
    """Same data and same settings → same version (training is deterministic)."""
    blob = json.dumps(params, sort_keys=True) + data_digest
    return "fastslow-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def summary_table(evaluations) -> str:
    from models.taxonomy import LABEL_SLUGS

    head = f"{'set':<10}{'n':>6}{'label acc':>11}{'macro-F1':>10}{'code acc':>10}{'ECE':>7}"
    slugs = "".join(f"{'F1 ' + s:>14}" for s in LABEL_SLUGS.values())
    lines = [head + slugs, "-" * (len(head) + len(slugs))]
    for ev in evaluations:
        m, n = ev.metrics, ev.name
        line = (f"{n:<10}{m[f'{n}_n']:>6}{m[f'{n}_label_accuracy']:>11.3f}{m[f'{n}_label_macro_f1']:>10.3f}"
                f"{m[f'{n}_code_accuracy']:>10.3f}{m[f'{n}_ece']:>7.3f}")
        line += "".join(f"{m[f'{n}_{s}_f1']:>14.3f}" for s in LABEL_SLUGS.values())
        lines.append(line)
    return "\n".join(lines)


def log_evaluation(mlflow, ev, folder: Path) -> None:
    from models.metrics import plot_confusion

    mlflow.log_metrics(ev.metrics)
    ev.per_label.to_csv(folder / f"{ev.name}_per_label.csv")
    ev.per_code.to_csv(folder / f"{ev.name}_per_reason_code.csv")
    ev.errors.to_json(folder / f"{ev.name}_misclassified.jsonl", orient="records", lines=True, force_ascii=False)
    plot_confusion(ev.label_confusion, f"{ev.name}: label", folder / f"{ev.name}_confusion_label.png")
    plot_confusion(ev.code_confusion, f"{ev.name}: reason code", folder / f"{ev.name}_confusion_code.png")


def ensure_experiment(mlflow, name: str) -> None:
    """Select the experiment, creating it if needed. With a local SQLite store, new experiments keep
    their artifacts beside the database (``mlartifacts/`` next to ``mlflow.db``) instead of in
    whatever directory training happened to start from."""
    uri = mlflow.get_tracking_uri()
    if mlflow.get_experiment_by_name(name) is None and uri.startswith("sqlite:///"):
        store = Path(uri[len("sqlite:///"):]).resolve().parent / "mlartifacts"
        mlflow.create_experiment(name, artifact_location=store.as_uri())
    mlflow.set_experiment(name)


def run(args: argparse.Namespace) -> dict:
    from models.bundle import FastslowModel, save_bundle
    from models.dataset import DataError, digest, leaked, load_labelled, load_training, training_files
    from models.metrics import evaluate
    from models.router import Router
    from models.splitter import SplitLexicon

    started = time.perf_counter()
    train_rows = load_training(args.train_dir)
    fixture_rows = load_labelled(args.fixture)
    dev_rows = load_labelled(args.dev)
    for name, held_out in (("frozen fixture", fixture_rows), ("dev set", dev_rows)):
        overlap = leaked(train_rows, held_out)
        if overlap:
            raise DataError(f"{len(overlap)} {name} queries are in the training data, e.g. {overlap[:3]}")

    router = Router(C=args.C, class_weight=None if args.class_weight == "none" else args.class_weight,
                    hmm=args.hmm, random_state=args.seed)
    params = {**{k: v for k, v in router.get_params().items()}, "seed": args.seed,
              "review_threshold": args.review_threshold}
    data_digest = digest(train_rows)
    router.fit(train_rows, [r["primary_reason_code"] for r in train_rows])
    trained_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    model = FastslowModel(router=router, splitter=SplitLexicon.from_lexicons(),
                          version=model_version(params, data_digest), review_threshold=args.review_threshold,
                          info={"trained_at": trained_at, "train_digest": data_digest, "train_rows": len(train_rows)})
    evaluations = [evaluate(model, fixture_rows, "fixture"), evaluate(model, dev_rows, "dev"),
                   evaluate(model, train_rows, "train")]
    metrics = {k: v for ev in evaluations for k, v in ev.metrics.items()}
    from models import automation_training

    automation_run = automation_training.train(args) if args.automation else None
    if automation_run is not None:  # the condition/action parser rides in the same bundle and run
        model.automation = automation_run.parser
        model.version = model_version({**params, **automation_run.params},
                                      data_digest + automation_run.digests["automation_train_digest"])
        metrics.update(automation_run.metrics)
    from models.capture_contract import evaluate_contract

    capture = evaluate_contract(args.capture_fixture)  # INV-TASK-2 contract: below 1.0 is never promotable
    metrics["capture_conformance"] = capture.conformance
    fit_seconds = round(time.perf_counter() - started, 1)

    import mlflow

    mlflow.set_tracking_uri(args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI)
    ensure_experiment(mlflow, args.experiment)
    with mlflow.start_run(run_name=args.run_name) as active, tempfile.TemporaryDirectory() as tmp:
        run_id = active.info.run_id
        mlflow.log_params({k: str(v) for k, v in params.items()})
        mlflow.log_params({"train_digest": data_digest, "train_rows": len(train_rows),
                           "train_files": ",".join(p.name for p in training_files(args.train_dir)),
                           "dev_digest": digest(dev_rows), "fixture_digest": digest(fixture_rows)})
        mlflow.set_tags({"model_version": model.version, "temperature": f"{router.temperature_:.3f}"})
        folder = Path(tmp)
        for ev in evaluations:
            log_evaluation(mlflow, ev, folder)
        mlflow.log_metric("fit_seconds", fit_seconds)
        mlflow.log_metric("capture_conformance", capture.conformance)
        mlflow.set_tag("capture_promotable", str(capture.conformance == 1.0).lower())
        (folder / "capture_contract_failures.json").write_text(
            json.dumps(capture.failures, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        if automation_run is not None:
            automation_training.log(mlflow, automation_run, folder)
        mlflow.log_artifacts(tmp, artifact_path="evaluation")
        manifest = save_bundle(model, args.output, extra={"mlflow_run_id": run_id, "metrics": metrics,
                                                          "capture_conformance": capture.conformance,
                                                          "params": {k: str(v) for k, v in params.items()}})
        mlflow.log_artifact(str(args.output), artifact_path="model")
        mlflow.log_artifact(str(args.output.with_suffix(".manifest.json")), artifact_path="model")
        from models.pyfunc import log_pyfunc_model

        pyfunc_uri = log_pyfunc_model(args.output)  # the same bundle for mlflow.pyfunc / Spark's spark_udf

    print(summary_table(evaluations))
    if automation_run is not None:
        print("\n" + automation_training.summary(automation_run))
    print(f"\ncapture contract {args.capture_fixture.name}: conformance {capture.conformance:.3f} "
          f"({capture.passed}/{capture.total})" + ("" if capture.conformance == 1.0 else " — NOT promotable"))
    print(f"\nmodel {model.version} → {args.output} (sha256 {manifest['sha256'][:12]}…)")
    print(f"MLflow run {run_id} in {mlflow.get_tracking_uri()} (experiment {args.experiment!r}); "
          f"fit+eval {fit_seconds}s; `mlflow ui --backend-store-uri {mlflow.get_tracking_uri()}` to browse")
    print(f"pyfunc model for Spark: {pyfunc_uri}")
    return {"run_id": run_id, "metrics": metrics, "manifest": manifest, "model": model, "pyfunc_uri": pyfunc_uri}


def main(argv: list[str] | None = None) -> int:
    from models.dataset import DataError
    from serve.io import InputFileError

    args = build_parser().parse_args(argv)
    try:
        run(args)
    except (DataError, InputFileError, FileNotFoundError) as exc:
        print(f"train: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
