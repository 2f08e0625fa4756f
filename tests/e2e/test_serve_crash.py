"""kill -9 of `jnh serve` during concurrent commits and asynchronous formations, then a
restart, for a few rounds (tests/support/serve_crash.py; bench/crash.py runs 10): no
acknowledged write is lost, no commit is half there, no formation is stranded or formed
twice, and no reservation outlives the crash (the next burst of 10 is admitted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.serve_crash import BURST, WORKERS, CrashRig, RoundFigures

pytestmark = pytest.mark.slow

ROUNDS = 3


def test_every_acknowledged_write_survives_kill_9_and_no_formation_is_stranded(
    tmp_path: Path,
) -> None:
    with CrashRig(tmp_path) as rig:
        for n in range(1, ROUNDS + 1):
            check(rig.round(n))


def check(figures: RoundFigures) -> None:
    assert figures.errors == [], figures
    assert figures.commits_acknowledged > 0 and figures.formations_acknowledged > 0
    # the kill came while formations were running and others waited for a worker
    assert figures.running_at_kill >= 1, figures
    assert figures.running_at_kill + figures.queued_at_kill > WORKERS, figures
    assert (figures.commits_lost, figures.commits_partial) == (0, 0), figures
    assert (figures.stranded, figures.failed, figures.duplicated) == (0, 0, 0), figures
    assert (figures.unfinished_in_file, figures.reservations_left) == (0, 0), figures
    assert (figures.burst_admitted, figures.burst_refused) == (BURST, 0), figures
    assert figures.healthy
