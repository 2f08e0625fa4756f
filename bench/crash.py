"""kill -9 of `jnh serve` during concurrent commits and asynchronous formations, then a
restart, for ten rounds (issue 13: 0 acknowledged writes lost in 10 rounds).

Each round (tests/support/serve_crash.py, which tests/e2e/test_serve_crash.py runs for 3
rounds in CI): 3 threads commit 3 chunks at a time while 10 asynchronous formations are
submitted, with the model (the Vertex AI stand-in answering from the rules model)
answering only once the round has killed the server (or after --delay seconds), so 4
formations are in a model call and the others queued when the server is killed; then a
restart on the same data directory, and what the file holds is checked: every
acknowledged commit present, none half there; every acknowledged formation done,
committed once; no operation unfinished, no reservation held; a burst of 10 formations
admitted.

Run: .venv/bin/python bench/crash.py [--rounds 10] [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.support.serve_crash import CrashRig, RoundFigures

from _common import machine_line, table

COLUMNS = (
    ("round", "round"),
    ("commits acked", "commits_acknowledged"),
    ("lost", "commits_lost"),
    ("partial", "commits_partial"),
    ("forms acked", "formations_acknowledged"),
    ("running at kill", "running_at_kill"),
    ("queued at kill", "queued_at_kill"),
    ("stranded", "stranded"),
    ("failed", "failed"),
    ("twice", "duplicated"),
    ("unfinished", "unfinished_in_file"),
    ("reservations", "reservations_left"),
    ("burst admitted", "burst_admitted"),
    ("burst 429", "burst_refused"),
    ("restart s", "restart_seconds"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--delay",
        type=float,
        default=None,
        help="seconds per model call (default: until the round kills the server)",
    )
    args = parser.parse_args()
    rounds: list[RoundFigures] = []
    with tempfile.TemporaryDirectory() as workdir, CrashRig(Path(workdir), args.delay) as rig:
        for n in range(1, args.rounds + 1):
            rounds.append(rig.round(n))
            print(f"round {n}: {'ok' if rounds[-1].healthy else 'NOT OK'}", flush=True)
    print(machine_line())
    print(table([h for h, _ in COLUMNS], [[getattr(r, f) for _, f in COLUMNS] for r in rounds]))
    acked = sum(r.commits_acknowledged for r in rounds)
    lost = sum(r.commits_lost for r in rounds)
    forms = sum(r.formations_acknowledged for r in rounds)
    stranded = sum(r.stranded for r in rounds)
    print(f"\n{len(rounds)} rounds: {lost} of {acked} acknowledged commits lost; "
          f"{stranded} of {forms} acknowledged formations stranded; "
          f"{sum(not r.healthy for r in rounds)} unhealthy rounds")  # fmt: skip
    for r in rounds:
        for error in r.errors:
            print(f"round {r.round}: {error}")


if __name__ == "__main__":
    main()
