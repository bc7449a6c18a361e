"""Router speed beside jieba segmentation alone, measured on the same queries in the same process.

    python benchmarks/bench_router.py [--model PATH] [--n 5000] [--single 2000]

Prints batch throughput (rows/s) of full records and of `jieba.lcut` alone with their ratio, and
single-query latency p50/p99 of both. Targets (issue 2): batch ≥ 0.5× jieba-only; single p99 ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jieba  # noqa: E402

from models.bundle import DEFAULT_MODEL_PATH, load_bundle  # noqa: E402
from models.dataset import DEV_FILE, load_labelled, load_training  # noqa: E402


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def queries(n: int, seed: int) -> list[dict]:
    pool = [{"query": r["query"], "context": r["context"], "endpoint": r["endpoint"]}
            for r in load_labelled(DEV_FILE) + load_training()]
    rng = random.Random(seed)
    return [pool[rng.randrange(len(pool))] for _ in range(n)]


def best_of(repeats, fn):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--n", type=int, default=5000, help="queries in the batch run")
    parser.add_argument("--single", type=int, default=2000, help="queries in the single-query run")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3, help="batch runs; the best is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    model = load_bundle(args.model).warm_up()
    jieba.initialize()
    rows = queries(args.n, args.seed)
    texts = [r["query"] for r in rows]

    jieba_s = best_of(args.repeats, lambda: [jieba.lcut(t) for t in texts])

    def route_all():
        for i in range(0, len(rows), args.batch_size):
            model.score(rows[i: i + args.batch_size])

    route_s = best_of(args.repeats, route_all)

    single_rows = rows[: args.single]
    jieba_lat, route_lat = [], []
    for row in single_rows:
        start = time.perf_counter()
        jieba.lcut(row["query"])
        jieba_lat.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.score([row])
        route_lat.append(time.perf_counter() - start)

    jieba_rps, route_rps = len(rows) / jieba_s, len(rows) / route_s
    ms = lambda s: f"{s * 1000:.3f} ms"
    print(f"queries: {len(rows)} (mean {statistics.mean(map(len, texts)):.1f} chars), "
          f"batch size {args.batch_size}, best of {args.repeats}")
    print(f"{'':<28}{'jieba.lcut only':>18}{'full record':>16}{'ratio':>9}")
    print(f"{'batch throughput (rows/s)':<28}{jieba_rps:>18,.0f}{route_rps:>16,.0f}{route_rps / jieba_rps:>9.2f}")
    print(f"{'single query p50':<28}{ms(percentile(jieba_lat, 50)):>18}{ms(percentile(route_lat, 50)):>16}")
    print(f"{'single query p99':<28}{ms(percentile(jieba_lat, 99)):>18}{ms(percentile(route_lat, 99)):>16}")
    print(f"targets: batch ratio >= 0.50 ({'met' if route_rps / jieba_rps >= 0.5 else 'NOT met'}); "
          f"single p99 <= 2 ms ({'met' if percentile(route_lat, 99) <= 0.002 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
