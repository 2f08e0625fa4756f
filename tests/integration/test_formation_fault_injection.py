"""Formations under injected faults on the Spanner emulator, delivered twice each
(tests/support/formation_faults.py; bench/formation_faults.py runs 1,000): every
formation succeeds and commits exactly once, and none is partly written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.formation_faults import Faults, faulty_spanner, run
from tests.support.spanner_emulator import Emulator

pytestmark = [pytest.mark.spanner, pytest.mark.slow]

FORMATIONS = 40  # in CI; the bench script forms 1,000


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with faulty_spanner() as started:
        yield started


def test_no_formation_is_partial_or_twice_under_aborts_errors_and_duplicates(
    emulator: Emulator, tmp_path: Path
) -> None:
    figures = run(emulator, tmp_path, FORMATIONS, Faults(before_commit=0.1, after_commit=0.1))

    assert figures.aborts_retried > 0, "no commit was aborted: is fault injection on?"
    assert figures.injected_before + figures.injected_after > 0, figures
    assert figures.deliveries >= 2 * FORMATIONS
    assert (figures.succeeded, figures.failed) == (FORMATIONS, {}), figures
    assert figures.committed == FORMATIONS, figures
    assert (figures.partial, figures.committed_twice, figures.failed_but_committed) == (0, 0, 0)
    assert figures.healthy
