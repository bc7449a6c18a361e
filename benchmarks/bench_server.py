"""HTTP server speed: /v1/route beside /healthz, measured against the same server in the same run.

    python benchmarks/bench_server.py [--model PATH] [--workers 1] [--requests 2000] [--seconds 10]
                                      [--concurrency 1,8,32] [--shadow MODEL]

Starts `fastslow serve` on a free 127.0.0.1 port (loopback only), waits until it is ready, then at each
concurrency level sends up to --requests requests (stopping after --seconds) to /healthz and to
/v1/route over keep-alive connections, one per client, and prints throughput, p50/p99 latency, errors
and the /v1/route ÷ /healthz p50 ratio; then the memory of each worker. /healthz is the floor: the
same HTTP stack and client with no model work. Beside the latencies, the server's own CPU time per
request (its threads' run time from /proc, so other processes on a shared machine barely move it).
Also printed: `model.score` of one query in this process (wall and CPU time, after one pass over the
same queries, as the server has seen them), which is the model's own share of a /v1/route request, and
batch throughput.

Targets, printed at the end:
- under load: at the highest concurrency (32 by default) /v1/route reaches at least 0.7 × /healthz's requests/s,
  with no error;
- liveness under heavy batches: /healthz p99 stays under 50 ms while three clients send large /v1/route/batch
  requests within the default limits (64 items of 1,000 characters each);
- lightweight: each worker's RSS with the model loaded stays under 200 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"  # loopback only, whatever the arguments
WARM_UP = 200  # /v1/route requests before the measured runs (the first WARM_UP queries of the pool)
QUERY_FILES = (ROOT / "data" / "dev" / "routing_dev.jsonl", ROOT / "data" / "fixtures" / "routing_v1.jsonl")


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def query_pool(seed: int, n: int = 500) -> list[dict]:
    pool = []
    for path in QUERY_FILES:
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    pool.append({"query": row["query"], "context": row.get("context") or [],
                                 "endpoint": row.get("endpoint")})
    if not pool:
        pool = [{"query": q} for q in ("打开空调", "帮我规划一下周末去杭州的行程", "下一首", "太冷了，调一下空调")]
    rng = random.Random(seed)
    return [pool[rng.randrange(len(pool))] for _ in range(n)]


def request_bytes(method: str, path: str, body: bytes | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\n"
    if body is None:
        return (head + "\r\n").encode()
    return (head + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


async def one_client(port: int, requests_: list[bytes], counter: list[int], total: int, deadline: float,
                     latencies: list[float], errors: list[str]) -> None:
    reader, writer = await asyncio.open_connection(HOST, port)
    i = 0
    try:
        while counter[0] < total and time.perf_counter() < deadline:
            counter[0] += 1
            payload = requests_[i % len(requests_)]
            i += 1
            start = time.perf_counter()
            try:
                writer.write(payload)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                break
            latencies.append(time.perf_counter() - start)
            if status != 200:
                errors.append(f"HTTP {status}")
    finally:
        writer.close()


async def load(port: int, requests_: list[bytes], clients: int, total: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    counter = [0]
    start = time.perf_counter()
    await asyncio.gather(*(one_client(port, requests_[k::clients] or requests_, counter, total, start + seconds,
                                      latencies, errors) for k in range(clients)))
    elapsed = time.perf_counter() - start
    return {"n": len(latencies), "errors": errors, "rps": len(latencies) / elapsed,
            "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)}


async def health_beside_batches(port: int, health_reqs: list[bytes], batch_reqs: list[bytes], seconds: float) -> dict:
    """/healthz from one client while three others each send large batches back to back: its latency is
    the server's liveness while it scores."""
    stop = time.perf_counter() + seconds
    batch_errors: list[str] = []
    sent = [0]

    async def batches(request: bytes) -> None:
        while time.perf_counter() < stop:
            result = await load(port, [request], 1, 1, 300)
            batch_errors.extend(result["errors"])
            sent[0] += result["n"]

    senders = [asyncio.ensure_future(batches(r)) for r in batch_reqs]
    await asyncio.sleep(0.2)  # the batches are being scored
    result = await load(port, health_reqs, 1, 10 ** 9, max(0.5, stop - time.perf_counter()))
    await asyncio.gather(*senders)
    result["errors"] += batch_errors
    result["batches"] = sent[0]
    return result


