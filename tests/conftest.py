"""Suite-wide: the collection order, longest files first.

scripts/test runs the suite on pytest-xdist workers with `--dist loadfile` (each file
whole on one worker) and `--no-loadscope-reorder` (files are handed out in collection
order, not by their number of tests, which would leave a file of three 2-minute tests for
last). Starting the longest files first lets the many short ones fill in behind them, so
both workers finish together. The durations are those of `scripts/test --durations`;
a file missing here only runs in its usual place.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = (
    "tests/integration/test_local_model.py",
    "tests/e2e/test_access_matrix_cloud.py",
    "tests/integration/test_function_artifacts.py",
    "tests/e2e/test_schemathesis.py",
    "tests/e2e/test_access_e2e.py",
    "tests/e2e/test_serve_crash.py",
    "tests/integration/test_formation_fault_injection.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        try:
            path = item.path.relative_to(config.rootpath).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(path, len(rank))

    items.sort(key=place)  # stable: within a file, and among the rest, the order is kept
