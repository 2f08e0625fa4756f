"""Concurrent load on `jnh serve`: latency per call type and errors, per HTTP server.

Starts `jnh serve` on a temporary data directory and a free loopback port (once per
server in --servers: waitress, the production server, and werkzeug's development server
it replaced), then runs --clients threads for --seconds, each with its own keep-alive
connection and agent workspace, cycling through: memory:commit of 5 chunks,
memory:query (semantic, top 10), memory:form waiting for the receipt, and memory:form
with "async": true followed by polling GET /v1/operations/{id} until done. The formation
model is `rules` (offline, instant), so forms measure the platform. Prints p50/p95/p99
per call type and the errors (any non-2xx answer or transport failure).

With --compare TREE (a source tree of another build, e.g. `git archive 1e515fc | tar -x
-C TREE`), each server kind serves both builds at once, this one and TREE's (its
`shared/` on PYTHONPATH, this Python), and the clients load them in turn for --rounds
rounds each, alternating which goes first: on a shared machine only such interleaved
figures compare. It prints both builds' figures and this build's p50 and p95 as a
ratio of TREE's.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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
    builds: list[Path | None] = [None] if args.compare is None else [None, args.compare]
    rounds = 1 if args.compare is None else args.rounds
    print(f"jnh serve under load ({machine_line()}), {args.clients} clients, {rounds} x "
          f"{args.seconds:g} s per server and build, embedder {args.embedder}\n")  # fmt: skip
    rows: list[list[object]] = []
    ratios: list[list[object]] = []
    for server in args.servers:
        tallies = _load(server, builds, args, rounds)
        for build, tally in zip(builds, tallies, strict=True):
            for kind in sorted(tally.samples):
                ms = tally.samples[kind]
                rows.append([server, _name(build), kind, len(ms), percentile(ms, 50),
                             percentile(ms, 95), percentile(ms, 99),
                             tally.errors.get(kind, 0)])  # fmt: skip
        if len(tallies) == 2:
            ratios += _ratios(server, *tallies)
    print(table(["server", "build", "call", "calls", "p50 ms", "p95 ms", "p99 ms", "errors"], rows))
    if ratios:
        print(f"\nthis build / {args.compare}, same rounds:\n")
        print(table(["server", "call", "p50 ratio", "p95 ratio"], ratios))
    print("\ntargets (8 clients): " + ", ".join(f"{k} p50 <= {v:g} ms" for k, v in
                                                TARGETS.items()) + ", 0 errors")  # fmt: skip


def _load(
    server: str, builds: list[Path | None], args: argparse.Namespace, rounds: int
) -> list[Tally]:
    """One tally per build, over `rounds` rounds each; the builds are served together and
    loaded in turn, the first of each round alternating."""
    tallies = [Tally() for _ in builds]
    with contextlib.ExitStack() as stack:
        served = [stack.enter_context(jnh_serve(server, args.embedder, source=b)) for b in builds]
        for round_ in range(rounds):
            order = range(len(builds)) if round_ % 2 == 0 else reversed(range(len(builds)))
            for i in order:
                _run(served[i], args.clients, args.seconds, tallies[i])
    return tallies


def _name(build: Path | None) -> str:
    return "this" if build is None else str(build)


def _ratios(server: str, this: Tally, other: Tally) -> list[list[object]]:
    return [
        [
            server,
            kind,
            f"{_ratio(this, other, kind, 50):.2f}",
            f"{_ratio(this, other, kind, 95):.2f}",
        ]
        for kind in sorted(this.samples)
        if other.samples.get(kind)
    ]


def _ratio(this: Tally, other: Tally, kind: str, pct: float) -> float:
    return percentile(this.samples[kind], pct) / percentile(other.samples[kind], pct)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="per server, or per round with --compare (default 60)",
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument(
        "--servers", type=lambda s: s.split(","), default=["waitress", "werkzeug"],
        help="comma-separated JENNAH_HTTP_SERVER values (default waitress,werkzeug)",
    )  # fmt: skip
    parser.add_argument(
        "--embedder", default="minilm", help="JENNAH_EMBEDDER (default minilm; hashing: no model)"
    )
    parser.add_argument(
        "--compare", type=Path, default=None, metavar="TREE",
        help="also serve the build in source tree TREE, interleaved with this one",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=int, default=4, help="with --compare: rounds per build (default 4)"
    )
    return parser.parse_args()


def _run(served: Served, clients: int, seconds: float, tally: Tally | None = None) -> Tally:
    tally = Tally() if tally is None else tally
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
