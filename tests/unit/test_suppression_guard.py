"""The suppression rule's guard (domain.distinguishing, domain.suppression.match): a
candidate close to a forgotten claim but differing in the words that carry a fact is a
different fact and is never suppressed, however close its embedding."""

from __future__ import annotations

import pytest

from jennah.domain.distinguishing import Difference, differences, fact_words
from jennah.domain.suppression import SUPPRESSION_SIMILARITY, Suppression, match

FORGOTTEN = "Mira starts swimming lessons on Tuesdays at 5pm."
# The same direction for every statement: cosine 1.0, so only the guard decides.
SAME = [1.0, 0.0, 0.0]


def _rule(text: str = FORGOTTEN) -> Suppression:
    return Suppression(id="sup_1", memory_id="chk_1", text=text, embedding=SAME)


@pytest.mark.parametrize(
    ("candidate", "kind"),
    [
        ("Mira starts swimming lessons on Thursdays at 5pm.", Difference.ANCHORS),  # weekday
        ("Mira starts swimming lessons on Tuesdays at 6pm.", Difference.ANCHORS),  # number
        ("Mira starts swimming lessons on Tuesday evenings.", Difference.ANCHORS),  # time
        ("Mira's brother starts swimming lessons on Tuesdays at 5pm.", Difference.ANCHORS),
        ("Lena starts swimming lessons on Tuesdays at 5pm.", Difference.NAMES),
    ],
)
def test_a_changed_fact_word_is_a_different_fact_even_at_cosine_one(
    candidate: str, kind: Difference
) -> None:
    assert kind in differences(FORGOTTEN, candidate)
    assert match(candidate, SAME, [_rule()]) is None


@pytest.mark.parametrize(
    "candidate",
    [
        "Mira's swimming lessons are on Tuesdays at 5pm.",
        "On Tuesdays at 5pm Mira has swimming lessons.",  # a name opening the sentence
        "Every Tuesday at 5pm Mira starts her swimming lesson.",
    ],
)
def test_a_paraphrase_keeping_the_fact_words_is_suppressed(candidate: str) -> None:
    assert not differences(FORGOTTEN, candidate) & {Difference.ANCHORS, Difference.NAMES}
    found = match(candidate, SAME, [_rule()])
    assert found is not None and found.suppression.id == "sup_1"
    assert "no fact-carrying word changed" in found.reason


def test_below_the_bound_nothing_is_suppressed_whatever_the_words() -> None:
    orthogonal = [0.0, 1.0, 0.0]
    assert SUPPRESSION_SIMILARITY > 0.0
    assert match("Mira's swimming lessons are on Tuesdays at 5pm.", orthogonal, [_rule()]) is None


def test_the_same_words_are_suppressed_whatever_the_embedding() -> None:
    found = match("mira starts swimming lessons on tuesdays at 5pm", None, [_rule()])
    assert found is not None and found.same_words


def test_numbers_are_compared_as_numbers() -> None:
    assert fact_words("Max is seven.").anchors == fact_words("Max is 7.").anchors == {"#7"}
    assert fact_words("the fourth floor").anchors == fact_words("the 4th floor").anchors
    assert fact_words("1,400 euros").anchors == {"#1400"}


def test_kin_words_are_one_person_whatever_the_word() -> None:
    assert fact_words("The user's mum lives here.").anchors == {"&mother"}
    assert not differences(
        "The user's mum lives in Lisbon.", "The mother of the user lives in Lisbon."
    )
    assert Difference.ANCHORS in differences(
        "The user's mother lives in Lisbon.", "The user's father lives in Lisbon."
    )


def test_may_is_a_month_only_when_capitalised() -> None:
    assert fact_words("Tom may visit.").anchors == frozenset()
    assert fact_words("Tom visits in May.").anchors == {"@may"}


def test_a_swapped_thing_is_detected_but_not_guarded() -> None:
    forgotten = "Ana is allergic to peanuts."
    candidate = "Ana is allergic to shellfish."
    assert differences(forgotten, candidate) == {Difference.THINGS}
    assert match(candidate, SAME, [_rule(forgotten)]) is not None
