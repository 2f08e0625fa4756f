"""MiniLM's coalescer: concurrent callers' texts share model runs, never waiting for company.

A fake model run (no model needed); threads coordinate by events only, never by time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from jennah.adapters.embedding.minilm import _Coalescer
from jennah.ports.work import BACKGROUND_EVERY, background


class _GatedRun:
    """A fake model run: each text's row is its ids' sum (so a row shows which text it
    is); records every run; the first run waits for `release` once it has `started`."""

    def __init__(self) -> None:
        self.runs: list[list[tuple[int, ...]]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_on: int | None = None  # a length whose runs raise

    def __call__(self, token_ids: list[Sequence[int]]) -> np.ndarray:
        self.runs.append([tuple(ids) for ids in token_ids])
        if len(self.runs) == 1:
            self.started.set()
            assert self.release.wait(timeout=60)
        assert len({len(ids) for ids in token_ids}) == 1  # one length per run
        if len(token_ids[0]) == self.fail_on:
            raise RuntimeError("model failed")
        return np.array([[float(sum(ids))] for ids in token_ids], dtype=np.float32)


def _coalescer(run: _GatedRun, workers: int = 1) -> tuple[_Coalescer, ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(workers)
    return _Coalescer(run, pool, workers, batch_size=3, max_tokens=64), pool


def test_an_idle_coalescer_runs_a_text_at_once_without_waiting_for_company() -> None:
    run = _GatedRun()
    coalescer, pool = _coalescer(run)
    queued = coalescer.submit([[7, 1]])
    assert run.started.wait(timeout=60)  # running before anyone asked for the answer
    run.release.set()
    assert [row.tolist() for row in queued.rows()] == [[8.0]]
    pool.shutdown()


def test_texts_queued_while_the_workers_are_busy_share_runs_by_length() -> None:
    run = _GatedRun()
    coalescer, pool = _coalescer(run)
    first = coalescer.submit([[1, 1, 1]])
    assert run.started.wait(timeout=60)  # the only worker is busy from here on
    commit = coalescer.submit([[2, 2], [3, 3, 3], [4, 4], [5, 5]])
    query = coalescer.submit([[6, 6, 6]])
    other = coalescer.submit([[7, 7], [8] * 70])  # 70 tokens: over max_tokens, alone
    run.release.set()
    assert [r.tolist() for r in commit.rows()] == [[4.0], [9.0], [8.0], [10.0]]
    assert [r.tolist() for r in query.rows()] == [[18.0]]
    assert [r.tolist() for r in other.rows()] == [[14.0], [560.0]]
    assert [r.tolist() for r in first.rows()] == [[3.0]]
    assert run.runs == [
        [(1, 1, 1)],
        [(2, 2), (4, 4), (5, 5)],  # the oldest text's length first, up to 3 texts a run
        [(3, 3, 3), (6, 6, 6)],  # two callers' texts in one run
        [(7, 7)],
        [(8,) * 70],
    ]
    pool.shutdown()


def test_a_second_worker_starts_while_the_first_is_busy() -> None:
    run = _GatedRun()
    coalescer, pool = _coalescer(run, workers=2)
    blocked = coalescer.submit([[1]])
    assert run.started.wait(timeout=60)
    assert [r.tolist() for r in coalescer.submit([[2, 3]]).rows()] == [[5.0]]  # not queued
    run.release.set()
    assert [r.tolist() for r in blocked.rows()] == [[1.0]]
    pool.shutdown()


def test_a_failed_run_raises_for_its_callers_only() -> None:
    run = _GatedRun()
    run.fail_on = 2
    coalescer, pool = _coalescer(run)
    first = coalescer.submit([[1]])
    assert run.started.wait(timeout=60)
    failing = coalescer.submit([[1, 1], [4]])
    fine = coalescer.submit([[5]])
    run.release.set()
    with pytest.raises(RuntimeError, match="model failed"):
        failing.rows()
    assert [r.tolist() for r in fine.rows()] == [[5.0]]
    assert [r.tolist() for r in first.rows()] == [[1.0]]
    assert [r.tolist() for r in coalescer.submit([[6]]).rows()] == [[6.0]]  # still working
    pool.shutdown()


def test_an_interactive_callers_texts_run_before_background_texts_queued_earlier() -> None:
    run = _GatedRun()
    coalescer, pool = _coalescer(run)
    first = coalescer.submit([[1]])
    assert run.started.wait(timeout=60)
    with background():  # a formation's texts
        formation = coalescer.submit([[2, 2], [3, 3, 3]])
    commit = coalescer.submit([[4, 4, 4, 4], [5, 5, 5]])
    run.release.set()
    for queued in (first, formation, commit):
        queued.rows()
    assert run.runs == [
        [(1,)],
        [(4, 4, 4, 4)],  # the oldest interactive text's length
        [(5, 5, 5), (3, 3, 3)],  # a background text of the same length shares the run
        [(2, 2)],
    ]
    pool.shutdown()


def test_a_background_text_runs_after_at_most_background_every_interactive_runs() -> None:
    run = _GatedRun()
    coalescer, pool = _coalescer(run)
    first = coalescer.submit([[1]])
    assert run.started.wait(timeout=60)
    with background():
        formation = coalescer.submit([[2, 2]])
    lengths = range(3, 3 + BACKGROUND_EVERY + 1)  # one run each
    commits = [coalescer.submit([[9] * n]) for n in lengths]
    run.release.set()
    for queued in (first, formation, *commits):
        queued.rows()
    assert [len(r[0]) for r in run.runs] == [1, *lengths[:BACKGROUND_EVERY], 2, lengths[-1]]
    pool.shutdown()
