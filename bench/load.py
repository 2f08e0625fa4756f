"""Concurrent load on `jnh serve`: latency per call type and errors, per HTTP server.

Starts `jnh serve` on a temporary data directory and a free loopback port (once per
server in --servers: waitress, the production server, and werkzeug's development server
it replaced), then runs --clients threads for --seconds, each with its own keep-alive
connection and agent workspace, cycling through: memory:commit of 5 chunks,
memory:query (semantic, top 10), memory:form waiting for the receipt, and memory:form
with "async": true followed by polling GET /v1/operations/{id} until done. The formation
model is `rules` (offline, instant), so forms measure the platform. Prints p50/p95/p99
per call type and the errors (any non-2xx answer or transport failure).
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from _common import WORDS, machine_line, percentile, table
from _serve import Served, jnh_serve

CYCLE = ["commit", "query", "commit", "query", "form (sync)", "query", "form (async)"]
TARGETS = {"query": 30.0, "commit (5 chunks)": 40.0}


@dataclass
class Tally:
    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, ms: float, ok: bool) -> None:
        with self.lock:
            self.samples[kind].append(ms)
            if not ok:
                self.errors[kind] += 1


def main() -> None:
    args = _parse_args()
    print(f"jnh serve under load ({machine_line()}), {args.clients} clients, "
          f"{args.seconds:g} s per server, embedder {args.embedder}\n")  # fmt: skip
    rows: list[list[object]] = []
    for server in args.servers:
        with jnh_serve(server, args.embedder) as served:
            tally = _run(served, args.clients, args.seconds)
        for kind in sorted(tally.samples):
            ms = tally.samples[kind]
            rows.append([server, kind, len(ms), percentile(ms, 50), percentile(ms, 95),
                         percentile(ms, 99), tally.errors.get(kind, 0)])  # fmt: skip
    print(table(["server", "call", "calls", "p50 ms", "p95 ms", "p99 ms", "errors"], rows))
    print("\ntargets (8 clients): " + ", ".join(f"{k} p50 <= {v:g} ms" for k, v in
                                                TARGETS.items()) + ", 0 errors")  # fmt: skip


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per server (default 60)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument(
        "--servers", type=lambda s: s.split(","), default=["waitress", "werkzeug"],
        help="comma-separated JENNAH_HTTP_SERVER values (default waitress,werkzeug)",
    )  # fmt: skip
    parser.add_argument(
        "--embedder", default="minilm", help="JENNAH_EMBEDDER (default minilm; hashing: no model)"
    )
    return parser.parse_args()


def _run(served: Served, clients: int, seconds: float) -> Tally:
    tally = Tally()
    headers = {"Authorization": f"Bearer {served.token}"}
    for i in range(clients):  # every workspace has something to find before the clock starts
        with httpx.Client(base_url=served.base, headers=headers, timeout=60) as http:
            _commit(http, f"bench-{i}", random.Random(i))
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_client, args=(served, headers, i, deadline, tally))
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def _client(
    served: Served, headers: dict[str, str], index: int, deadline: float, tally: Tally
) -> None:
    rng = random.Random(index)
    agent = f"bench-{index}"
    calls: dict[str, Callable[[httpx.Client], tuple[str, bool]]] = {
        "commit": lambda http: ("commit (5 chunks)", _commit(http, agent, rng)),
        "query": lambda http: ("query", _query(http, agent, rng)),
        "form (sync)": lambda http: ("form (sync)", _form(http, agent, rng, run_async=False)),
        "form (async)": lambda http: ("form (async, until done)", _form_async(http, agent, rng)),
    }
    with httpx.Client(base_url=served.base, headers=headers, timeout=60) as http:
        step = index  # clients start at different points of the cycle
        while time.monotonic() < deadline:
            name = CYCLE[step % len(CYCLE)]
            step += 1
            started = time.perf_counter()
            try:
                kind, ok = calls[name](http)
            except httpx.HTTPError:
                kind, ok = name, False
            tally.add(kind, (time.perf_counter() - started) * 1000, ok)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))


def _commit(http: httpx.Client, agent: str, rng: random.Random) -> bool:
    chunks = [{"text": _sentence(rng), "metadata": {"n": str(rng.randrange(10**9))}}
              for _ in range(5)]  # fmt: skip
    return http.post(f"/v1/agents/{agent}/memory:commit", json={"chunks": chunks}).is_success


def _query(http: httpx.Client, agent: str, rng: random.Random) -> bool:
    body = {"semantic": {"queryText": _sentence(rng), "topK": 10}}
    return http.post(f"/v1/agents/{agent}/memory:query", json=body).is_success


def _turns(rng: random.Random) -> list[dict[str, str]]:
    city = rng.choice(["Tokyo", "Lisbon", "Oslo", "Lima", "Accra", "Hanoi"])
    return [
        {"role": "TURN_ROLE_USER", "content": f"I live in {city} and {_sentence(rng)}."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted."},
    ]


def _form(http: httpx.Client, agent: str, rng: random.Random, *, run_async: bool) -> bool:
    body = {"turns": _turns(rng), "async": run_async}
    return http.post(f"/v1/agents/{agent}/memory:form", json=body).is_success


def _form_async(http: httpx.Client, agent: str, rng: random.Random) -> bool:
    submitted = http.post(
        f"/v1/agents/{agent}/memory:form", json={"turns": _turns(rng), "async": True}
    )
    if not submitted.is_success:
        return False
    operation = submitted.json()
    while not operation["done"]:
        time.sleep(0.01)
        polled = http.get(f"/v1/{operation['name']}")
        if not polled.is_success:
            return False
        operation = polled.json()
    return operation["metadata"]["state"] == "SUCCEEDED"


if __name__ == "__main__":
    main()
