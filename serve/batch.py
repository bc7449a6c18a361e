"""``fastslow score`` on a log of any size: streamed in chunks, scored on every core, written
atomically, resumable, and every input row accounted for.

The input is read a chunk at a time (``--chunk-size`` rows). With ``--jobs N`` > 1, N worker
processes each load the bundle once and score chunks; at most ``2 N`` chunks are in flight, and
results are written in input order, so memory stays flat whatever the file's size. Each worker also
encodes its chunk for the output format, so the main process only reads, parses and appends.
A worker ends with its parent, however the parent ends; Ctrl-C or SIGTERM to the parent stops the
workers at once and keeps the partial output for ``--resume``.

With ``-o OUT``, records go to ``OUT.partial`` and ``OUT.progress.json`` records, after every chunk
written, how many chunks are done and the byte length of the partial output at that point (with the
input's identity, the model's SHA-256 and the options). ``--resume`` truncates the partial output to
that length and skips that many input chunks; the finished file is renamed to ``OUT`` only when every
row is accounted for: rows read == scored + errors == records written.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any, Iterable, Iterator

from fastslow.data.io import InputFileError, RowSource
from fastslow.models.scoring import chunked, review_entry, score_chunk
from fastslow.data.sinks import EXPLAINED, RECORD, REVIEW, SINKS, open_sink, output_format

DEFAULT_CHUNK = 2000
PROGRESS_VERSION = 1


def zero_counts() -> dict:
    """A run's tallies before its first chunk (the summary line and the checkpoint keep the same keys)."""
    return dict.fromkeys(("rows", "scored", "errors", "written", "reviewed"), 0)


class BatchError(RuntimeError):
    """The run cannot start or cannot go on (a resume that does not match, ...): exit status 2."""


@dataclass
class BatchOptions:
    input: str
    output: Path | None = None
    model: Path | None = None
    input_format: str | None = None
    output_format: str | None = None
    text_col: str = "query"
    id_col: str = "id"
    jobs: int | None = None  # None: every core
    chunk_size: int = DEFAULT_CHUNK
    resume: bool = False
    review_out: Path | None = None
    review_below: float | None = None  # None: the model's review threshold
    progress: bool | None = None  # None: when standard error is a terminal
    explain: bool = False  # every record gets its ``explanation`` (an ``explanation`` column in CSV/Parquet)
    memo: int = 0  # > 0: reuse the analysis of the last `memo` distinct (query, context, endpoint) per process


@dataclass
class ChunkResult:
    payload: Any  # the chunk encoded for the output sink
    written: int  # records in the payload
    review: Any  # the chunk's rows for review, encoded for the review sink (or None)
    reviewed: int
    scored: int
    errors: int


class ChunkScorer:
    """Scores one chunk of ``(line, parsed, error)`` rows and encodes it for the output (and review)
    formats: the same work in the main process (``--jobs 1``) and in each worker."""

    def __init__(self, model, output_format: str, review_format: str | None, review_below: float | None,
                 explain: bool = False, memo: int = 0):
        from fastslow.models.pipeline import Memo

        self.model, self.explain = model, explain
        self.layout = EXPLAINED if explain else RECORD
        self.memo = Memo(memo) if memo > 0 else None
        self.encode, self.count = SINKS[output_format].encode, SINKS[output_format].count
        self.encode_review = SINKS[review_format].encode if review_format else None
        self.review_below = model.review_threshold if review_below is None else review_below

    def __call__(self, rows: list) -> ChunkResult:
        records = score_chunk(self.model, rows, self.memo, explain=self.explain)
        if len(records) != len(rows):
            raise RuntimeError(f"{len(rows)} rows gave {len(records)} records")
        errors = sum("error" in r for r in records)
        review, reviewed = None, 0
        if self.encode_review is not None:
            entries = [e for e in (review_entry(r, row, self.review_below) for r, row in zip(records, rows)) if e]
            review, reviewed = self.encode_review(entries, REVIEW), len(entries)
        payload = self.encode(records, self.layout)
        # records written are counted from the encoded bytes or table, not from the list encoded
        return ChunkResult(payload, self.count(payload), review, reviewed, len(records) - errors, errors)


