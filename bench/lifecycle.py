"""The nightly lifecycle pass over many scopes on SQLite, and its resumption after a kill.

Seeds a fresh SQLite store (a temporary directory) with `--scopes` scopes of `--claims`
claims each, spread over 10 enterprises and several time zones. In every scope, by
construction at the pass's `now`: 10 % of the claims are due to expire (their validUntil
is the start of the pass's local day or earlier), 5 % to be promoted (passing, 3
reinforcements), 5 % to decay (inferred, last reinforced 200 days before), and the rest
are due nothing; some of those sit right at a threshold (validUntil one second after
`now`, 2 reinforcements, 179 days) and must NOT change. Embeddings are left out: the pass
never reads them.

The store file is then copied, and the nightly walk (`jennah.services.lifecycle.nightly`,
the `lifecycle` function's work, its cursor in the same file) runs in a subprocess:

1. on the first copy, uninterrupted: the figure the target is about (walk time, measured
   inside the subprocess, and wall time with the interpreter's start);
2. on the second copy, killed with SIGKILL once the cursor has passed half the scopes (the
   cursor is polled, read-only), then run again to the end: both runs' times.

Then both copies are checked: every due transition happened exactly once (one change-log
line per due claim, none for any other, each claim in its expected state), and the killed
and resumed walk ends in the same claim states as the uninterrupted one.

    .venv/bin/python bench/lifecycle.py                       # 1,000 scopes x 100 claims
    .venv/bin/python bench/lifecycle.py --scopes 100 --claims 50   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine_line, table  # noqa: E402

from jennah.domain import lifecycle as rules  # noqa: E402
from jennah.domain.models import (  # noqa: E402
    Authority,
    CommitPlan,
    Durability,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Status,
)

NOW = datetime(2031, 3, 29, 3, 0, tzinfo=UTC)  # 03:00 UTC, the nightly schedule
ZONES = ("UTC", "Europe/Lisbon", "America/New_York", "Asia/Tokyo", "Atlantic/Azores",
         "America/Los_Angeles", "Australia/Sydney")  # fmt: skip
ENTERPRISES = 10
PLAN_SIZE = 500  # claims per seeding CommitPlan
TARGET_SECONDS = 60.0


def scope_refs(scopes: int) -> list[ScopeRef]:
    return [
        ScopeRef(enterprise_id=f"ent{i % ENTERPRISES:02d}", scope_id=f"family-{i:05d}")
        for i in range(scopes)
    ]


def claims_of(
    scope: ScopeRef, zone_name: str, count: int
) -> tuple[list[MemoryRecord], dict[str, str]]:
    """The scope's claims and the transition due for each due one (memory id -> change)."""
    zone = rules.scope_zone(zone_name)
    day_start = rules.start_of_local_day(rules.local_day(NOW, zone), zone)
    due: dict[str, str] = {}
    records = []
    for i in range(count):
        memory_id = f"chk_{scope.scope_id}_{i:04d}"
        fields: dict[str, Any] = {"authority": Authority.USER_STATED}
        share = i % 20
        if share in (0, 1):  # 10 %: expire (valid until today's local start, or earlier)
            fields["valid_until"] = day_start - timedelta(days=i % 3)
            due[memory_id] = "expired"
        elif share == 2:  # 5 %: promote
            fields.update(durability=Durability.PASSING, reinforcement_count=3)
            due[memory_id] = "promoted"
        elif share == 3:  # 5 %: decay
            fields.update(
                authority=Authority.INFERRED, last_reinforced_at=NOW - timedelta(days=200)
            )
            due[memory_id] = "decayed"
        elif share == 4:  # at the thresholds, not due
            fields.update(valid_until=NOW + timedelta(seconds=1), durability=Durability.PASSING,
                          reinforcement_count=2)  # fmt: skip
        elif share == 5:
            fields.update(
                authority=Authority.INFERRED, last_reinforced_at=NOW - timedelta(days=178)
            )
        kind = (MemoryType.IDENTITY, MemoryType.DIRECTIVE, MemoryType.PREFERENCE, MemoryType.FACT)[
            i % 4
        ]
        records.append(
            MemoryRecord(
                id=memory_id,
                scope=scope,
                text=f"claim {i} of {scope.scope_id}",
                summary=f"claim {i}",
                type=kind,
                **fields,
            )
        )
    return records, due


