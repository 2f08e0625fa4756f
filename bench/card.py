"""The memory card over HTTP: GET /v1/agents/{id}/memories on `jnh serve` for a scope of
10,000 claims on SQLite, beside GET /v1/caller and memory:inspect in the same run.

The scope (written to the data directory of a `jnh serve` before it starts, with
CommitPlans of 100, so claims carry 100 distinct commit times): --claims claims of every
type and sensitivity, 1 in 10 dormant, 1 in 20 retracted, 1 in 4 applying to one of 50
nodes. Then one keep-alive connection sends, round-robin, --requests of each (after 20
untimed rounds):
- GET /v1/caller: a trivial authenticated route (the baseline);
- GET .../memory:inspect?pageSize=20: the existing page of a scope's chunks (baseline);
- GET .../memories?pageSize=20: the card's first page (the target);
- GET .../memories: the card's first page at the default size (50);
- GET .../memories?pageSize=20&pageToken=…: the 100th page (a deep page: keyset paging);
- GET .../memories?pageSize=20&filter=status = "active" AND type = "directive";
- GET .../memories?pageSize=20&filter=appliesTo = "node-8" (a node 1 in 100 claims name);
- GET .../memories?pageSize=20&filter=appliesTo = "node-7" (a node no claim names).
Client wall time per request; the ratio is to GET /v1/caller's p50 of the same run.
Target (issue 17): the card's page p50 <= 5 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from _common import WORDS, machine_line, percentile, table, unit_vectors
from _serve import DEFAULT_JNH, _stop, _wait_ready, free_port
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain import rules
from jennah.domain.access import LOCAL_ENTERPRISE_ID
from jennah.domain.models import (
    CommitPlan,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
)

SCOPE = ScopeRef(enterprise_id=LOCAL_ENTERPRISE_ID, scope_id="bench.card")
BASE = f"/v1/agents/{SCOPE.scope_id}"
TARGET_MS = 5.0
WARM_UP = 20


def main() -> None:
    args = _parse_args()
    load = os.getloadavg()[0]
    print(f"the memory card over HTTP ({machine_line()}, load average {load:.1f})\n")
    with tempfile.TemporaryDirectory(prefix="jennah-bench-card-") as tmp:
        data_dir = Path(tmp)
        store = SqliteStore(data_dir / "memory.db")
        started = time.perf_counter()
        _seed(store, args.claims)
        store.close()
        print(f"seeded {args.claims:,} claims in {time.perf_counter() - started:.1f} s\n")
        headers = ["GET over HTTP", "p50 ms", "p95 ms", "mean ms", "p50 / caller", "target p50"]
        print(table(headers, _http_rows(data_dir, args)))


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10_000, help="claims in the scope")
    parser.add_argument("--requests", type=int, default=400, help="HTTP requests per kind")
    parser.add_argument("--server", default="waitress", help="JENNAH_HTTP_SERVER of jnh serve")
    return parser.parse_args()


# the scope


def _claim(index: int, rng: random.Random, vector: Any) -> MemoryRecord:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 20)))
    text = f"{words.capitalize()} (claim {index})."
    status = Status.ACTIVE
    if index % 10 == 0:
        status = Status.DORMANT
    elif index % 20 == 5:
        status = Status.RETRACTED
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=SCOPE,
        content_hash=rules.content_hash(text),
        text=text,
        summary=text[:120],
        about=f"subject {rng.randrange(200)}" if index % 3 == 0 else "",
        type=list(MemoryType)[index % 6],
        sensitivity=Sensitivity.NORMAL if index % 9 else list(Sensitivity)[1 + index % 3],
        status=status,
        applies_to=[f"node-{index % 50}"] if index % 4 == 0 else [],
        embedding=list(map(float, vector)),
    )


def _seed(store: SqliteStore, count: int) -> None:
    rng = random.Random(17)
    vectors = unit_vectors(np.random.default_rng(17), count)
    claims = [_claim(i, rng, vectors[i]) for i in range(count)]
    registration = ScopeRecord(scope=SCOPE, kind="agent")
    for start in range(0, count, 100):
        store.apply(CommitPlan(scope=SCOPE, registration=registration,
                               chunks=claims[start : start + 100]))  # fmt: skip


# HTTP


def _http_rows(data_dir: Path, args: argparse.Namespace) -> list[list[object]]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JENNAH_")},
        "JENNAH_EMBEDDER": "hashing",
        "JENNAH_HTTP_SERVER": args.server,
        "JENNAH_FORMATION_MODEL": "rules",
    }
    port = free_port()
    process = subprocess.Popen(
        [str(DEFAULT_JNH), "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_ready(process, f"http://127.0.0.1:{port}")
        token = subprocess.run(
            [str(DEFAULT_JNH), "auth", "print-token", "--data-dir", str(data_dir)],
            env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        return _time_requests(port, token, args.requests)
    finally:
        _stop(process)


def _card(**params: str) -> str:
    return f"{BASE}/memories?{urlencode(params)}" if params else f"{BASE}/memories"


def _deep_token(connection: http.client.HTTPConnection, auth: dict[str, str]) -> str:
    """The pageToken of the card's 100th page of 20 (or its last, in a smaller scope)."""
    token = ""
    for _ in range(99):
        params = {"pageSize": "20"} | ({"pageToken": token} if token else {})
        status, body = _get(connection, _card(**params), auth)
        assert status == 200, status
        following = json.loads(body).get("nextPageToken")
        if not following:
            break
        token = following
    return token


def _time_requests(port: int, token: str, count: int) -> list[list[object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    auth = {"Authorization": f"Bearer {token}"}
    deep = _deep_token(connection, auth)
    kinds = {
        "GET /v1/caller (baseline)": "/v1/caller",
        "GET .../memory:inspect?pageSize=20 (baseline)": f"{BASE}/memory:inspect?pageSize=20",
        "GET .../memories?pageSize=20": _card(pageSize="20"),
        "GET .../memories (default page, 50)": _card(),
        "GET .../memories, 100th page of 20": _card(pageSize="20", pageToken=deep),
        "GET .../memories, status and type filter": _card(
            pageSize="20", filter='status = "active" AND type = "directive"'
        ),
        "GET .../memories, appliesTo filter": _card(pageSize="20", filter='appliesTo = "node-8"'),
        "GET .../memories, appliesTo no claim": _card(pageSize="20", filter='appliesTo = "node-7"'),
    }
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    for round_ in range(count + WARM_UP):
        for name, path in kinds.items():
            started = time.perf_counter()
            status, _ = _get(connection, path, auth)
            elapsed = (time.perf_counter() - started) * 1000
            assert status == 200, (name, status)
            if round_ >= WARM_UP:
                samples[name].append(elapsed)
    connection.close()
    baseline = percentile(samples["GET /v1/caller (baseline)"], 50)
    rows: list[list[object]] = []
    for name, values in samples.items():
        p50 = percentile(values, 50)
        target = f"<= {TARGET_MS:g} ms" if name == "GET .../memories?pageSize=20" else ""
        rows.append([name, p50, percentile(values, 95), sum(values) / len(values),
                     f"{p50 / baseline:.2f}", target])  # fmt: skip
    return rows


def _get(connection: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> Any:
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


if __name__ == "__main__":
    main()
