"""The ``fastslow`` command: train, score, explain, eval, robustness, serve, models, promote."""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import signal
import sys
from pathlib import Path


def _argument(check, text: str):
    """``check(text)`` for argparse: its ``ValueError`` (``serve.settings``' one-line reason) as argparse's error."""
    try:
        return check(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    """An argument that counts something (workers, rows, bytes): a whole number of at least 1."""
    from fastslow.serve.settings import whole_number

    return _argument(whole_number, text)


def non_negative_int(text: str) -> int:
    """An argument where 0 means off (``--memo``): a whole number of at least 0."""
    from fastslow.serve.settings import whole_number

    return _argument(lambda t: whole_number(t, 0), text)


def probability(text: str) -> float:
    """An argument that is a confidence: a number from 0 to 1 (not nan)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}")
    return value


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT, raised in the main thread so that a run stops as on Ctrl-C: its workers ended,
    its partial output kept for ``--resume``; ``signum`` gives the exit status (128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    for name in ("SIGTERM", "SIGINT"):  # a second signal must not break off the cleanup of the first
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    raise Stopped(signum)


def _load_model(path):
    """A bundle file or a model URI (``models:/fastslow@champion``), SHA-256 checked and vouched for."""
    from fastslow.models.lifecycle.bundle import ModelLoadError
    from fastslow.models.lifecycle.registry import RegistryError, resolve

    try:
        return resolve(path).load()
    except (ModelLoadError, RegistryError) as exc:
        print(f"fastslow: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _add_trust_options(p: argparse.ArgumentParser) -> None:
    """What vouches for a model file before it is unpickled (``fastslow.models.lifecycle.signing``)."""
    p.add_argument("--verify-key-file", type=Path, default=None,
                   help="check the model's signature with the public key in this file (default: $FASTSLOW_VERIFY_KEY, "
                        "else $FASTSLOW_VERIFY_KEY_FILE, else ~/.config/fastslow/signing_ed25519.pub)")
    p.add_argument("--expect-sha256", metavar="HEX", default=None,
                   help="load only a model file with this SHA-256 (a pin: no signature needed)")
    p.add_argument("--trust-unsigned", action="store_true",
                   help="load a model that no signature or pin vouches for (only if you trust where it came from)")


def _apply_trust(args) -> None:
    """The trust options, in this process's environment so that its workers apply them too."""
    from fastslow.models.lifecycle import signing

    try:
        signing.export(verify_key_file=args.verify_key_file, expect_sha256=args.expect_sha256,
                       trust_unsigned=args.trust_unsigned)
    except signing.SigningKeyError as exc:
        print(f"fastslow {args.command}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def cmd_score(args) -> int:
    handlers = {signum: signal.signal(signum, _stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _score(args)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _score(args) -> int:
    from concurrent.futures.process import BrokenProcessPool

    from fastslow.models.lifecycle import signing
    from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH, MODEL_ENV, ModelLoadError
    from fastslow.models.lifecycle.registry import RegistryError, resolve
    from fastslow.serve.batch import BatchError, BatchOptions, run_batch
    from fastslow.data.io import InputFileError

    _apply_trust(args)
    try:
        # a models:/ URI is downloaded once, before any worker starts
        resolved = resolve(args.model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL_PATH)
        signing.export(expect_sha256=resolved.sha256, pinned_by=resolved.pinned_by)  # the registry's pin, for workers
    except (RegistryError, signing.SigningKeyError) as exc:
        print(f"fastslow score: {exc}", file=sys.stderr)
        return 2
    model_path = resolved.path
    options = BatchOptions(input=args.input, output=args.output, model=model_path, input_format=args.format,
                           output_format=args.output_format, text_col=args.text_col, id_col=args.id_col,
                           jobs=args.jobs, chunk_size=args.chunk_size, resume=args.resume,
                           review_out=args.review_out, review_below=args.review_below, explain=args.explain,
                           memo=args.memo)
    try:
        return run_batch(options, stdout=sys.stdout.buffer)
    except InputFileError as exc:
        print(f"fastslow score: {args.input}: {exc}", file=sys.stderr)
    except (BatchError, ModelLoadError) as exc:
        print(f"fastslow score: {exc}", file=sys.stderr)
    except BrokenProcessPool as exc:
        print(f"fastslow score: a worker process died ({exc}); nothing was renamed"
              + (f": rerun with --resume to continue {args.output}" if args.output else ""), file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print("\nfastslow score: interrupted" + (f"; rerun with --resume to continue {args.output}"
                                                 if args.output else ""), file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, Stopped) else signal.SIGINT)
    except OSError as exc:  # the disk filled up, standard output was closed, ...
        print(f"fastslow score: {exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}; "
              "the output was not completed", file=sys.stderr)
        return 1
    return 2


def cmd_explain(args) -> int:
    from fastslow.data.sinks import dumps
    from fastslow.models.routing.explain import format_explanation

    row = {"query": args.query, "endpoint": args.endpoint, "explain": True}
    if args.context is not None:
        try:
            row["context"] = json.loads(args.context)
        except json.JSONDecodeError as exc:
            print(f"fastslow explain: --context is not JSON ({exc.msg}); give a list of turns, "
                  f'e.g. \'[{{"role": "assistant", "system": "slow", "text": "..."}}]\'', file=sys.stderr)
            return 2
    if args.top < 0:
        print(f"fastslow explain: --top must be 0 (all) or more, got {args.top}", file=sys.stderr)
        return 2
    model = _load_model(args.model)
    model.explain_top_k = args.top
    record = model.score([row])[0]
    if "error" in record:
        print(f"fastslow explain: {record['error']}", file=sys.stderr)
        return 2
    print(dumps(record) if args.json else format_explanation(record))
    return 0


def cmd_eval(args) -> int:
    from fastslow.data import DataError
    from fastslow.models.lifecycle.dataset import load_labelled
    from fastslow.models.routing.metrics import evaluate
    from fastslow.data.io import InputFileError
    from fastslow.models.routing.metrics import summary_table
    from fastslow.models.lifecycle.progress import Progress, score_with_progress

    _apply_trust(args)
    model = _load_model(args.model)
    try:
        rows = load_labelled(args.data)
    except (DataError, InputFileError) as exc:
        print(f"fastslow eval: {exc}", file=sys.stderr)
        return 2
    records = score_with_progress(model, rows, Progress("fastslow eval"), "rows scored")
    ev = evaluate(model, rows, "eval", records=records)
    print(summary_table([ev]))
    print("\nper reason code:\n" + ev.per_code.to_string())
    print("\nlabel confusion (rows gold, columns predicted):\n" + ev.label_confusion.to_string())
    if args.errors:
        ev.errors.to_json(args.errors, orient="records", lines=True, force_ascii=False)
        print(f"\n{len(ev.errors)} misclassified rows → {args.errors}")
    if args.json:
        print(json.dumps(ev.metrics, ensure_ascii=False))
    return 0


def cmd_robustness(args) -> int:
    if not args.no_mlflow:
        from fastslow.models.lifecycle import registry

        try:  # before scoring, not minutes later when the run is logged; before the model's libraries load
            registry.check_tracking_server(registry.tracking_uri(args.tracking_uri))
        except registry.RegistryError as exc:
            print(f"fastslow robustness: {exc}", file=sys.stderr)
            return 2
    from fastslow.data.io import InputFileError, read_rows
    from fastslow.features.spoken import VARIANT_KINDS
    from fastslow.models.lifecycle.progress import Progress
    from fastslow.models.robustness import robustness

    kinds = tuple(args.kinds) if args.kinds else VARIANT_KINDS
    unknown = [k for k in kinds if k not in VARIANT_KINDS]
    if unknown:
        print(f"fastslow robustness: unknown variant kind(s) {unknown} (known: {', '.join(VARIANT_KINDS)})",
              file=sys.stderr)
        return 2
    model = _load_model(args.model)
    try:
        read = list(read_rows(args.data, text_col=args.text_col))
    except (InputFileError, FileNotFoundError) as exc:
        print(f"fastslow robustness: {args.data}: {exc}", file=sys.stderr)
        return 2
    rows, skipped = [], []
    for line, obj, err in read:
        if err is None and isinstance(obj, dict) and isinstance(obj.get("query"), str) and obj["query"].strip():
            rows.append(obj)
        else:
            skipped.append(f"line {line}: {err or 'no query'}")
    if not rows:
        print(f"fastslow robustness: {args.data}: no row with a query", file=sys.stderr)
        return 2
    progress = Progress("fastslow robustness")
    result = robustness(model, rows, seed=args.seed, kinds=kinds,
                        progress=(lambda done, total: progress.bar(done, total, "rows and variants scored"))
                        if progress.interactive else None)
    progress.done()
    print(result.table(Path(args.data).stem))
    if skipped:
        print(f"{len(skipped)} rows skipped (" + "; ".join(skipped[:3]) + ("; …" if len(skipped) > 3 else "") + ")")
    if args.flips:
        args.flips.write_text("".join(json.dumps(f, ensure_ascii=False) + "\n" for f in result.flips), encoding="utf-8")
        print(f"{len(result.flips)} variants whose label moved → {args.flips}")
    if not args.no_mlflow:
        from fastslow.models.lifecycle import registry

        try:
            with registry.store_errors(args.tracking_uri):
                _log_robustness(args, result)
        except registry.RegistryError as exc:
            print(f"fastslow robustness: {exc}", file=sys.stderr)
            return 2
    return 0


def _log_robustness(args, result) -> None:
    """Into the active MLflow run if there is one, else a new run in the tracking store."""
    import mlflow

    from fastslow.models.lifecycle import registry

    metrics = result.metrics(args.prefix or "")
    params = {"robustness_data": str(args.data), "robustness_seed": args.seed, "robustness_rows": result.rows}
    if mlflow.active_run() is not None:
        mlflow.log_metrics(metrics)
        mlflow.log_params(params)
        print(f"logged to the active MLflow run {mlflow.active_run().info.run_id}")
        return
    uri = registry.tracking_uri(args.tracking_uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(args.experiment)
    with mlflow.start_run(run_name=args.run_name or f"robustness {Path(args.data).name}") as run:
        mlflow.log_params(params)
        mlflow.log_metrics(metrics)
        mlflow.set_tag("model", str(args.model))
    print(f"MLflow run {run.info.run_id} in {uri} (experiment {args.experiment!r})")


def cmd_serve(args) -> int:
    from fastslow.serve import settings

    given = {name: getattr(args, name) for name in settings.SETTINGS}
    try:  # before the server and the model's libraries are imported: a bad limit is refused at once
        settings.limits(**given)
    except settings.SettingError as exc:
        print(f"fastslow serve: {exc}", file=sys.stderr)
        return 2
    from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH, MODEL_ENV, ModelLoadError
    from fastslow.models.lifecycle.registry import RegistryError, resolve
    from fastslow.serve.shadow import check_challenger

    _apply_trust(args)
    try:  # the files' own checks before the server and the model's libraries are imported: refused at once
        resolve(args.model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL_PATH).verify()
        if args.shadow is not None:
            check_challenger(args.shadow)
    except (ModelLoadError, RegistryError) as exc:
        print(f"fastslow serve: {exc}", file=sys.stderr)
        return 2
    from fastslow.serve.server import run

    return run(args.model, host=args.host, port=args.port, workers=args.workers, log_level=args.log_level,
               shadow=args.shadow, **given)


def cmd_sign(args) -> int:
    from fastslow.models.lifecycle import signing
    from fastslow.models.lifecycle.bundle import ModelLoadError, sign_bundle

    try:
        key = signing.configured_key(args.signing_key_file)
        if key is None:
            print(f"fastslow sign: no private signing key here (--signing-key-file, ${signing.KEY_ENV}, "
                  f"${signing.KEY_FILE_ENV} or {signing.default_key_file()}): sign where models are trained",
                  file=sys.stderr)
            return 2
        manifest = sign_bundle(args.model, key, args.expect_sha256)
    except (signing.SigningKeyError, ModelLoadError) as exc:
        print(f"fastslow sign: {exc}", file=sys.stderr)
        return 2
    print(f"signed {args.model} (sha256 {manifest['sha256'][:12]}…) with the key from {key.source} "
          f"(key id {key.key_id}); loaders check it with its public key")
    return 0


def cmd_models(args) -> int:
    from fastslow.models.lifecycle import registry

    if args.diff and (args.diff[0] != "diff" or len(args.diff) != 3):
        print(f"fastslow models: expected `fastslow models` or `fastslow models diff A B`, got "
              f"{' '.join(args.diff)!r}", file=sys.stderr)
        return 2
    try:
        mlflow_client = registry.client(args.tracking_uri)
        with registry.store_errors(args.tracking_uri):
            if args.diff:
                a, b = (registry.get_version(mlflow_client, args.name, v) for v in args.diff[1:])
                print(registry.diff_table(a, b, registry.run_params(mlflow_client, a.run_id),
                                          registry.run_params(mlflow_client, b.run_id), every_metric=args.all))
                return 0
            versions = registry.list_versions(mlflow_client, args.name)
    except registry.RegistryError as exc:
        print(f"fastslow models: {exc}", file=sys.stderr)
        return 2
    print(registry.versions_table(versions))
    if args.verbose:
        print("\n" + "\n".join(f"version {v.version}: {v.gate}" for v in versions if v.gate))
    return 0


def cmd_promote(args) -> int:
    from fastslow.models.lifecycle import registry

    try:
        mlflow_client = registry.client(args.tracking_uri)
        with registry.store_errors(args.tracking_uri):
            reasons = registry.promote(mlflow_client, args.name, args.version, force=args.force)
    except registry.RegistryError as exc:  # PromotionRefused included: it lists the gate's reasons
        print(f"fastslow promote: {exc}" + (" (--force to promote anyway)" if isinstance(
            exc, registry.PromotionRefused) else ""), file=sys.stderr)
        return 2
    print(f"models:/{args.name}@{registry.CHAMPION} → version {args.version}"
          + (f" (forced over: {'; '.join(reasons)})" if reasons else ""))
    return 0


def cmd_review(args) -> int:
    from fastslow.data.io import InputFileError, read_rows
    from fastslow.models.lifecycle.label_studio import labelling_config, review_tasks
    from fastslow.models.lifecycle.progress import Progress, score_with_progress

    _apply_trust(args)
    model = _load_model(args.model)
    progress = Progress("fastslow review")
    try:
        rows = list(read_rows(args.input, args.format, text_col=args.text_col))
    except (InputFileError, FileNotFoundError) as exc:
        print(f"fastslow review: {args.input}: {exc}", file=sys.stderr)
        return 2
    tasks, summary = review_tasks(model, rows, limit=args.limit,
                                  score=lambda items: score_with_progress(model, items, progress, "distinct queries"))
    config = args.config_out or args.output.with_name(args.output.stem + ".label_config.xml")
    try:
        args.output.write_text(json.dumps(tasks, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        config.write_text(labelling_config(), encoding="utf-8")
    except OSError as exc:
        print(f"fastslow review: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    left_out = ", ".join(f"{n} {reason}" for reason, n in summary.left_out.items())
    print(f"{summary.rows} rows read" + (f" ({left_out} left out)" if left_out else "")
          + f"; {summary.distinct} distinct queries; the {summary.tasks} most worth labelling → {args.output}")
    print(f"labelling config → {config}: create a Label Studio project with it (Settings → Labeling Interface → Code), "
          f"import {args.output.name}, label, export as JSON and train with `fastslow train --data EXPORT.json`")
    return 0


def cmd_config(args) -> int:
    from fastslow.models.lifecycle.config import write_starter_config

    try:
        path = write_starter_config(args.path)
    except FileExistsError:
        print(f"fastslow config init: {args.path} exists; not overwritten (give another path)", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fastslow config init: {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}: every setting of `fastslow train` with its default; change what you need and train "
          f"with `fastslow train --config {path}`")
    return 0


def version_text() -> str:
    """``fastslow --version``: this package's version and the libraries that decide its records."""
    from importlib.metadata import PackageNotFoundError, version

    from fastslow import __version__

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    libraries = ", ".join(f"{name} {installed(name)}" for name in ("scikit-learn", "numpy", "python-crfsuite", "jieba"))
    return f"fastslow {__version__} (Python {sys.version.split()[0]}; {libraries})"


class VersionAction(argparse.Action):
    """``--version``: ``version_text()`` on one line (argparse's own action wraps it at the terminal width)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH
    from fastslow.serve.batch import DEFAULT_CHUNK
    from fastslow.data.io import FORMATS
    from fastslow.models.taxonomy import ENDPOINTS

    parser = argparse.ArgumentParser(prog="fastslow", description="Fast/slow routing of Chinese voice queries (XA4.1).")
    parser.add_argument("--version", action=VersionAction, help="print the version and the libraries' and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    # `fastslow train ...` is handed whole to train.py's own parser (see main); listed here for --help.
    sub.add_parser("train", help="train, evaluate and log to MLflow (the same as python train.py)")

    p = sub.add_parser("score", help="score a log of queries (JSONL, CSV or Parquet) into records",
                       description="Score every row of a log into one record, in input order: streamed in chunks, "
                                   "on every core, written atomically with -o, resumable.")
    p.add_argument("input", help="input file (.jsonl, .csv or .parquet), or - for standard input (JSONL or CSV)")
    p.add_argument("-o", "--output", type=Path,
                   help="output file, .jsonl, .csv or .parquet (default: JSONL on standard output)")
    p.add_argument("--model", type=Path, default=None,
                   help=f"model bundle (.joblib) or registered model URI (models:/fastslow@champion); default "
                        f"$FASTSLOW_MODEL, else {DEFAULT_MODEL_PATH}")
    p.add_argument("--format", choices=FORMATS, help="input format when the extension does not say")
    p.add_argument("--output-format", choices=FORMATS, help="output format when the extension does not say")
    p.add_argument("--text-col", default="query", help="input column holding the query (default: query)")
    p.add_argument("--id-col", default="id", help="input column holding the id (default: id)")
    p.add_argument("--jobs", "-j", type=positive_int, default=None,
                   help=f"worker processes, each loading the model once (default: all {os.cpu_count()} cores)")
    p.add_argument("--chunk-size", "--batch-size", dest="chunk_size", type=positive_int, default=DEFAULT_CHUNK,
                   help=f"rows per chunk, scored together: the unit of parallel work and of --resume "
                        f"(default {DEFAULT_CHUNK})")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run with -o from its last completed chunk")
    p.add_argument("--review-out", type=Path,
                   help="also write the rows that need a person (review_required, low confidence, errors) here")
    p.add_argument("--review-below", type=probability, default=None,
                   help="with --review-out: confidence below which a row goes for review "
                        "(default: the model's review threshold)")
    _add_trust_options(p)
    p.add_argument("--explain", action="store_true",
                   help="add to every record its `explanation`: the features that decided its label (each one's "
                        "share of the logit margin) and the automation spans with their confidence")
    p.add_argument("--memo", type=non_negative_int, nargs="?", const=100_000, default=0, metavar="N",
                   help="reuse the analysis of a repeated (query, context, endpoint) among the last N distinct "
                        "ones per process (default N 100000; off unless given): for logs that repeat their head "
                        "queries; records are identical either way")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("explain", help="why one query gets its label: the deciding features and the span tags",
                       description="Score one query and show why: each active feature's exact contribution to the "
                                   "logit of the chosen reason code and of the runner-up label's best code, largest "
                                   "first, and the automation parser's spans with their CRF confidence.")
    p.add_argument("query", help="the query, e.g. 把空调调到二十二度")
    p.add_argument("--context", default=None,
                   help='earlier turns as JSON: [{"role": "assistant", "system": "slow", "text": "..."}]')
    p.add_argument("--endpoint", choices=ENDPOINTS, default=None, help="where the query was said (default: unknown)")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH,
                   help="model bundle (.joblib) or registered model URI (models:/fastslow@champion)")
    p.add_argument("--top", type=int, default=10, help="features shown per (sub)request (default 10; 0: all)")
    p.add_argument("--json", action="store_true", help="print the record with its explanation as one JSON line")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("eval", help="the training metrics for any labelled file")
    p.add_argument("data", type=Path, help="labelled .jsonl or .csv (query, label, primary_reason_code)")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH,
                   help="model bundle (.joblib) or registered model URI (models:/fastslow@champion)")
    p.add_argument("--errors", type=Path, help="write the misclassified rows here (JSONL)")
    p.add_argument("--json", action="store_true", help="also print the metrics as one JSON line")
    _add_trust_options(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("robustness", help="does each row keep its label under spoken variation? (per variant kind)",
                       description="Score every row and its spoken variants (fillers, wake words, polite tails, "
                                   "stutters, dropped punctuation, digits <-> Chinese numerals, ASR homophones, ASR-like "
                                   "swaps of a character for one of the same or a near sound); "
                                   "print the share of labels that stay put per kind and overall; log it to MLflow.")
    p.add_argument("data", type=Path, help="rows with a query (.jsonl, .csv or .parquet); labels are not needed")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH,
                   help="model bundle (.joblib) or registered model URI (models:/fastslow@champion)")
    p.add_argument("--seed", type=int, default=0, help="seed of the spoken variants (the same seed, the same variants)")
    p.add_argument("--kinds", nargs="+", metavar="KIND", help="only these variant kinds (default: all)")
    p.add_argument("--text-col", default="query", help="input column holding the query (default: query)")
    p.add_argument("--flips", type=Path, help="write the variants whose label moved here (JSONL)")
    p.add_argument("--prefix", default=None, help="MLflow metric prefix: PREFIX_robustness (default: none, robustness)")
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)")
    p.add_argument("--experiment", default="fastslow", help="MLflow experiment of a new run")
    p.add_argument("--run-name", default=None, help="MLflow run name of a new run")
    p.add_argument("--no-mlflow", action="store_true", help="print only, log nothing")
    p.set_defaults(func=cmd_robustness)

    p = sub.add_parser("review", help="Label Studio tasks from a log: the distinct queries most worth labelling",
                       description="Score a log and write Label Studio tasks: one per distinct query (normalised "
                                   "text, context, endpoint) with its count in the log, the most teaching first "
                                   "(low confidence, router and automation parser disagreeing, frequent), the "
                                   "model's answer as a pre-annotation; and the labelling config (XML) generated "
                                   "from the taxonomy and the intents. Rows without a query are counted and left out.")
    p.add_argument("input", type=Path, help="the log (.jsonl, .csv or .parquet): query, optional context and endpoint")
    p.add_argument("-o", "--output", type=Path, required=True, help="the tasks file to write (JSON, Label Studio's import format)")
    p.add_argument("--config-out", type=Path, default=None,
                   help="where to write the labelling config (default: beside the tasks, OUTPUT.label_config.xml)")
    p.add_argument("--limit", type=positive_int, default=1000,
                   help="at most this many tasks, the most teaching first (default 1000)")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH,
                   help="model bundle (.joblib) or registered model URI (models:/fastslow@champion)")
    p.add_argument("--format", choices=FORMATS, help="input format when the extension does not say")
    p.add_argument("--text-col", default="query", help="input column holding the query (default: query)")
    _add_trust_options(p)
    p.set_defaults(func=cmd_review)

    p = sub.add_parser("serve", help="the HTTP server: /v1/route, /v1/route/batch, /v1/model, /healthz, /readyz")
    p.add_argument("--model", type=Path, default=None,
                   help=f"model bundle (.joblib) or models:/fastslow@champion; default $FASTSLOW_MODEL, "
                        f"else {DEFAULT_MODEL_PATH}")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    p.add_argument("--workers", type=positive_int, default=1, help="worker processes, each with its own copy of the model")
    from fastslow.serve.settings import SETTINGS, Limits, option

    for name, (env, check, what) in SETTINGS.items():  # the same checks as the workers' for the environment's
        p.add_argument(option(name), type=functools.partial(_argument, check), default=None, metavar="N",
                       help=f"{what} (default ${env}, else {getattr(Limits, name)})")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    p.add_argument("--shadow", default=None, metavar="MODEL",
                   help="also score every request with this model (a bundle or models:/fastslow@challenger), off the "
                        "response path, and count its agreement on /metrics and in the access log")
    _add_trust_options(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sign", help="sign a model bundle with the Ed25519 private key (re-sign an older bundle)",
                       description="Sign the manifest of a bundle you trust with the private key where models are "
                                   "trained; loaders check it with the public key. Nothing is unpickled.")
    p.add_argument("model", type=Path, help="model bundle (.joblib) with its manifest beside it")
    p.add_argument("--signing-key-file", type=Path, default=None,
                   help="the private key (default: $FASTSLOW_SIGNING_KEY, else $FASTSLOW_SIGNING_KEY_FILE, else "
                        "~/.config/fastslow/signing_ed25519)")
    p.add_argument("--expect-sha256", metavar="HEX", default=None,
                   help="sign only a file with this SHA-256 (e.g. the one its MLflow run recorded)")
    p.set_defaults(func=cmd_sign)

    from fastslow.models.lifecycle.registry import DEFAULT_REGISTERED_MODEL

    registry_options = argparse.ArgumentParser(add_help=False)
    registry_options.add_argument("--name", default=DEFAULT_REGISTERED_MODEL, help="registered model name")
    registry_options.add_argument("--tracking-uri", default=None,
                                  help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)")
    p = sub.add_parser("models", parents=[registry_options],
                       help="registered versions with their fixture, blind and calibration figures; "
                            "`models diff A B` compares two",
                       description="Without arguments: every registered version with its fixture figures (the "
                                   "gate's), its blind-set and calibration-set figures, capture conformance and "
                                   "aliases. `fastslow models diff A B`: versions A and B side by side.")
    p.add_argument("diff", nargs="*", metavar="diff A B", help="compare versions A and B (e.g. `diff 3 4`)")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each version's gate decision")
    p.add_argument("--all", action="store_true", help="with diff: every metric of the two runs, not only the headline ones")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("promote", parents=[registry_options],
                       help="move the champion alias to VERSION (through the fixture gate unless --force)")
    p.add_argument("version", help="model version number (see `fastslow models`)")
    p.add_argument("--force", action="store_true", help="promote even when the gate refuses (says what it overrode)")
    p.set_defaults(func=cmd_promote)

    p = sub.add_parser("config", help="`config init [PATH]`: write a starter fastslow.toml (every training setting)",
                       description="Write a starter config file for `fastslow train --config PATH`: every setting "
                                   "with its built-in default, its data paths pointing at the bundled data. "
                                   "An existing file is never overwritten.")
    config_sub = p.add_subparsers(dest="config_command", required=True)
    init = config_sub.add_parser("init", help="write the starter file")
    init.add_argument("path", nargs="?", type=Path, default=Path("fastslow.toml"),
                      help="where to write it (default: fastslow.toml here)")
    init.set_defaults(func=cmd_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "train":
        from fastslow.models.lifecycle.registry import precheck_training

        if precheck_training(argv[1:]):
            return 2
        from fastslow.models.lifecycle import training as train

        return train.main(argv[1:])
    args = build_parser().parse_args(argv)
    from fastslow.models.lifecycle.signing import scoped_env

    with scoped_env():  # the trust options hold for this command (and its workers) only
        return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
