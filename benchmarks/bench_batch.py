"""Batch scoring of a synthetic log through the real `fastslow score`, beside jieba segmentation alone.

    python benchmarks/bench_batch.py [--n 100000 [1000000 ...]] [--jobs 1 2] [--model PATH]

For each size it writes a JSONL log of synthetic voice-assistant lines (dev and training queries with
spoken variations, endpoints, earlier turns, and 1% broken or empty lines as real logs have), runs
`fastslow score LOG -o OUT --jobs N` as a subprocess for each N, and prints rows/s end to end (model
loading and worker start included), the peak memory of the whole process tree (the sum of the
resident sets of the main process and its workers) and of its largest process, both sampled every 0.1 s,
and `jieba.lcut` alone on the same queries in this process. Targets: full records ≥ 0.5×
jieba-only per core; `--jobs 2` ≥ 1.7× `--jobs 1`; peak memory flat as the log grows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jieba  # noqa: E402

from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH  # noqa: E402
from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled, load_training  # noqa: E402

PREFIXES = ("", "", "", "嗯，", "那个，", "请", "帮我", "小爱，", "你好，")
SUFFIXES = ("", "", "", "吧", "一下", "好吗", "谢谢", "，快点")


def write_log(path: Path, n: int, seed: int) -> list[str]:
    """Write ``n`` log lines; the queries of the well-formed ones (for the jieba baseline)."""
    pool = load_labelled(DEV_FILE) + load_training()
    rng = random.Random(seed)
    queries = []
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            if rng.random() < 0.01:
                f.write(rng.choice(('{"id": "broken", "query": "打开', '{"id": "e", "query": ""}')) + "\n")
                continue
            row = pool[rng.randrange(len(pool))]
            query = rng.choice(PREFIXES) + row["query"] + rng.choice(SUFFIXES)
            record = {"id": f"log-{i}", "query": query, "endpoint": row["endpoint"], "ts": 1764633600 + i}
            if row["context"]:
                record["context"] = row["context"]
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            queries.append(query)
    return queries


def tree_rss(pid: int) -> tuple[int, int]:
    """Resident bytes of ``pid`` with all its descendants, and of the largest of them (Linux /proc)."""
    total, largest, stack = 0, 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
            total, largest = total + rss, max(largest, rss)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, StopIteration):
            continue
    return total, largest


def run_score(log: Path, out: Path, jobs: int, model: Path) -> dict:
    """Run `fastslow score`; its wall time, summary line and peak memory, sampled every 0.1 s (the
    child's own ru_maxrss would count this process's size at fork, before exec)."""
    argv = [sys.executable, "-m", "fastslow.cli", "score", str(log), "-o", str(out), "--jobs", str(jobs),
            "--model", str(model)]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    peak, stop = [0, 0], threading.Event()

    def sample():
        while not stop.is_set():
            total, largest = tree_rss(process.pid)
            peak[0], peak[1] = max(peak[0], total), max(peak[1], largest)
            stop.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.stderr.read()
    process.wait()
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"fastslow score failed ({process.returncode}): {stderr.decode()[-2000:]}")
    summary = stderr.decode().strip().splitlines()[-1]
    return {"seconds": seconds, "tree_peak": peak[0], "largest": peak[1], "summary": summary}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000], help="log sizes (lines)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="--jobs values to run")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the log and outputs")
    args = parser.parse_args(argv)

    jieba.initialize()
    mib = lambda b: f"{b / 2**20:,.0f} MiB"
    print(f"cores: {os.cpu_count()}; model {args.model}; end-to-end times include loading the model "
          "and starting workers; the machine may be shared, so read ratios, not absolute figures")
    print(f"{'lines':>9} {'run':<18}{'rows/s':>10}{'x jieba':>9}{'x jobs 1':>10}{'tree peak':>11}{'largest':>10}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for n in args.n:
            log = Path(tmp) / f"log-{n}.jsonl"
            queries = write_log(log, n, args.seed)
            start = time.perf_counter()
            for q in queries:
                jieba.lcut(q)
            jieba_rps = len(queries) / (time.perf_counter() - start)
            print(f"{n:>9} {'jieba.lcut only':<18}{jieba_rps:>10,.0f}{1:>9.2f}")
            base = None
            for jobs in args.jobs:
                out = Path(tmp) / f"out-{n}-{jobs}.jsonl"
                result = run_score(log, out, jobs, args.model)
                rps = n / result["seconds"]
                base = base or (rps if jobs == 1 else None)
                per_core = rps / jobs / jieba_rps
                print(f"{n:>9} {f'score --jobs {jobs}':<18}{rps:>10,.0f}{rps / jieba_rps:>9.2f}"
                      f"{(rps / base) if base else float('nan'):>10.2f}{mib(result['tree_peak']):>11}"
                      f"{mib(result['largest']):>10}   per core {per_core:.2f}x jieba; {result['summary']}")
                out.unlink()
            log.unlink()
    print("targets: full records >= 0.5x jieba-only per core; --jobs 2 >= 1.7x --jobs 1; "
          "peak memory flat as the log grows (compare the sizes above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
