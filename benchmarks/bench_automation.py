"""Full-record speed (router + automation parser) beside jieba segmentation alone, same queries, same run.

    python benchmarks/bench_automation.py [--model PATH] [--n 5000] [--batch-size 512]

Prints batch throughput (rows/s) of: `jieba.lcut` alone, the automation parser alone
(`AutomationParser.parse_many`), full records without the parser, and full records with it, each with
its ratio to jieba-only. Target: full record with the parser ≥ 0.33× jieba-only. Then the CRF tagger's two
decoders, each on one text at a time and on batches (why both are kept: ``models/automation/crf.py``).
The queries are the routing corpus (mostly unconditional requests, as in real logs) mixed with the
automation dev and training queries, sampled with a fixed seed.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jieba  # noqa: E402

from benchmarks.timing import best_of  # noqa: E402

from fastslow.features.memo import clear_memos  # noqa: E402

from fastslow.models.automation.data import AUTOMATION_DEV_FILE, load_automation, load_automation_training  # noqa: E402
from fastslow.models.lifecycle.bundle import DEFAULT_MODEL_PATH, load_bundle  # noqa: E402
from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled, load_training  # noqa: E402



def queries(n: int, seed: int, automation_share: float) -> list[dict]:
    routing = [{"query": r["query"], "context": r["context"], "endpoint": r["endpoint"]}
               for r in load_labelled(DEV_FILE) + load_training()]
    automation = [{"query": r["query"]} for r in load_automation(AUTOMATION_DEV_FILE) + load_automation_training()]
    rng = random.Random(seed)
    return [rng.choice(automation) if rng.random() < automation_share else rng.choice(routing) for _ in range(n)]


def decoders(parser, texts, args) -> None:
    """CPU µs per tagged text of each CRF decoder (crfsuite's tagger, text by text; numpy, a batch at once),
    given one text at a time and a batch of ``--batch-size``: ``AutomationTagger.NUMPY_BATCH`` picks between them."""
    from fastslow.models.automation.parser import surface_of
    from fastslow.models.automation.rules import has_condition_signal

    tagger, lex = parser.tagger_, parser.lexicons_
    tagged = [t for t in (surface_of(q, lex) for q in texts) if t and has_condition_signal(t, lex)]
    singles = tagged[:300]
    default = tagger.NUMPY_BATCH
    print(f"CRF decoders, CPU µs per tagged text ({len(tagged)} texts; one at a time: the first {len(singles)})")
    try:
        for name, threshold in (("crfsuite", 10 ** 9), ("numpy", 1)):
            tagger.NUMPY_BATCH = threshold
            one = best_of(args.repeats, lambda: [tagger.predict_marginals([t]) for t in singles]) / len(singles)
            many = best_of(args.repeats, lambda: [tagger.predict_marginals(tagged[i: i + args.batch_size])
                                                  for i in range(0, len(tagged), args.batch_size)]) / len(tagged)
            print(f"  {name:<10} one text {one * 1e6:8.1f}   batch of {args.batch_size} {many * 1e6:8.1f}")
    finally:
        tagger.NUMPY_BATCH = default


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--automation-share", type=float, default=0.3,
                        help="share of automation queries in the sample (the rest: routing corpus)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    model = load_bundle(args.model).warm_up()
    gc.collect()  # as the server and the batch workers do after loading (serve/server.py, serve/batch.py)
    gc.freeze()
    if model.automation is None:
        print("this bundle has no automation parser; retrain with train.py", file=sys.stderr)
        return 2
    router_only = replace(model, automation=None)
    jieba.initialize()
    rows = queries(args.n, args.seed, args.automation_share)
    texts = [r["query"] for r in rows]

    def batched(fn):
        def run():
            clear_memos()  # each run pays for every text once: the memos keep nothing of the run before
            return [fn(rows[i: i + args.batch_size]) for i in range(0, len(rows), args.batch_size)]
        return run

    def parse_only():
        clear_memos()
        return [model.automation.parse_many(texts[i: i + args.batch_size]) for i in range(0, len(texts), args.batch_size)]

    timings = {
        "jieba.lcut only": best_of(args.repeats, lambda: [jieba.lcut(t) for t in texts]),
        "automation parser only": best_of(args.repeats, parse_only),
        "full record, no parser": best_of(args.repeats, batched(router_only.score)),
        "full record (router + parser)": best_of(args.repeats, batched(model.score)),
    }
    base = len(rows) / timings["jieba.lcut only"]
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"queries: {len(rows)} (mean {mean_chars:.1f} chars, {args.automation_share:.0%} automation), "
          f"batch size {args.batch_size}, best of {args.repeats}")
    print(f"{'':32}{'rows/s':>10}{'× jieba':>10}")
    for name, seconds in timings.items():
        rps = len(rows) / seconds
        print(f"{name:<32}{rps:>10,.0f}{rps / base:>10.2f}")
    ratio = len(rows) / timings["full record (router + parser)"] / base
    print(f"target: full record ≥ 0.33× jieba-only ({'met' if ratio >= 0.33 else 'NOT met'}: {ratio:.2f})")
    decoders(model.automation, texts, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