_worker: ChunkScorer | None = None
_load_error: Exception | None = None  # a worker whose model did not load raises it for every chunk
_loaded: Any = None  # the bundle this process loaded last (a ``FastslowModel``), warmed and frozen


def _load_scorer(model_path: str, output_fmt: str, review_fmt: str | None, review_below: float | None,
                 explain: bool = False, memo: int = 0, sha256: str | None = None) -> None:
    """Load the bundle and warm it up for this process's chunks; any failure (a truncated or foreign
    file whose manifest matches) is a ``ModelLoadError`` that says why."""
    global _worker
    _worker = None  # the model of an earlier run may be let go
    _worker = ChunkScorer(_model(model_path, sha256), output_fmt, review_fmt, review_below, explain, memo)


def _model(model_path: str, sha256: str | None = None):
    """The bundle at ``model_path``, warmed. A process that scores several runs (``--jobs 1`` from a notebook,
    ``tools/compare_records.py``, the tests) keeps the model of its last run while the file holds the same
    bytes: the file is checked anew (format, SHA-256, signature or pin, library versions), but not unpickled
    again, and no second copy is frozen beside the first for the life of the process. ``sha256``: the digest
    the caller's own check of the file just gave (``run_batch``), so the file is not hashed twice."""
    global _loaded
    from fastslow.models.lifecycle.bundle import load_bundle, warmed
    from fastslow.models.lifecycle.manifest import verify_bundle

    if _loaded is not None:
        if (sha256 or verify_bundle(model_path)["sha256"]) == _loaded.info.get("sha256"):
            return _loaded
        _loaded = None
        gc.unfreeze()  # another model: the frozen one can be collected once nothing holds it
    model = warmed(load_bundle(model_path), model_path)
    # The model is hundreds of thousands of long-lived objects (vocabularies, lexicons). Left in the
    # collector's generations, every full collection walks them all: a third of batch scoring time.
    gc.collect()
    gc.freeze()
    _loaded = model
    return model


