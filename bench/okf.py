"""OKF export and import of one scope at the import bounds, on SQLite.

Builds a scope of `--claims` claims (default: the import bound, 500) with every claim
field set, 3 evidence lines each, and `--nodes` nodes joined in a ring of edges, then
times, `--repeats` times each: the export (the store's reads and the rendering of every
file), the packing of the .tar.gz, its unpacking, and the import into an empty scope
(validation, embedding with the hashing embedder, one commit). Each round checks that
export -> import -> export gives the same bytes. Prints the time per phase, per claim,
and the archive's size.

There is no target for it in issue 16; it shows what one import (one transaction)
costs and where the time goes (YAML, the embedder, the commit).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _common import machine_line, summary, table
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain import okf, okf_archive
from jennah.domain.models import (
    Authority,
    CommitPlan,
    Durability,
    Evidence,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Strength,
)
from jennah.services import okf as okf_service

FORMED = datetime(2026, 8, 14, 19, 2, tzinfo=UTC)


def seed(store: SqliteStore, scope: ScopeRef, claims: int, nodes: int) -> None:
    embedder = HashingEmbedder()
    records = [
        MemoryRecord(
            id=f"clm_{i:05d}", scope=scope, text=f"Claim {i}: the family's rule number {i % 41}",
            summary=f"Rule {i}", about="Family", when_to_use="When it applies",
            type=MemoryType.DIRECTIVE, strength=Strength.HARD, authority=Authority.USER_STATED,
            confidence=0.8, durability=Durability.PASSING, reinforcement_count=i % 4,
            last_reinforced_at=FORMED, valid_until=datetime(2031, 1, 1, tzinfo=UTC),
            applies_to=[f"n{i % max(nodes, 1):04d}"], metadata={"source": "bench"},
            extensions={"bench_index": str(i)},
            embedding=embedder.embed(f"Claim {i}"),
        )
        for i in range(claims)
    ]  # fmt: skip
    evidence = [
        Evidence(memory_id=r.id, ref=f"conv://{scope.scope_id}/s{j}#turn={j}", quote="said so",
                 recorded_at=FORMED)
        for r in records for j in range(3)
    ]  # fmt: skip
    graph_nodes = [GraphNode(node_id=f"n{i:04d}", label=f"N{i}") for i in range(nodes)]
    edges = [
        GraphEdge(edge_id=f"e{i:04d}", source=f"n{i:04d}", relation="NEXT",
                  target=f"n{(i + 1) % nodes:04d}")
        for i in range(nodes)
    ]  # fmt: skip
    store.apply(
        CommitPlan(scope=scope, chunks=records, evidence=evidence, nodes=graph_nodes, edges=edges)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=okf.MAX_IMPORT_CLAIMS)
    parser.add_argument("--nodes", type=int, default=okf.MAX_IMPORT_NODES)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    timings: dict[str, list[float]] = {p: [] for p in ("export", "pack", "unpack", "import")}
    size = 0
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "memory.db")
        source = ScopeRef(enterprise_id="bench", scope_id="source")
        seed(store, source, args.claims, args.nodes)
        for round_ in range(args.repeats):
            started = time.perf_counter()
            files = okf_service.export_files(store, source)
            timings["export"].append(time.perf_counter() - started)
            started = time.perf_counter()
            body = okf_archive.pack(files)
            timings["pack"].append(time.perf_counter() - started)
            size = len(body)
            started = time.perf_counter()
            unpacked = okf_archive.unpack(body)
            timings["unpack"].append(time.perf_counter() - started)
            copy = ScopeRef(enterprise_id="bench", scope_id=f"copy-{round_}")
            started = time.perf_counter()
            okf_service.import_files(unpacked, copy, store, HashingEmbedder())
            timings["import"].append(time.perf_counter() - started)
            assert okf_service.export_files(store, copy) == files, "round trip changed bytes"
        store.close()
    rows = [
        [phase, summary(t)["p50"] * 1000, summary(t)["p50"] * 1e6 / max(args.claims, 1)]
        for phase, t in timings.items()
    ]
    print(machine_line())
    print(f"{args.claims} claims, {3 * args.claims} evidence lines, {args.nodes} nodes and "
          f"edges; archive {size / 1024:.0f} KiB; round trip byte-identical")  # fmt: skip
    print(table(["phase", "p50 ms", "µs per claim"], rows))


if __name__ == "__main__":
    main()
