"""1,000 formations on the Spanner emulator with fault injection (issue 13): commits
aborted at random by the emulator (--enable_fault_injection) and retried, `apply`
failing with UNAVAILABLE before or after its commit, every task delivered twice by
concurrent workers; then every formation's rows are read back: all there with its
formationKey record, or none of them; none committed twice.

The harness is tests/support/formation_faults.py (tests/integration/
test_formation_fault_injection.py runs 40 formations in CI).

Run: .venv/bin/python bench/formation_faults.py [--formations 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.support.formation_faults import Faults, faulty_spanner, run

from _common import machine_line, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formations", type=int, default=1000)
    parser.add_argument("--before", type=float, default=0.1, help="UNAVAILABLE before commit")
    parser.add_argument("--after", type=float, default=0.1, help="UNAVAILABLE after commit")
    args = parser.parse_args()
    faults = Faults(before_commit=args.before, after_commit=args.after)
    with tempfile.TemporaryDirectory() as workdir, faulty_spanner() as emulator:
        figures = run(emulator, Path(workdir), args.formations, faults)
    print(machine_line())
    rows = [
        ("formations", figures.formations),
        ("succeeded", figures.succeeded),
        ("failed", sum(figures.failed.values())),
        ("formationKey records", figures.committed),
        ("partial formations", figures.partial),
        ("committed twice", figures.committed_twice),
        ("failed yet committed", figures.failed_but_committed),
        ("deliveries", figures.deliveries),
        ("deliveries answered RETRY", figures.retried_deliveries),
        ("transaction attempts aborted by the emulator", figures.aborts_retried),
        ("UNAVAILABLE injected before commit", figures.injected_before),
        ("UNAVAILABLE injected after commit", figures.injected_after),
        ("seconds", figures.seconds),
    ]
    print(table(["figure", "value"], rows))
    for reason, count in sorted(figures.failed.items()):
        print(f"failed {count}: {reason}")
    print("healthy" if figures.healthy else "NOT HEALTHY")


if __name__ == "__main__":
    main()