def seed(path: Path, scopes: int, claims: int) -> dict[tuple[str, str, str], str]:
    """Write every scope and its claims; the due transitions by (enterprise, scope, id)."""
    from jennah.adapters.sqlite.store import SqliteStore

    store = SqliteStore(path)
    due: dict[tuple[str, str, str], str] = {}
    try:
        for n, scope in enumerate(scope_refs(scopes)):
            zone = ZONES[n % len(ZONES)]
            records, scope_due = claims_of(scope, zone, claims)
            registration = ScopeRecord(scope=scope, kind="agent")
            for start in range(0, len(records), PLAN_SIZE):
                store.apply(CommitPlan(scope=scope, registration=registration,
                                       chunks=records[start : start + PLAN_SIZE]))  # fmt: skip
            if zone != "UTC":
                store.set_time_zone(scope, zone)
            due.update({(scope.enterprise_id, scope.scope_id, k): v for k, v in scope_due.items()})
    finally:
        store.close()
    return due


def walk(path: Path) -> None:
    """The subprocess: one nightly run at NOW on the store file; prints its report."""
    from jennah.adapters.sqlite.cursors import SqliteCursorStore
    from jennah.adapters.sqlite.store import SqliteStore
    from jennah.services import lifecycle

    store, cursors = SqliteStore(path), SqliteCursorStore(path)
    started, cpu = time.perf_counter(), time.process_time()
    report = lifecycle.nightly(store, cursors, NOW)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({
        "seconds": seconds, "cpu": cpu, "scopes": report.scopes, "expired": report.expired,
        "promoted": report.promoted, "decayed": report.decayed, "finished": report.finished,
        "resumed": report.resumed_after is not None, "failed": len(report.failed),
    }))  # fmt: skip


def run_walk(path: Path) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--walk", str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def cursor_position(path: Path) -> int | None:
    """How many scopes the walk has finished (its cursor, read-only), or None."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute(
                "SELECT cursor FROM walk_cursors WHERE name = 'lifecycle'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError:  # the table is not created yet
        return None
    if row is None:
        return None
    after = json.loads(row[0])["after"]
    return None if after is None else int(after["scope_id"].split("-")[1])


def killed_walk(path: Path, scopes: int) -> tuple[float, int]:
    """Start the walk, SIGKILL it once its cursor passed half the scopes; seconds and where."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, __file__, "--walk", str(path)],
                             stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        while child.poll() is None:
            position = cursor_position(path)
            # scope ids are walked by (enterprise, scope): count finished ones by position
            if position is not None and _finished(position, scopes) >= scopes // 2:
                child.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)  # polling a file another process writes: nothing to wait on
    finally:
        child.wait()
    if child.returncode != -signal.SIGKILL:
        raise SystemExit(f"the walk ended before it was killed (exit {child.returncode})")
    seconds = time.perf_counter() - started
    stopped = cursor_position(path)  # where the killed walk's cursor really stands
    assert stopped is not None
    return seconds, _finished(stopped, scopes)


def _finished(scope_number: int, scopes: int) -> int:
    """Scopes walked up to and including family-<scope_number> (walk order: enterprise, scope)."""
    order = sorted(scope_refs(scopes), key=lambda s: (s.enterprise_id, s.scope_id))
    index = {int(s.scope_id.split("-")[1]): i for i, s in enumerate(order)}
    return index[scope_number] + 1


