"""Scoring speed beside jieba segmentation alone, measured on the same queries in the same process.

    python benchmarks/bench_router.py [--model PATH] [--n 5000] [--single 2000]

Prints batch throughput (rows/s) and single-query latency p50/p99 of `jieba.lcut` alone, of
routing alone (router + hard rules: the record without the automation parser) and of the full
record, with their ratios to jieba, on distinct queries. Targets: routing batch ≥ 0.5×
and full record batch ≥ 0.33× jieba-only; single full record p99 ≤ 1 ms.

Then, apart (never the target): the full record on a log that repeats its head queries as real
logs do (ranks drawn from a Zipf distribution over the distinct queries), scored without and with
the batch memo (`fastslow score --memo`).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jieba  # noqa: E402

from benchmarks.timing import best_of, percentile  # noqa: E402

from fastslow.models.lifecycle.bundle import DEFAULT_MODEL_PATH, load_bundle  # noqa: E402
from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled, load_training  # noqa: E402
try:
    from fastslow.features.memo import clear_memos  # noqa: E402
except ImportError:  # an older fastslow: no text memos to clear
    def clear_memos():
        pass
try:
    from fastslow.models.pipeline import Memo  # noqa: E402
except ImportError:  # an older fastslow (for a before/after comparison): no memo, no Zipf figure
    Memo = None



def pool() -> list[dict]:
    """Distinct (query, context, endpoint) rows of the dev set and the training corpus."""
    rows = {}
    for r in load_labelled(DEV_FILE) + load_training():
        row = {"query": r["query"], "context": r["context"], "endpoint": r["endpoint"]}
        rows.setdefault(json.dumps(row, ensure_ascii=False, sort_keys=True), row)
    return list(rows.values())


def queries(n: int, seed: int) -> list[dict]:
    """``n`` distinct rows (every query is new to the model's caches, as the target asks)."""
    rows = pool()
    return random.Random(seed).sample(rows, min(n, len(rows)))


def zipf_log(n: int, seed: int, s: float = 1.1) -> list[dict]:
    """``n`` rows whose ranks follow Zipf's law with exponent ``s`` over the distinct rows."""
    rows = pool()
    random.Random(seed).shuffle(rows)
    weights = [1.0 / (rank ** s) for rank in range(1, len(rows) + 1)]
    return random.Random(seed + 1).choices(rows, weights=weights, k=n)



def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--n", type=int, default=5000, help="queries in the batch run")
    parser.add_argument("--single", type=int, default=2000, help="queries in the single-query run")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3, help="batch runs; the best is kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--zipf-n", type=int, default=20000, help="rows of the Zipf-distributed log (0: skip)")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave the loaded model in the garbage collector's generations (before 2026-12-03)")
    args = parser.parse_args(argv)

    full = load_bundle(args.model).warm_up()
    # as the server and the batch workers do after loading (serve/server.py, serve/batch.py): the model's
    # long-lived objects out of every collection, so a full collection does not walk them all
    if not args.no_freeze:
        gc.collect()
        gc.freeze()
    routing = dataclasses.replace(full, automation=None)
    jieba.initialize()
    rows = queries(args.n, args.seed)
    texts = [r["query"] for r in rows]

    def batch_seconds(model):
        def run():
            clear_memos()  # each run pays for every text once: the memos keep nothing of the run before
            for i in range(0, len(rows), args.batch_size):
                model.score(rows[i: i + args.batch_size])
        return best_of(args.repeats, run)

    def latencies(fn):
        """Wall and CPU seconds of each single call (CPU time: what the call cost, whatever else the machine ran)."""
        clear_memos()
        wall, cpu = [], []
        for row in rows[: args.single]:
            start, start_cpu = time.perf_counter(), time.process_time()
            fn(row)
            cpu.append(time.process_time() - start_cpu)
            wall.append(time.perf_counter() - start)
        return wall, cpu

    jieba_rps = len(rows) / best_of(args.repeats, lambda: [jieba.lcut(t) for t in texts])
    results = [("jieba.lcut only", jieba_rps, latencies(lambda row: jieba.lcut(row["query"])))]
    for name, model in (("routing", routing), ("full record", full)):
        results.append((name, len(rows) / batch_seconds(model), latencies(lambda row: model.score([row]))))

    ms = lambda s: f"{s * 1000:.3f}"
    print(f"queries: {len(rows)} (mean {statistics.mean(map(len, texts)):.1f} chars), "
          f"batch size {args.batch_size}, best of {args.repeats}; automation parser in the bundle: "
          f"{full.automation is not None}")
    print(f"{'':<18}{'batch rows/s':>14}{'x jieba':>9}{'single p50 ms':>15}{'single p99 ms':>15}"
          f"{'CPU p50 ms':>12}{'CPU p99 ms':>12}")
    for name, rps, (lat, cpu) in results:
        print(f"{name:<18}{rps:>14,.0f}{rps / jieba_rps:>9.2f}{ms(percentile(lat, 50)):>15}{ms(percentile(lat, 99)):>15}"
              f"{ms(percentile(cpu, 50)):>12}{ms(percentile(cpu, 99)):>12}")
    (_, routing_rps, _), (_, full_rps, (full_lat, _)) = results[1], results[2]
    verdict = lambda ok: "met" if ok else "NOT met"
    print(f"targets: routing batch >= 0.50x jieba ({verdict(routing_rps / jieba_rps >= 0.5)}); "
          f"full record batch >= 0.33x jieba ({verdict(full_rps / jieba_rps >= 0.33)}); "
          f"full record single p99 <= 1 ms ({verdict(percentile(full_lat, 99) <= 0.001)})")
    if args.zipf_n and Memo is not None:
        log = zipf_log(args.zipf_n, args.seed)
        distinct = len({json.dumps(r, ensure_ascii=False, sort_keys=True) for r in log})

        def log_rps(memo_size):
            def run():
                clear_memos()
                memo = Memo(memo_size) if memo_size else None
                for i in range(0, len(log), args.batch_size):
                    full.score(log[i: i + args.batch_size], memo)
            return len(log) / best_of(args.repeats, run)

        plain, memo = log_rps(0), log_rps(100_000)
        print(f"Zipf log (s=1.1): {len(log)} rows, {distinct} distinct; full record {plain:,.0f} rows/s "
              f"({plain / jieba_rps:.2f}x jieba), with --memo {memo:,.0f} rows/s ({memo / jieba_rps:.2f}x jieba); "
              f"not the target, which is the distinct-query figure above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
