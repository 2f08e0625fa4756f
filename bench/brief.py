"""The brief: compile time for a scope of 5,000 claims on SQLite, and GET .../memory/brief
over HTTP on `jnh serve` (the 304 when unchanged, the 200, and GET /v1/caller beside them).

Compile (in process, on a fresh SQLite store in a temporary directory): a scope of
--claims claims (every type, authority and sensitivity, 1 in 10 pinned, 1 in 3 with a
`about` among 200 subjects, 1 in 8 with a validUntil, the newest 40 formed by one
formation with evidence lines, 30 reinforced by a later one), committed with
CommitPlans of 500. Timed, each --repeats times after warm-up calls:
- `read`: `services.brief.active_claims`, every active claim's ClaimState through
  `store.list_claim_states` (one read; on SQLite from the store's claim cache);
- `compile both`: `compile_briefs(store, scope, claims)` on claims already read: the
  last conversation's evidence read, then both variants compiled;
- `compile both, cold token counts`: the same with the per-line token counts forgotten
  first (the first compile after a start);
- `read + compile both` (the figure the target is about: what the dream pass spends on
  the brief) and `read + compile full` (one variant);
- `read + compile both, one claim changed`: the same after a commit that reinforced one
  claim (untimed; the claim cache is updated in place by the commit), as after a write;
- `read + compile both, nothing shown changed`: the same claims again, answered by the
  compile's memory of its last results (`domain.brief._Compiled`). Every other row
  forgets those first, so it measures a real compile.
Wall-clock figures, and the CPU time of this process (steadier on a shared machine).

HTTP (--requests per kind): the same scope is written to the data directory of a `jnh
serve` before it starts, with both briefs stored as the dream pass stores them, then one
keep-alive connection sends, round-robin: GET /v1/caller (a trivial authenticated
route, the baseline), GET .../memory/brief (200, about 8 KB) and the same GET with
If-None-Match naming its ETag (304, no body). Client wall time per request.

Targets (issue 16): compile of 5,000 claims p50 <= 50 ms; the 304 p50 <= 3 ms; at most
2,000 tokens.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from _common import WORDS, machine_line, percentile, table, unit_vectors
from _serve import DEFAULT_JNH, _stop, _wait_ready, free_port
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain import brief as brief_domain
from jennah.domain import rules
from jennah.domain.access import LOCAL_ENTERPRISE_ID
from jennah.domain.brief import BRIEF_TOKEN_LIMIT
from jennah.domain.claim_state import ClaimState
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Strength,
)
from jennah.services.brief import active_claims, compile_briefs

SCOPE = ScopeRef(enterprise_id=LOCAL_ENTERPRISE_ID, scope_id="bench.brief")
BRIEF_PATH = f"/v1/agents/{SCOPE.scope_id}/memory/brief"
TARGET_COMPILE_MS = 50.0
TARGET_304_MS = 3.0
NOW = datetime.now(UTC)


def main() -> None:
    args = _parse_args()
    load = os.getloadavg()[0]
    print(f"the brief: compile and serve ({machine_line()}, load average {load:.1f})\n")
    with tempfile.TemporaryDirectory(prefix="jennah-bench-brief-") as tmp:
        data_dir = Path(tmp)
        store = SqliteStore(data_dir / "memory.db")
        started = time.perf_counter()
        _seed(store, args.claims)
        print(f"seeded {args.claims:,} claims in {time.perf_counter() - started:.1f} s\n")
        rows, tokens = _compile_rows(store, args.repeats)
        headers = ["compile, SQLite", "p50 ms", "p95 ms", "mean ms", "CPU p50 ms", "target p50"]
        print(table(headers, rows))
        print(f"\ntokens: full {tokens[0]:,}, shared {tokens[1]:,} (limit {BRIEF_TOKEN_LIMIT:,})")
        store.apply(CommitPlan(scope=SCOPE, briefs=compile_briefs(store, SCOPE, _all(store))))
        store.close()
        if args.requests:
            print()
            print(table(["GET over HTTP", "p50 ms", "p95 ms", "mean ms", "target p50"],
                        _http_rows(data_dir, args)))  # fmt: skip


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=5000, help="claims in the scope")
    parser.add_argument("--repeats", type=int, default=40, help="timed compiles per row")
    parser.add_argument("--requests", type=int, default=400, help="HTTP requests per kind")
    parser.add_argument("--server", default="waitress", help="JENNAH_HTTP_SERVER of jnh serve")
    return parser.parse_args()


# the scope


def _claim(index: int, rng: random.Random, vector: Any) -> MemoryRecord:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 20)))
    text = f"{words.capitalize()} (claim {index})."
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=SCOPE,
        content_hash=rules.content_hash(text),
        text=text,
        summary=text[:120],
        about=f"subject {rng.randrange(200)}" if index % 3 == 0 else "",
        type=list(MemoryType)[index % 6],
        strength=Strength.HARD if index % 7 == 0 else Strength.SOFT,
        pin=index % 10 == 0,
        authority=list(Authority)[index % 4],
        sensitivity=Sensitivity.NORMAL if index % 9 else list(Sensitivity)[1 + index % 3],
        valid_until=NOW + timedelta(days=1 + index % 30) if index % 8 == 0 else None,
        embedding=list(map(float, vector)),
    )


def _seed(store: SqliteStore, count: int) -> None:
    rng = random.Random(16)
    vectors = unit_vectors(np.random.default_rng(16), count)
    claims = [_claim(i, rng, vectors[i]) for i in range(count)]
    formed, step = claims[-40:], "frm_" + "1" * 32
    for claim in formed:
        claim.metadata = {SOURCE_STEP: step}
    registration = ScopeRecord(scope=SCOPE, kind="agent")
    for start in range(0, count, 500):
        store.apply(CommitPlan(scope=SCOPE, registration=registration,
                               chunks=claims[start : start + 500]))  # fmt: skip
    store.apply(CommitPlan(scope=SCOPE, evidence=[_line(c.id, step, NOW) for c in formed]))
    again, later = "frm_" + "2" * 32, NOW + timedelta(minutes=5)
    reinforced = store.get_chunks(SCOPE, sorted(c.id for c in claims[:30]))
    store.apply(
        CommitPlan(
            scope=SCOPE,
            claim_updates=[
                ClaimUpdate(
                    memory_id=c.id,
                    expected_revision=c.revision,
                    reinforcement_count=1,
                    last_reinforced_at=later,
                )
                for c in reinforced
            ],
            evidence=[_line(c.id, again, later) for c in reinforced],
        )
    )


def _line(memory_id: str, step: str, at: datetime) -> Evidence:
    ref = f"conv://{SCOPE.scope_id}/{step}#turn=1-2"
    return Evidence(memory_id=memory_id, ref=ref, quote="a quote", recorded_at=at)


def _all(store: SqliteStore) -> list[ClaimState]:
    return active_claims(store, SCOPE)


def _reinforce_one(store: SqliteStore) -> None:
    """Reinforce the first claim once more (a write that changes a claim the brief reads)."""
    (claim,) = store.get_chunks(SCOPE, [_all(store)[0].id])
    update = ClaimUpdate(
        memory_id=claim.id,
        expected_revision=claim.revision,
        reinforcement_count=claim.reinforcement_count + 1,
    )
    store.apply(CommitPlan(scope=SCOPE, claim_updates=[update]))


# compile


def _compile_rows(store: SqliteStore, repeats: int) -> tuple[list[list[object]], tuple[int, int]]:
    claims = _all(store)
    kinds: dict[str, tuple[Callable[[], Any], str]] = {
        "read (list_claim_states, active)": (lambda: _all(store), ""),
        "compile both (claims read)": (lambda: compile_briefs(store, SCOPE, claims), ""),
        "compile both, cold token counts": (lambda: _cold(store, claims), ""),
        "read + compile both": (
            lambda: compile_briefs(store, SCOPE, _all(store)),
            f"<= {TARGET_COMPILE_MS:g} ms",
        ),
        "read + compile full": (
            lambda: compile_briefs(store, SCOPE, _all(store), variants=(BriefVariant.FULL,)),
            "",
        ),
        "read + compile both, one claim changed": (
            lambda: compile_briefs(store, SCOPE, _all(store)),
            "",
        ),
        "read + compile both, nothing shown changed": (
            lambda: compile_briefs(store, SCOPE, _all(store)),
            "",
        ),
    }
    rows: list[list[object]] = []
    for name, (fn, target) in kinds.items():
        setup: Callable[[], Any] | None = brief_domain._COMPILED.clear  # a real compile
        if "one claim changed" in name:
            setup = lambda: _reinforce_one(store)  # noqa: E731 (a changed claim: never remembered)
        elif "nothing shown changed" in name:
            setup = None
        wall, cpu = _time_both(fn, repeats, setup)
        rows.append([name, *_figures(wall), percentile(cpu, 50), target])
    full, shared = compile_briefs(store, SCOPE, claims)
    return rows, (full.token_count, shared.token_count)


def _cold(store: SqliteStore, claims: list[ClaimState]) -> Any:
    """A compile that counts every line's tokens again (as after a restart)."""
    brief_domain._COUNTED.clear()
    return compile_briefs(store, SCOPE, claims)