def measured(port: int, requests_: list[bytes], clients: int, total: int, seconds: float, pids: list[int]) -> dict:
    """``load`` and the server's CPU seconds per request over it (``cpu``)."""
    before = cpu_seconds(pids)
    result = asyncio.run(load(port, requests_, clients, total, seconds))
    result["cpu"] = (cpu_seconds(pids) - before) / max(1, result["n"])
    return result


def process_tree(pid: int) -> list[int]:
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in children:
            pids.extend(process_tree(int(child)))
    return pids


def memory(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    rollup = Path(f"/proc/{pid}/smaps_rollup")
    if rollup.exists():
        for line in rollup.read_text().splitlines():
            if line.startswith("Pss:"):
                fields["Pss"] = int(line.split()[1]) / 1024
    fields["cmd"] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return fields


def workers_of(server_pid: int, workers: int) -> list[int]:
    """The processes that hold a model: the server itself with one worker, else its spawned children."""
    if workers <= 1:
        return [server_pid]
    return [p for p in process_tree(server_pid)[1:] if "spawn_main" in memory(p)["cmd"]]


def cpu_seconds(pids: list[int]) -> float:
    """CPU time the processes' threads have run so far: ``/proc/<pid>/task/*/schedstat`` (nanoseconds), else
    user + system time from ``/proc/<pid>/stat`` (clock ticks)."""
    total = 0.0
    for pid in pids:
        try:
            total += sum(int(p.read_text().split()[0]) for p in Path(f"/proc/{pid}/task").glob("*/schedstat")) / 1e9
        except (OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def start_server(model: str | None, workers: int, log_dir: Path, shadow: str | None = None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [sys.executable, "-m", "fastslow.cli", "serve", "--host", HOST, "--port", str(port), "--workers", str(workers)]
    if model:
        cmd += ["--model", model]
    if shadow:
        cmd += ["--shadow", shadow]
    out_path, err_path = log_dir / "bench_server.access.log", log_dir / "bench_server.err.log"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:  # logs kept off the terminal
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        log = err_path.read_text(encoding="utf-8", errors="replace")
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}:\n{log}")
        if log.count("jieba initialised") >= workers and "Application startup complete" in log:
            try:
                get(f"http://{HOST}:{port}/readyz")
                return proc, port
            except OSError:
                pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("server not ready after 120 s")


def model_alone(model_path: str | None, rows: list[dict], warm: int, n: int) -> dict:
    """`model.score([row])` in this process over the same sequence of queries as the server's run at one
    client (``warm`` rows of warm-up, then ``n`` requests cycling through ``rows``, so that the per-process
    memos of pure text functions are as warm as the server's): p50 of wall and CPU time, mean CPU time;
    and batch rows/s (batches of 64). The model's share of a /v1/route request."""
    from fastslow.models.lifecycle.bundle import load_bundle
    from fastslow.serve.server import resolve_model_path

    model = load_bundle(resolve_model_path(model_path)).warm_up()
    for row in rows[:warm]:
        model.score([row])
    lat, cpu = [], []
    for i in range(n):
        start, start_cpu = time.perf_counter(), time.thread_time()
        model.score([rows[i % len(rows)]])
        cpu.append(time.thread_time() - start_cpu)
        lat.append(time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(0, len(rows), 64):
        model.score(rows[i: i + 64])
    return {"p50": percentile(lat, 50), "cpu_p50": percentile(cpu, 50), "cpu_mean": sum(cpu) / len(cpu),
            "rows_s": len(rows) / (time.perf_counter() - start)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model bundle (default: $FASTSLOW_MODEL or the trained artifact)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--requests", type=int, default=2000, help="requests per endpoint per concurrency level")
    parser.add_argument("--seconds", type=float, default=10.0, help="time cap per endpoint per concurrency level")
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated numbers of concurrent clients")
    parser.add_argument("--batch-size", type=int, default=64, help="items per /v1/route/batch request")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shadow", default=None, metavar="MODEL",
                        help="serve with `--shadow MODEL` (a challenger scored off the response path): run once with "
                             "and once without to compare /v1/route")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]

    rows = query_pool(args.seed)
    route_reqs = [request_bytes("POST", "/v1/route", json.dumps(r, ensure_ascii=False).encode()) for r in rows]
    health_reqs = [request_bytes("GET", "/healthz")]
    batch_reqs = [request_bytes("POST", "/v1/route/batch", json.dumps(
        {"items": rows[i: i + args.batch_size]}, ensure_ascii=False).encode())
        for i in range(0, len(rows) - args.batch_size + 1, args.batch_size)]

    log_dir = Path(tempfile.mkdtemp(prefix="bench_server-"))
    proc, port = start_server(args.model, args.workers, log_dir, args.shadow)
    try:
        info = get(f"http://{HOST}:{port}/v1/model")
        print(f"server: {args.workers} worker(s) on {HOST}:{port}, model {info['model_version']} "
              f"(sha256 {info['sha256'][:12]}…); {len(rows)} distinct queries from the dev set and fixture")
        print(f"each run: up to {args.requests} requests or {args.seconds:g} s; keep-alive, one connection per client")
        asyncio.run(load(port, route_reqs, 4, WARM_UP, 10))  # warm-up, not measured
        asyncio.run(load(port, health_reqs, 4, 200, 10))

        head = (f"{'clients':>7}  {'endpoint':<22}{'requests':>9}{'errors':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
                f"{'p50 ÷ /healthz':>16}{'server CPU ms/req':>19}")
        print("\n" + head + "\n" + "-" * len(head))
        results, all_errors, met = {}, [], True
        pids = workers_of(proc.pid, args.workers)
        for clients in levels:
            health, route = (measured(port, reqs, clients, args.requests, args.seconds, pids)
                             for reqs in (health_reqs, route_reqs))
            results[clients] = (health, route)
            for name, r in (("GET /healthz", health), ("POST /v1/route", route)):
                ratio = r["p50"] / health["p50"]
                print(f"{clients:>7}  {name:<22}{r['n']:>9}{len(r['errors']):>8}{r['rps']:>9,.0f}"
                      f"{r['p50'] * 1000:>9.2f}{r['p99'] * 1000:>9.2f}{ratio:>16.2f}{r['cpu'] * 1000:>19.3f}")
                all_errors += r["errors"]
            if clients == 1:
                met &= route["p50"] <= 2 * health["p50"]
        batch = asyncio.run(load(port, batch_reqs, 1, max(1, args.requests // 20), args.seconds))
        all_errors += batch["errors"]
        print(f"{1:>7}  {f'POST /v1/route/batch×{args.batch_size}':<22}{batch['n']:>9}{len(batch['errors']):>8}"
              f"{batch['rps']:>9,.0f}{batch['p50'] * 1000:>9.2f}{batch['p99'] * 1000:>9.2f}"
              f"   → {batch['rps'] * args.batch_size:,.0f} rows/s")

        heavy = [request_bytes("POST", "/v1/route/batch", json.dumps(
            {"items": [{"query": (r["query"] * 1000)[:1000]} for r in rows[i: i + 64]]}, ensure_ascii=False).encode())
            for i in range(0, 192, 64)]
        liveness = asyncio.run(health_beside_batches(port, health_reqs, heavy, args.seconds))
        all_errors += liveness["errors"]
        print(f"{'1+3':>7}  {'GET /healthz beside':<22}{liveness['n']:>9}{len(liveness['errors']):>8}"
              f"{liveness['rps']:>9,.0f}{liveness['p50'] * 1000:>9.2f}{liveness['p99'] * 1000:>9.2f}"
              f"   while 3 clients sent {liveness['batches']} batches of 64 × 1,000 characters")

        if args.shadow:
            with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as response:
                samples = [line.rsplit(" ", 1) for line in response.read().decode().splitlines()
                           if line.startswith(("fastslow_shadow_label_agreement_total", "fastslow_shadow_dropped_total"))]
            compared = sum(float(v) for name, v in samples if name.startswith("fastslow_shadow_label_agreement"))
            agreed = sum(float(v) for name, v in samples if 'agrees="true"' in name)
            dropped = sum(float(v) for name, v in samples if name.startswith("fastslow_shadow_dropped"))
            print(f"\nshadow {args.shadow}: {compared:,.0f} queries compared (label agreement "
                  f"{agreed / max(1, compared):.1%}), {dropped:,.0f} dropped (its queue was full)")
        print("\nmemory per worker (after the runs):")
        rss = []
        for pid in workers_of(proc.pid, args.workers):
            m = memory(pid)
            rss.append(m["VmRSS"])
            print(f"  worker pid {pid}: RSS {m['VmRSS']:.0f} MiB (peak {m['VmHWM']:.0f} MiB)"
                  + (f", PSS {m['Pss']:.0f} MiB" if "Pss" in m else ""))
        if args.workers > 1:
            m = memory(proc.pid)
            print(f"  parent pid {proc.pid} (supervisor, no requests): RSS {m['VmRSS']:.0f} MiB")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()

    first = levels[0]
    alone = model_alone(args.model, rows, WARM_UP, results[first][1]["n"])
    print(f"\nmodel alone in this process, the same queries in the same order as /v1/route at {first} client(s): "
          f"model.score of one query p50 {alone['p50'] * 1000:.2f} ms (CPU p50 {alone['cpu_p50'] * 1000:.3f}, "
          f"mean {alone['cpu_mean'] * 1000:.3f} ms); batches of 64: {alone['rows_s']:,.0f} rows/s")
    health, route = results[first]
    print(f"  floor of the ratio, with no server cost at all: (/healthz p50 + model p50) ÷ /healthz p50 = "
          f"{(health['p50'] + alone['p50']) / health['p50']:.2f}")
    extra = route["cpu"] - health["cpu"]
    print(f"  server CPU per request: /v1/route {route['cpu'] * 1000:.3f} ms = /healthz {health['cpu'] * 1000:.3f} "
          f"+ {extra * 1000:.3f} ms, of which the model {alone['cpu_mean'] * 1000:.3f} ms (mean CPU; "
          f"{alone['cpu_mean'] / route['cpu']:.0%} of the request) and the server's own work for a record "
          f"{(extra - alone['cpu_mean']) * 1000:.3f} ms")
    health, route = results[levels[-1]]
    share = route["rps"] / health["rps"]
    print(f"\ntarget under load: /v1/route {route['rps']:,.0f} req/s at {levels[-1]} clients = {share:.2f} × /healthz "
          f"{health['rps']:,.0f} (target ≥ 0.70): {'met' if share >= 0.7 else 'NOT met'}")
    print(f"target liveness: /healthz p99 {liveness['p99'] * 1000:.1f} ms beside large batches (target < 50 ms): "
          f"{'met' if liveness['p99'] < 0.050 else 'NOT met'}")
    print(f"target lightweight: worker RSS {max(rss):.0f} MiB (target < 200 MiB): {'met' if max(rss) < 200 else 'NOT met'}")
    print(f"/v1/route p50 ÷ /healthz p50 at one client: {'≤ 2' if met else '> 2'}; "
          f"errors: {len(all_errors)}" + (f" (e.g. {all_errors[:3]})" if all_errors else ""))
    return 0 if not all_errors else 1


if __name__ == "__main__":
    sys.exit(main())