def _end_with_parent(parent_pid: int) -> None:
    """End this worker process as soon as its parent (``parent_pid``) ends, however it ends (a SIGKILL
    included): on Linux the kernel's parent-death signal; everywhere, a thread that sees the worker handed
    to another parent, which also covers a parent gone before this call."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # the thread below still watches

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="fastslow-parent-watch", daemon=True).start()


def _init_worker(parent_pid: int, *init_args) -> None:
    """A worker process's start: it ends with its parent, leaves Ctrl-C (sent to the whole process
    group) to the parent, which stops it, and keeps a model that failed to load to report it."""
    global _load_error
    _end_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _load_scorer(*init_args)
    except Exception as exc:  # noqa: BLE001 - raised for each chunk, so that the parent reports it
        _load_error = exc


def _score_in_worker(rows: list) -> ChunkResult:
    if _load_error is not None:
        raise _load_error
    return _worker(rows)


def score_chunks(chunks: Iterable[list], jobs: int, init_args: tuple) -> Iterator[ChunkResult]:
    """Results of ``chunks`` in input order: in this process for ``jobs`` 1, else in ``jobs`` worker
    processes with at most ``2 jobs`` chunks in flight (``map`` would read the whole input ahead). A
    worker that dies (killed, out of memory) fails the run with ``BrokenProcessPool``, never a hang."""
    if jobs <= 1:
        _load_scorer(*init_args)
        yield from map(_worker, chunks)
        return
    # loky (joblib's process pool): fresh interpreters that load the bundle themselves, and a shutdown of its
    # own that kills the workers and leaves no thread of the parent waiting on a pipe. With the standard
    # library's pool, a run stopped while its workers started hung for ever at exit (its queue's feeder
    # thread blocked writing to a pipe that no worker read any more), and stopping its workers took its
    # private attributes.
    from joblib.externals.loky import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(os.getpid(), *init_args))
    pending: deque = deque()
    try:
        for chunk in chunks:
            pending.append(pool.submit(_score_in_worker, chunk))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BaseException:  # stopped (Ctrl-C, SIGTERM) or failed: end the workers now, not after their chunks
        silence_pool_manager_after_kill()
        pool.shutdown(wait=False, kill_workers=True)
        raise
    else:
        pool.shutdown(wait=True)


def silence_pool_manager_after_kill() -> None:
    """Keep loky's manager thread from printing a traceback once its workers are killed on purpose.

    After ``shutdown(kill_workers=True)`` the thread can still take a queued work id whose item the kill
    has just dropped and die with ``KeyError`` (a race inside loky's shutdown, not ours): the run has
    stopped as asked and lost nothing, so the traceback would only tell the user something broke. Any
    other thread's error is printed as before."""
    previous = threading.excepthook

    def hook(args) -> None:
        if args.thread is None or args.thread.name != "ExecutorManagerThread":
            previous(args)

    threading.excepthook = hook


class Progress:
    """One line on standard error, rewritten in place: rows, rows/s and, when the input's size is
    known, per cent done and ETA. Silent unless enabled (by default: standard error is a terminal)."""

    def __init__(self, source: RowSource, enabled: bool, stream=None, every: float = 0.5):
        self.source, self.enabled, self.stream, self.every = source, enabled, stream or sys.stderr, every
        self.started = self.last = time.monotonic()
        self.start_done = source.done() or 0.0  # a resumed run starts part-way
        self.shown = False

    def update(self, rows: int, new_rows: int) -> None:
        """``rows`` done in all, ``new_rows`` of them by this run."""
        now = time.monotonic()
        if not self.enabled or now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.started, 1e-9)
        line = f"\r{rows:,} rows  {new_rows / elapsed:,.0f} rows/s"
        done = self.source.done()
        if done and done > self.start_done:
            eta = elapsed * (1 - done) / (done - self.start_done)
            line += f"  {done:.0%}  ETA {int(eta) // 3600}:{int(eta) % 3600 // 60:02d}:{int(eta) % 60:02d}"
        self.stream.write(line + " " * 4)
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def same_file(a: str | Path | None, b: str | Path | None) -> bool:
    """Whether two paths name one file (the same path, or links to one file)."""
    if a is None or b is None:
        return False
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def input_identity(path: str) -> dict:
    """What makes the input the same file on resume: its path, size, mtime and first MiB's digest."""
    stat = os.stat(path)
    with open(path, "rb") as f:
        head = hashlib.sha256(f.read(1 << 20)).hexdigest()
    return {"path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head_sha256": head}


