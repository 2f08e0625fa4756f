"""Request latency of two builds side by side: the three HTTP latency benchmarks (keyed
recall, memory:search, memory:query HYBRID on LoCoMo) against a `jnh serve` of this
checkout and one of a base build, the same data loaded into both, the timed requests
alternating between them (the order swapped every round), so machine noise falls on both
alike; p50/p95 of each and the ratio new/base. The answers of the two are compared (the
same candidates, the same rankings), and LoCoMo's R@10 per category printed for both.

The base build is a `jnh` executable (--base), e.g. an unpacked older commit run with this
checkout's interpreter:

    git archive 1e515fc | tar -x -C /tmp/s6-base
    printf '#!/bin/sh\\nPYTHONPATH=/tmp/s6-base/shared exec %s -m jennah.cli "$@"\\n' \\
        "$PWD/.venv/bin/python" > /tmp/s6-base/jnh && chmod +x /tmp/s6-base/jnh
    .venv/bin/python bench/latency_ab.py --base /tmp/s6-base/jnh keyed    # ~6 min
    .venv/bin/python bench/latency_ab.py --base /tmp/s6-base/jnh search   # ~5 min
    .venv/bin/python bench/latency_ab.py --base /tmp/s6-base/jnh locomo   # ~6 min

Targets (new column): keyed recall p50 <= 5 ms (issue 18), memory:search p50 <= 10 ms
(issue 17), memory:query HYBRID p50 <= 8 ms and p95 <= 20 ms (issue 15).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keyed as keyed_bench
import locomo as locomo_bench
import search as search_bench
from _common import machine_line, percentile, table
from _serve import DEFAULT_JNH, jnh_serve
from jennah.domain.models import ScopeRef

Samples = dict[str, dict[str, list[float]]]  # build -> request -> ms
BUILDS = ("base", "new")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the base build's jnh")
    parser.add_argument("--new", type=Path, default=DEFAULT_JNH, help="this checkout's jnh")
    parser.add_argument("which", choices=("keyed", "search", "locomo"))
    parser.add_argument("--entries", type=int, default=10_000, help="keyed: entries")
    parser.add_argument("--claims", type=int, default=10_000, help="search: claims")
    parser.add_argument("--calls", type=int, default=300, help="keyed, search: timed rounds")
    parser.add_argument("--data", type=Path, default=locomo_bench.DEFAULT_DATA)
    args = parser.parse_args()
    print(f"{args.which}: base {args.base} vs new {args.new} ({machine_line()})\n")
    run = {"keyed": _keyed, "search": _search, "locomo": _locomo}[args.which]
    samples = run(args, {"base": args.base, "new": args.new})
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    rows = []
    for name in samples["new"]:
        base, new = samples["base"][name], samples["new"][name]
        rows.append([name, percentile(base, 50), percentile(base, 95), percentile(new, 50),
                     percentile(new, 95), percentile(new, 50) / percentile(base, 50)])  # fmt: skip
    print(table(["request", "base p50", "base p95", "new p50", "new p95", "new/base p50"], rows))


@contextlib.contextmanager
def _servers(builds: dict[str, Path], embedder: str) -> Iterator[dict[str, Any]]:
    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(jnh_serve("waitress", embedder, jnh))
               for name, jnh in builds.items()}  # fmt: skip


def _alternate(rounds: int, step: Callable[[str, int], dict[str, float]], warmup: int) -> Samples:
    samples: Samples = {name: defaultdict(list) for name in BUILDS}
    for i in range(warmup + rounds):
        for name in BUILDS if i % 2 == 0 else BUILDS[::-1]:
            for request, ms in step(name, i).items():
                if i >= warmup:
                    samples[name][request].append(ms)
    return samples


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = fn()
    return (time.perf_counter() - started) * 1000, answer


# keyed memory (bench/keyed.py's data and requests)


def _keyed(args: argparse.Namespace, builds: dict[str, Path]) -> Samples:
    base = f"/v1/scopes/{keyed_bench.SCOPE}/keyedMemories"
    with _servers(builds, "hashing") as served:
        state: dict[str, dict[str, Any]] = {}
        for name, server in served.items():
            rng = random.Random(18)
            words = keyed_bench.vocabulary(rng)
            weights = [1.0 / (rank + 1) for rank in range(len(words))]
            client = keyed_bench.Http(server.port, server.token)
            for i in range(args.entries):
                content = keyed_bench.sentence(rng, words, weights, rng.randint(20, 60))
                client.call("PUT", f"{base}/topic-{i}", {"content": content, "expectedVersion": 0})
            for i in range(0, args.entries - 1, 10):
                client.call("POST", f"{base}/topic-{i}:link", {"target": f"topic-{i + 1}"})
            state[name] = {"rng": rng, "words": words, "weights": weights,
                           "versions": dict.fromkeys(range(args.entries), 1)}  # fmt: skip
            print(f"{name}: {args.entries:,} entries loaded", flush=True)
        # fresh connections: the server closes one idle for 30 s while the other loads
        clients = {name: keyed_bench.Http(s.port, s.token) for name, s in served.items()}

        def step(name: str, i: int) -> dict[str, float]:
            s, client = state[name], clients[name]
            rng, words, weights = s["rng"], s["words"], s["weights"]
            key = rng.randrange(args.entries)
            update = {"content": keyed_bench.sentence(rng, words, weights, rng.randint(20, 60)),
                      "expectedVersion": s["versions"][key]}  # fmt: skip
            create = {"content": keyed_bench.sentence(rng, words, weights, rng.randint(20, 60)),
                      "expectedVersion": 0}  # fmt: skip
            request = keyed_bench.sentence(rng, words, weights, rng.randint(6, 12))
            recall = {"request": request, "tokenBudget": 500}
            out = {}
            out["remember (update)"], answer = _timed(
                lambda: client.call("PUT", f"{base}/topic-{key}", update)
            )
            s["versions"][key] = int(answer["version"])
            out["remember (create)"], _ = _timed(
                lambda: client.call("PUT", f"{base}/new-{i}", create)
            )
            out["keyed recall (target <= 5 ms)"], _ = _timed(
                lambda: client.call("POST", f"{base}:recall", recall)
            )
            out["GET /v1/caller"], _ = _timed(lambda: client.call("GET", "/v1/caller"))
            return out

        return _alternate(args.calls, step, warmup=5)


# memory:search (bench/search.py's claims and queries)


def _search(args: argparse.Namespace, builds: dict[str, Path]) -> Samples:
    path = f"/v1/scopes/{search_bench.SCOPE}/memory:"
    with _servers(builds, "minilm") as served:
        auth: dict[str, dict[str, str]] = {}
        for name, server in served.items():
            auth[name] = {"Authorization": f"Bearer {server.token}",
                          "Content-Type": "application/json"}  # fmt: skip
            seeding = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            search_bench._seed(seeding, auth[name], args.claims)
            seeding.close()
            print(f"{name}: {args.claims:,} claims committed", flush=True)
        conns = {name: http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
                 for name, s in served.items()}  # fmt: skip
        texts = search_bench.queries(args.calls + search_bench.WARMUP_ROUNDS)
        answers: dict[str, list[Any]] = defaultdict(list)

        def post(name: str, verb: str, body: Any) -> Any:
            status, answer, _ = search_bench._post(conns[name], path + verb, body, auth[name])
            assert status == 200, answer
            return json.loads(answer)

        def step(name: str, i: int) -> dict[str, float]:
            text = texts[i]
            semantic = {"semantic": {"queryText": text, "topK": 5}}
            out = {}
            out["memory:search (target <= 10 ms)"], found = _timed(
                lambda: post(name, "search", {"query": text})
            )
            out["memory:query HYBRID topK 5"], queried = _timed(
                lambda: post(name, "query", semantic)
            )
            out["GET /v1/caller"], _ = _timed(lambda: _get_caller(conns[name], auth[name]))
            answers[name].append(([c["ref"] for c in found["candidates"]],
                                  [r["id"] for r in queried["semantic"]["results"]]))  # fmt: skip
            return out

        samples = _alternate(args.calls, step, warmup=search_bench.WARMUP_ROUNDS)
    differing = sum(a != b for a, b in zip(answers["base"], answers["new"], strict=True))
    print(f"\nanswers differing between base and new: {differing} of {len(answers['new'])}")
    return samples


def _get_caller(conn: http.client.HTTPConnection, auth: dict[str, str]) -> None:
    conn.request("GET", "/v1/caller", headers=auth)
    response = conn.getresponse()
    response.read()
    assert response.status == 200


# memory:query HYBRID on LoCoMo (bench/locomo.py --http's commits and questions)


def _locomo(args: argparse.Namespace, builds: dict[str, Path]) -> Samples:
    import httpx

    conversations = locomo_bench.load(args.data)
    scores = {name: locomo_bench.Scores() for name in BUILDS}
    rankings: dict[str, list[list[str]]] = defaultdict(list)
    with _servers(builds, "minilm") as served, contextlib.ExitStack() as stack:
        clients = {}
        for name, server in served.items():
            client = stack.enter_context(httpx.Client(
                base_url=server.base, headers={"Authorization": f"Bearer {server.token}"},
                timeout=120))  # fmt: skip
            for conv in conversations:
                path = f"/v1/scopes/locomo-{conv.sample_id}/memory:commit"
                placeholder = ScopeRef(enterprise_id="-", scope_id="-")
                for command in locomo_bench._commands(placeholder, conv.turns):
                    body = command.model_dump(mode="json", include={"chunks"})
                    chunks = [locomo_bench._wire_chunk(c) for c in body["chunks"]]
                    client.post(path, json={"chunks": chunks}).raise_for_status()
            clients[name] = client
            print(f"{name}: {len(conversations)} conversations committed", flush=True)
        asked = [(conv, question) for conv in conversations for question in conv.questions]

        def step(name: str, i: int) -> dict[str, float]:
            conv, question = asked[i]
            path = f"/v1/scopes/locomo-{conv.sample_id}/memory:query"
            semantic = {"queryText": question.text, "topK": locomo_bench.TOP_K, "mode": "HYBRID"}
            ms, reply = _timed(lambda: clients[name].post(path, json={"semantic": semantic}))
            reply.raise_for_status()
            ranked = [r["metadata"].get("dia_id", "") for r in reply.json()["semantic"]["results"]]
            scores[name].add(question.category, question.evidence, ranked)
            rankings[name].append(ranked)
            return {"memory:query HYBRID topK 10 (target p50 <= 8, p95 <= 20 ms)": ms}

        samples = _alternate(len(asked), step, warmup=0)
    differing = sum(a != b for a, b in zip(rankings["base"], rankings["new"], strict=True))
    print(f"\nrankings differing between base and new: {differing} of {len(rankings['new'])}")
    categories = list(locomo_bench.CATEGORIES)
    for name in BUILDS:
        per = ", ".join(f"{locomo_bench.CATEGORIES[c]} {scores[name].mean_recall([c], 10):.3f}"
                        for c in categories)  # fmt: skip
        print(f"{name}: R@10 {scores[name].mean_recall(categories, 10):.3f} ({per})")
    return samples


if __name__ == "__main__":
    main()
