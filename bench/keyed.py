"""Keyed memory over HTTP: remember and recall p50 against a `jnh serve`, 10,000 entries
in one scope, with an in-run baseline (GET /v1/caller: authentication and the HTTP stack
alone, no store call).

Loads N entries (keys `topic-<i>`, 20-60 words each drawn with a Zipf-like skew from a
3,000-word vocabulary, so common words match thousands of entries and rare ones a few)
with PUT …/keyedMemories/{key} on one kept-alive connection, links every 10th entry to
the next, then times round-robin: remember (an update at the stored version of a random
entry), remember (a create of a new key), recall (a 6-12 word request, tokenBudget 500)
and the baseline. Reports p50/p95/p99 and each p50's ratio to the baseline's.

Targets (issue 18): recall p50 <= 5 ms and remember p50 <= 5 ms over HTTP at 10,000.

    .venv/bin/python bench/keyed.py                  # 10,000 entries, 300 timed calls each
    .venv/bin/python bench/keyed.py --entries 2000 --calls 100
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import time
from collections.abc import Callable
from typing import Any

from _common import machine_line, percentile, table
from _serve import DEFAULT_JNH, jnh_serve

TARGET_P50_MS = 5.0
SCOPE = "bench.keyed"
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "ho", "zi")


class Http:
    """One kept-alive HTTP/1.1 connection with the bearer token."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body)
        self.conn.request(method, path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        payload = response.read()
        if response.status != 200:
            raise SystemExit(f"{method} {path}: {response.status} {payload[:300]!r}")
        return json.loads(payload)


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], weights: list[float], n: int) -> str:
    return " ".join(rng.choices(words, weights, k=n)).capitalize() + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300, help="timed calls of each kind")
    parser.add_argument("--server", default="waitress", choices=("waitress", "werkzeug"))
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]  # Zipf-like
    print(f"keyed memory over HTTP, jnh serve ({args.server}), {machine_line()}\n")
    with jnh_serve(args.server, "hashing", DEFAULT_JNH) as served:
        client = Http(served.port, served.token)
        base = f"/v1/scopes/{SCOPE}/keyedMemories"
        started = time.perf_counter()
        for i in range(args.entries):
            content = sentence(rng, words, weights, rng.randint(20, 60))
            client.call("PUT", f"{base}/topic-{i}", {"content": content, "expectedVersion": 0})
        for i in range(0, args.entries - 1, 10):
            client.call("POST", f"{base}/topic-{i}:link", {"target": f"topic-{i + 1}"})
        load_s = time.perf_counter() - started
        versions = dict.fromkeys(range(args.entries), 1)
        fresh = iter(range(args.entries, args.entries * 2))

        def update() -> None:
            i = rng.randrange(args.entries)
            content = sentence(rng, words, weights, rng.randint(20, 60))
            answer = client.call("PUT", f"{base}/topic-{i}",
                                 {"content": content, "expectedVersion": versions[i]})  # fmt: skip
            versions[i] = int(answer["version"])

        def create() -> None:
            content = sentence(rng, words, weights, rng.randint(20, 60))
            client.call("PUT", f"{base}/new-{next(fresh)}", {"content": content,
                                                              "expectedVersion": 0})  # fmt: skip

        def recall() -> None:
            request = sentence(rng, words, weights, rng.randint(6, 12))
            answer = client.call("POST", f"{base}:recall", {"request": request,
                                                            "tokenBudget": 500})  # fmt: skip
            assert answer.get("tokenCount", 0) <= 500

        def caller() -> None:
            client.call("GET", "/v1/caller")

        kinds: list[tuple[str, Callable[[], None]]] = [
            ("remember (update at the stored version)", update),
            ("remember (create)", create),
            ("recall (tokenBudget 500)", recall),
            ("GET /v1/caller (baseline)", caller),
        ]
        samples = _round_robin(kinds, args.calls)
    baseline = percentile(samples["GET /v1/caller (baseline)"], 50)
    rows = []
    for name, _ in kinds:
        p50 = percentile(samples[name], 50)
        goal = "" if name.startswith("GET") else f"<= {TARGET_P50_MS:g} ms"
        met = "" if not goal else ("yes" if p50 <= TARGET_P50_MS else "NO")
        rows.append([name, p50, percentile(samples[name], 95), percentile(samples[name], 99),
                     f"{p50 / baseline:.1f}x", goal, met])  # fmt: skip
    print(f"{args.entries:,} entries loaded over HTTP in {load_s:.1f} s "
          f"({args.entries / load_s:,.0f}/s, links on every 10th)\n")  # fmt: skip
    print(table(["call", "p50 ms", "p95 ms", "p99 ms", "p50 vs baseline", "target", "met"], rows))


def _round_robin(kinds: list[tuple[str, Callable[[], None]]], calls: int, warmup: int = 5
                 ) -> dict[str, list[float]]:  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name, _ in kinds}
    for _ in range(warmup):
        for _, fn in kinds:
            fn()
    for _ in range(calls):
        for name, fn in kinds:
            started = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - started) * 1000)
    return samples


if __name__ == "__main__":
    main()