def _time_both(
    fn: Callable[[], Any], repeats: int, setup: Callable[[], Any] | None = None
) -> tuple[list[float], list[float]]:
    """Wall and CPU (this process) milliseconds per call, after three untimed calls;
    `setup`, when given, runs untimed before each call."""
    for _ in range(3):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        if setup is not None:
            setup()
        started, used = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - used) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    return wall, cpu


def _figures(samples: list[float]) -> list[float]:
    return [percentile(samples, 50), percentile(samples, 95), sum(samples) / len(samples)]


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


def _time_requests(port: int, token: str, count: int) -> list[list[object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    auth = {"Authorization": f"Bearer {token}"}
    status, etag = _get(connection, BRIEF_PATH, auth)
    assert status == 200, status
    kinds = {
        "GET /v1/caller (baseline)": ("/v1/caller", auth, 200),
        "GET .../memory/brief (200)": (BRIEF_PATH, auth, 200),
        "GET .../memory/brief, If-None-Match (304)": (
            BRIEF_PATH, auth | {"If-None-Match": etag}, 304,
        ),
    }  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    for round_ in range(count + 20):
        for name, (path, headers, expected) in kinds.items():
            started = time.perf_counter()
            status, _ = _get(connection, path, headers)
            elapsed = (time.perf_counter() - started) * 1000
            assert status == expected, (name, status)
            if round_ >= 20:  # warm-up rounds untimed
                samples[name].append(elapsed)
    connection.close()
    targets = {name: f"<= {TARGET_304_MS:g} ms" if "304" in name else "" for name in kinds}
    return [[name, *_figures(s), targets[name]] for name, s in samples.items()]


def _get(connection: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> Any:
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status, response.getheader("ETag")


if __name__ == "__main__":
    main()
