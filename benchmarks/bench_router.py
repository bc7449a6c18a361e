"""Scoring speed beside jieba segmentation alone, measured on the same queries in the same process.

    python benchmarks/bench_router.py [--model PATH] [--n 5000] [--single 2000]

Prints batch throughput (rows/s) and single-query latency p50/p99 of `jieba.lcut` alone, of
routing alone (router + hard rules: the record without the automation parser) and of the full
record, with their ratios to jieba. Targets: routing batch ≥ 0.5× jieba-only and single-query
p99 ≤ 2 ms (issue 2); full record batch ≥ 0.33× jieba-only (issue 3).
"""

from __future__ import annotations

import argparse
import dataclasses
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



def queries(n: int, seed: int) -> list[dict]:
    pool = [{"query": r["query"], "context": r["context"], "endpoint": r["endpoint"]}
            for r in load_labelled(DEV_FILE) + load_training()]
    rng = random.Random(seed)
    return [pool[rng.randrange(len(pool))] for _ in range(n)]



def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--n", type=int, default=5000, help="queries in the batch run")
    parser.add_argument("--single", type=int, default=2000, help="queries in the single-query run")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3, help="batch runs; the best is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    full = load_bundle(args.model).warm_up()
    routing = dataclasses.replace(full, automation=None)
    jieba.initialize()
    rows = queries(args.n, args.seed)
    texts = [r["query"] for r in rows]

    def batch_seconds(model):
        def run():
            for i in range(0, len(rows), args.batch_size):
                model.score(rows[i: i + args.batch_size])
        return best_of(args.repeats, run)

    def latencies(fn):
        out = []
        for row in rows[: args.single]:
            start = time.perf_counter()
            fn(row)
            out.append(time.perf_counter() - start)
        return out

    jieba_rps = len(rows) / best_of(args.repeats, lambda: [jieba.lcut(t) for t in texts])
    results = [("jieba.lcut only", jieba_rps, latencies(lambda row: jieba.lcut(row["query"])))]
    for name, model in (("routing", routing), ("full record", full)):
        results.append((name, len(rows) / batch_seconds(model), latencies(lambda row: model.score([row]))))

    ms = lambda s: f"{s * 1000:.3f}"
    print(f"queries: {len(rows)} (mean {statistics.mean(map(len, texts)):.1f} chars), "
          f"batch size {args.batch_size}, best of {args.repeats}; automation parser in the bundle: "
          f"{full.automation is not None}")
    print(f"{'':<18}{'batch rows/s':>14}{'x jieba':>9}{'single p50 ms':>15}{'single p99 ms':>15}")
    for name, rps, lat in results:
        print(f"{name:<18}{rps:>14,.0f}{rps / jieba_rps:>9.2f}{ms(percentile(lat, 50)):>15}{ms(percentile(lat, 99)):>15}")
    (_, routing_rps, routing_lat), (_, full_rps, _) = results[1], results[2]
    verdict = lambda ok: "met" if ok else "NOT met"
    print(f"targets: routing batch >= 0.50x jieba ({verdict(routing_rps / jieba_rps >= 0.5)}); "
          f"routing single p99 <= 2 ms ({verdict(percentile(routing_lat, 99) <= 0.002)}); "
          f"full record batch >= 0.33x jieba ({verdict(full_rps / jieba_rps >= 0.33)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
