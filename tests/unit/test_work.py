"""jennah.ports.work: background marks, whose turn it is, and slots.

Threads coordinate by events and by the order they record, never by sleeping for a
while; the one bounded wait (that a caller is held back) can only pass wrongly, never
fail wrongly, on a slow machine.
"""

from __future__ import annotations

import functools
import threading

import pytest

from jennah.ports.work import BACKGROUND_EVERY, Slots, Turns, background, in_background
from tests.support.threads import WAIT_S, started, until


def test_background_marks_the_work_inside_only() -> None:
    assert not in_background()
    with background():
        assert in_background()
    assert not in_background()
    seen: list[bool] = []
    with background():  # a new thread starts interactive
        thread = threading.Thread(target=lambda: seen.append(in_background()))
        thread.start()
        thread.join(WAIT_S)
    assert seen == [False]


def test_a_waiting_background_caller_goes_after_at_most_background_every_interactive_ones() -> None:
    turns = Turns()
    grants = [turns.background_next(True, True) for _ in range(2 * (BACKGROUND_EVERY + 1))]
    assert grants == ([False] * BACKGROUND_EVERY + [True]) * 2
    assert Turns().background_next(False, True) and not Turns().background_next(True, False)
    assert not Turns().background_next(False, False)


def test_a_slot_is_held_by_one_caller_at_a_time_in_the_order_they_asked() -> None:
    slots, order = Slots(1), []
    first_in, release = threading.Event(), threading.Event()

    def first() -> None:
        with slots.held():
            order.append("first")
            first_in.set()
            assert release.wait(WAIT_S)

    def later(name: str) -> None:
        with slots.held():
            order.append(name)

    threads = [started(first)]
    assert first_in.wait(WAIT_S)
    for count, name in enumerate(("second", "third"), start=1):
        threads.append(started(functools.partial(later, name)))
        until(lambda count=count: slots.waiting() == count)  # type: ignore[misc]
    release.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert order == ["first", "second", "third"]


def test_a_slot_given_up_serves_a_waiting_caller_and_comes_back_before_callers_to_begin() -> None:
    slots, order = Slots(1), []
    giving_up, come_back = threading.Event(), threading.Event()
    other_in, other_out = threading.Event(), threading.Event()

    def holder() -> None:
        with slots.held():
            order.append("holder")
            with slots.given_up():
                giving_up.set()
                assert come_back.wait(WAIT_S)
            order.append("holder back")

    def other() -> None:
        with slots.held():
            order.append("other")
            other_in.set()
            assert other_out.wait(WAIT_S)
            order.append("other out")

    def late() -> None:
        with slots.held():
            order.append("late")

    first = started(holder)
    assert giving_up.wait(WAIT_S)  # the holder's slot is free: "other" takes it
    second = started(other)
    assert other_in.wait(WAIT_S)
    third = started(late)  # waits to begin
    until(lambda: slots.waiting() == 1)
    come_back.set()  # the holder asks for its slot back after "late" asked to begin
    until(lambda: slots.waiting() == 2)
    other_out.set()
    for thread in (first, second, third):
        thread.join(WAIT_S)
    assert order == ["holder", "other", "other out", "holder back", "late"]


def test_giving_up_a_slot_one_does_not_hold_changes_nothing() -> None:
    slots = Slots(1)
    with slots.given_up():
        pass
    with slots.held():  # still free
        pass
    with pytest.raises(ValueError, match="at least one"):
        Slots(0)