def check(
    path: Path, scopes: int, due: dict[tuple[str, str, str], str]
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """Every due transition exactly once and nothing else; the claims' final states."""
    from jennah.adapters.sqlite.store import SqliteStore

    store = SqliteStore(path)
    logged: dict[tuple[str, str, str], list[str]] = {}
    states: dict[tuple[str, str, str], tuple[str, str]] = {}
    try:
        for scope in scope_refs(scopes):
            for entry in store.list_change_log(scope, 10 * len(due) + 10):
                key = (scope.enterprise_id, scope.scope_id, entry.memory_id)
                logged.setdefault(key, []).append(entry.change)
            for record in store.list_claims(scope, None, None, 1_000_000):
                key = (scope.enterprise_id, scope.scope_id, record.id)
                states[key] = (record.status.value, record.durability.value)
    finally:
        store.close()
    twice = {k: v for k, v in logged.items() if len(v) != 1}
    assert not twice, (
        f"{len(twice)} claims changed more than once, e.g. {next(iter(twice.items()))}"
    )
    assert {k: v[0] for k, v in logged.items()} == due, "the change log differs from what was due"
    expected = {"expired": (Status.EXPIRED, None), "decayed": (Status.DORMANT, None),
                "promoted": (Status.ACTIVE, Durability.DURABLE)}  # fmt: skip
    for key, change in due.items():
        status, durability = expected[change]
        assert states[key][0] == status.value, (key, states[key])
        assert durability is None or states[key][1] == durability.value, (key, states[key])
    unchanged = [k for k in states if k not in due and states[k][0] != Status.ACTIVE.value]
    assert not unchanged, f"{len(unchanged)} claims changed that were due nothing"
    return states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scopes", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=100, help="claims per scope")
    parser.add_argument("--walk", type=Path, help=argparse.SUPPRESS)  # the subprocess
    args = parser.parse_args()
    if args.walk is not None:
        walk(args.walk)
        return
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="jennah-lifecycle-") as tmp:
        whole, killed = Path(tmp) / "whole" / "memory.db", Path(tmp) / "killed" / "memory.db"
        whole.parent.mkdir()
        killed.parent.mkdir()
        started = time.perf_counter()
        due = seed(whole, args.scopes, args.claims)
        seeded = time.perf_counter() - started
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{whole}{suffix}").exists():
                shutil.copy(f"{whole}{suffix}", f"{killed}{suffix}")
        print(
            f"seeded {args.scopes} scopes x {args.claims} claims ({len(due)} due) in {seeded:.1f} s"
        )

        report, wall = run_walk(whole)
        states = check(whole, args.scopes, due)
        kill_seconds, at = killed_walk(killed, args.scopes)
        resumed, resumed_wall = run_walk(killed)
        assert resumed["resumed"] and resumed["finished"], resumed
        assert resumed["scopes"] == args.scopes - at, (resumed["scopes"], at)
        assert check(killed, args.scopes, due) == states, "the resumed walk ended elsewhere"

    rows = [
        ["uninterrupted walk", args.scopes, report["scopes"], f"{report['seconds']:.1f}",
         f"{report['cpu']:.1f}", f"{wall:.1f}", report["expired"], report["promoted"],
         report["decayed"]],
        ["killed walk (SIGKILL)", f"{at} done", "-", "-", "-", f"{kill_seconds:.1f}", "-", "-",
         "-"],
        ["resumed walk", args.scopes - at, resumed["scopes"], f"{resumed['seconds']:.1f}",
         f"{resumed['cpu']:.1f}", f"{resumed_wall:.1f}", resumed["expired"],
         resumed["promoted"], resumed["decayed"]],
    ]  # fmt: skip
    print(table(["run", "scopes to do", "scopes walked", "walk s", "walk CPU s", "wall s",
                 "expired", "promoted", "decayed"], rows))  # fmt: skip
    verdict = "met" if report["seconds"] <= TARGET_SECONDS else "MISSED"
    print(f"{args.scopes * args.claims} claims: walk {report['seconds']:.1f} s, "
          f"{report['cpu']:.1f} s of CPU (target <= {TARGET_SECONDS:.0f} s: {verdict}); every "
          "due transition exactly once in both; the resumed walk redid no finished scope and "
          "skipped none")  # fmt: skip


if __name__ == "__main__":
    main()