@dataclass
class Checkpoint:
    """``OUT.progress.json``: where a run with ``-o`` has got to, rewritten atomically after each chunk."""

    identity: dict
    chunks: int = 0
    counts: dict = field(default_factory=zero_counts)
    output_bytes: int = 0
    review_bytes: int = 0
    version: int = PROGRESS_VERSION

    def save(self, path: Path) -> None:
        tmp = sidecar(path, ".tmp")
        tmp.write_text(json.dumps(asdict(self), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> "Checkpoint | None":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data) if data.get("version") == PROGRESS_VERSION else None
        except (OSError, ValueError, TypeError):
            return None


class Target:
    """One output file written as ``PATH.partial`` and renamed to ``PATH`` when complete (or standard output)."""

    def __init__(self, path: Path | None, fmt: str, layout, stdout=None):
        self.path, self.fmt, self.layout, self.stdout = path, fmt, layout, stdout
        self.partial = sidecar(path, ".partial") if path is not None else None
        self.sink = None

    def open(self, keep_bytes: int | None = None) -> int:
        """Open for writing, fresh or keeping the first ``keep_bytes`` of a partial file; the offset."""
        if keep_bytes is not None:
            if not self.partial.is_file() or self.partial.stat().st_size < keep_bytes:
                raise BatchError(f"cannot resume: {self.partial} is missing or shorter than recorded; "
                                 "rerun without --resume")
            os.truncate(self.partial, keep_bytes)
        try:
            self.sink = open_sink(self.partial, self.fmt, self.layout, append=keep_bytes is not None,
                                  stdout=self.stdout)
        except OSError as exc:  # a read-only folder, a full disk, ...
            raise BatchError(f"cannot write {self.partial}: {exc.strerror or exc}") from None
        return self.sink.flush() or 0

    def commit(self) -> None:
        self.sink.close()
        if self.partial is not None:
            if hasattr(self.sink, "stream"):
                os.fsync(self.sink.stream.fileno())
                self.sink.stream.close()
            os.replace(self.partial, self.path)

    def discard(self) -> None:
        """Close and remove the partial file this target opened (a run refused before it wrote anything)."""
        if self.sink is not None and self.partial is not None:
            self.abandon()
            self.partial.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Close without renaming: the partial file stays for ``--resume`` or inspection."""
        if self.sink is not None and self.partial is not None:
            try:
                self.sink.close()
                if hasattr(self.sink, "stream"):
                    self.sink.stream.close()
            except Exception:
                pass


def resume_point(opts: BatchOptions, source: RowSource, model_sha256: str, out_fmt: str, review_fmt: str | None,
                 progress_path: Path, stderr) -> Checkpoint:
    """The checkpoint to go on from (``--resume`` with a matching ``OUT.progress.json``), or a fresh
    one for this run's identity; ``BatchError`` when the recorded run had another input, model or options."""
    identity = {"input": input_identity(source.path), "model_sha256": model_sha256,
                "options": {"input_format": source.format, "text_col": opts.text_col, "id_col": opts.id_col,
                            "chunk_size": opts.chunk_size, "output_format": out_fmt,
                            "review_out": str(opts.review_out) if opts.review_out else None,
                            "review_format": review_fmt, "review_below": opts.review_below,
                            **({"explain": True} if opts.explain else {})}}
    if not opts.resume:
        return Checkpoint(identity)
    checkpoint = Checkpoint.load(progress_path)
    if checkpoint is None:
        print(f"fastslow score: no progress to resume beside {opts.output}; starting from the beginning", file=stderr)
        return Checkpoint(identity)
    if checkpoint.identity != identity:
        changed = [k for k in identity if identity[k] != checkpoint.identity.get(k)]
        raise BatchError(f"cannot resume: the {', '.join(changed)} differ from the interrupted run's "
                         f"({progress_path}); rerun without --resume to start again")
    return checkpoint


def _output_format(option: str, path, fmt: str | None = None) -> str:
    """``output_format``, its refusal naming the option that gave the output (not the input file)."""
    try:
        return output_format(path, fmt)
    except InputFileError as exc:
        raise BatchError(f"{option}: {exc}") from None


def run_batch(opts: BatchOptions, stdout=None, stderr=None) -> int:
    """Score ``opts.input`` as the options say; the exit status (0, 1 when the counts do not
    reconcile, 2 when the input, the model or the options are refused). Raises ``InputFileError``,
    ``BatchError`` and ``ModelLoadError`` for the caller to report."""
    from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH, verify_bundle

    stderr = stderr or sys.stderr
    model_path = Path(opts.model or DEFAULT_MODEL_PATH)
    source = RowSource(opts.input, opts.input_format, opts.text_col, opts.id_col)
    out_fmt = _output_format("-o" if opts.output else "--output-format", opts.output, opts.output_format)
    review_fmt = _output_format("--review-out", opts.review_out) if opts.review_out else None
    if opts.chunk_size < 1:
        raise BatchError("--chunk-size must be at least 1")
    resumable = opts.output is not None and not source.stdin and "parquet" not in (out_fmt, review_fmt)
    if opts.resume and not resumable:
        raise BatchError("--resume needs -o, an input file (not standard input) and JSONL or CSV outputs "
                         "(a Parquet file is readable only once complete; write JSONL or CSV to resume)")
    for path in (opts.output, opts.review_out):
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise BatchError(f"no folder {Path(path).parent} for {path}")
    if same_file(opts.output, opts.review_out):
        raise BatchError(f"--review-out and -o name the same file ({opts.output}); give the rows for review "
                         "a file of their own")
    for option, path in (("-o", opts.output), ("--review-out", opts.review_out)):
        if not source.stdin and same_file(path, source.path):
            raise BatchError(f"{option} {path} is the input file; write to another file (the input is never "
                             "replaced)")
    manifest = verify_bundle(model_path)

    output = Target(opts.output, out_fmt, EXPLAINED if opts.explain else RECORD, stdout=stdout)
    review = Target(opts.review_out, review_fmt, REVIEW) if opts.review_out else None
    progress_path = sidecar(opts.output, ".progress.json") if resumable else None
    checkpoint = (resume_point(opts, source, manifest["sha256"], out_fmt, review_fmt, progress_path, stderr)
                  if resumable else None)
    resuming = checkpoint is not None and checkpoint.chunks > 0

    counts = dict(checkpoint.counts) if resuming else zero_counts()
    offsets = (checkpoint.output_bytes, checkpoint.review_bytes) if resuming else (None, None)
    checkpoint_rows = counts["rows"]
    rows_read = 0

    def counted(rows):
        nonlocal rows_read
        for row in rows:
            rows_read += 1
            yield row

    chunks = chunked(counted(source), opts.chunk_size)
    done_chunks = checkpoint.chunks if resuming else 0
    skipped = sum(1 for _ in islice(chunks, done_chunks))
    if skipped != done_chunks or rows_read != checkpoint_rows:
        raise BatchError(f"cannot resume: the input has {rows_read} rows in {skipped} chunks, the interrupted run "
                         f"had done {checkpoint_rows} rows in {done_chunks}; rerun without --resume")

    if resuming:
        print(f"fastslow score: resuming {opts.output} after {done_chunks} chunks ({checkpoint_rows} rows)",
              file=stderr)
    jobs = max(1, opts.jobs or os.cpu_count() or 1)
    head = list(islice(chunks, 2))
    if len(head) < 2:
        jobs = 1  # one chunk left: starting workers would cost more than scoring it here
    chunks = chain(head, chunks)

    enabled = stderr.isatty() if opts.progress is None else opts.progress
    progress = Progress(source, enabled, stderr)
    targets = [t for t in (output, review) if t is not None]
    results = None
    try:
        try:
            start_offsets = [output.open(offsets[0]), review.open(offsets[1]) if review else 0]
        except BatchError:  # e.g. --review-out cannot be written: no empty OUT.partial left behind
            if not resuming:
                for target in targets:
                    target.discard()
            targets = []
            raise
        if resumable:
            checkpoint.output_bytes, checkpoint.review_bytes = start_offsets
            checkpoint.save(progress_path)
        init_args = (str(model_path), out_fmt, review_fmt, opts.review_below, opts.explain, opts.memo,
                     manifest["sha256"])
        results = score_chunks(chunks, jobs, init_args)
        for result in results:
            output.sink.write(result.payload)
            if review:
                review.sink.write(result.review)
            counts["scored"] += result.scored
            counts["errors"] += result.errors
            counts["written"] += result.written
            counts["reviewed"] += result.reviewed
            done_chunks += 1
            if resumable:
                checkpoint.chunks = done_chunks
                checkpoint.counts = {**counts, "rows": counts["scored"] + counts["errors"]}  # of done chunks
                checkpoint.output_bytes = output.sink.flush()
                checkpoint.review_bytes = review.sink.flush() if review else 0
                checkpoint.save(progress_path)
            elif opts.output is None:
                output.sink.flush()
            done_rows = counts["scored"] + counts["errors"]
            progress.update(done_rows, done_rows - checkpoint_rows)
    except BaseException:
        if results is not None:
            results.close()  # stops the workers
        progress.close()
        for target in targets:
            target.abandon()
        raise
    progress.close()
    counts["rows"] = rows_read
    ok = counts["rows"] == counts["scored"] + counts["errors"] == counts["written"]
    where = f" → {opts.output}" if opts.output else ""
    line = (f"fastslow score: {counts['rows']} rows read, {counts['scored']} scored, {counts['errors']} errors, "
            f"{counts['written']} records written{where}")
    if review:
        line += f"; {counts['reviewed']} rows for review → {opts.review_out}"
    if not ok:
        for target in targets:
            target.abandon()
        print(line, file=stderr)
        print("fastslow score: the counts do not reconcile (rows read, scored + errors and records written "
              f"must be equal); the output was not completed{' (left in ' + str(output.partial) + ')' if output.partial else ''}",
              file=stderr)
        return 1
    for target in targets:
        target.commit()
    if progress_path is not None:
        progress_path.unlink(missing_ok=True)
    print(line, file=stderr)
    return 0
