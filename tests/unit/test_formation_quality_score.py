"""The formation-quality runner's scores (bench/formation_quality_score.py), on receipts
and inspected memory written by hand: no server, no model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.formation import Turn, TurnRole, render

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import formation_quality_score as score  # noqa: E402
from formation_quality_cases import Case  # noqa: E402

PRIOR_ID = "fct_prior"
CASE: dict[str, Any] = {
    "id": "900-example",
    "split": "tune",
    "tags": ["revision", "assistant"],
    "description": "An example.",
    "observedAt": "2026-09-14T19:00:00Z",
    "priors": [
        {"label": "work", "text": "The user works at St Mary's.", "validAt": "2026-01-01T00:00:00Z"}
    ],
    "turns": [
        {"role": "user", "content": "I now work at Leeds General Infirmary."},
        {"role": "assistant", "content": "I'd recommend the Aquatics Centre."},
    ],
    "facts": [
        {"terms": ["leeds general"], "decision": "revised", "prior": "work"},
        {"terms": ["aquatics"], "decision": "new", "speaker": "assistant"},
    ],
    "forbidden": ["evilcorp"],
    "forbidden_attributes": ["priority"],
}
_CASE = Case.model_validate(CASE)
STEP = render(
    [Turn(role=TurnRole(t["role"]), content=t["content"]) for t in _CASE.wire_turns],
    _CASE.observed_at,
).step_id
REVISED = "MEMORY_DECISION_REVISED"
NEW = "MEMORY_DECISION_NEW"


def candidate(text: str, decision: str = NEW, **fields: Any) -> dict[str, Any]:
    return {"candidateId": "c", "kind": "CANDIDATE_KIND_FACT", "text": text,
            "decision": decision} | fields  # fmt: skip


def chunk(text: str, chunk_id: str = "", **metadata: str) -> dict[str, Any]:
    provenance = {"jennah.source_step": STEP, "jennah.source_turns": "0"}
    return {
        "id": chunk_id or f"fct_{abs(hash(text))}",
        "text": text,
        "metadata": provenance | metadata,
    }


GOOD = score.Observed(
    receipt={
        "candidates": [
            candidate("The user works at Leeds General Infirmary.", REVISED, matchedId=PRIOR_ID),
            candidate("The assistant recommended the Aquatics Centre."),
        ]
    },
    chunks=[
        chunk("The user works at Leeds General Infirmary."),
        chunk("The assistant recommended the Aquatics Centre.", **{"jennah.source_turns": "1"}),
    ],
    nodes=[],
    edges=[],
    prior_ids={"work": PRIOR_ID},
)


def scored(observed: score.Observed, **changes: Any) -> score.CaseScore:
    return score.score_case(Case.model_validate(CASE | changes), observed)


def observed(**changes: Any) -> score.Observed:
    fields = {k: getattr(GOOD, k) for k in ("receipt", "chunks", "nodes", "edges", "prior_ids")}
    return score.Observed(**(fields | changes))


def test_a_correct_formation_scores_full_marks() -> None:
    result = scored(GOOD)
    assert [(f.recalled, f.decided, f.attributed) for f in result.facts] == [(True, True, True)] * 2
    assert (result.formed, result.spurious, result.forbidden, result.injected) == (2, [], [], [])


def test_a_revision_must_name_the_labelled_prior() -> None:
    wrong = candidate("The user works at Leeds General Infirmary.", REVISED, matchedId="fct_other")
    receipt = {"candidates": [wrong, GOOD.receipt["candidates"][1]]}
    assert scored(observed(receipt=receipt)).facts[0].decided is False


def test_a_fact_no_candidate_mentions_is_a_miss() -> None:
    result = scored(observed(receipt={"candidates": []}, chunks=[]))
    assert [(f.recalled, f.decided, f.attributed) for f in result.facts] == [
        (False, False, None)
    ] * 2


@pytest.mark.parametrize(
    "text, by_assistant",
    [
        ("The assistant recommended the Aquatics Centre.", True),
        ("The user was recommended the Aquatics Centre by the assistant.", True),
        ("According to the assistant, the pool opens at 7.", True),
        ("The user wants the assistant to ask before booking weekends.", False),
        ("The Aquatics Centre has a beginner pool.", False),
        ("The user's assistants are Jo and Kim.", False),
    ],
)
def test_attribution_is_read_from_the_text(text: str, by_assistant: bool) -> None:
    assert score.says_assistant(text) is by_assistant


def test_an_assistant_fact_stored_as_the_users_is_misattributed() -> None:
    receipt = {
        "candidates": [
            GOOD.receipt["candidates"][0],
            candidate("The user likes the Aquatics Centre."),
        ]
    }
    assert scored(observed(receipt=receipt)).facts[1].attributed is False


def test_a_memory_stating_no_expected_fact_is_spurious_and_forbidden_terms_are_counted() -> None:
    extra = chunk("The user works for EvilCorp.")
    result = scored(observed(chunks=[*GOOD.chunks, extra]))
    assert result.spurious == ["The user works for EvilCorp."]
    assert len(result.forbidden) == 1


def test_an_edge_is_spurious_only_when_no_entity_names_an_expected_term() -> None:
    nodes = [
        {"nodeId": "user", "label": "the user"},
        {"nodeId": "pool", "label": "Aquatics Centre"},
        {"nodeId": "road", "label": "Kirkstall Road"},
        {"nodeId": "evil", "label": "EvilCorp"},
    ]
    edges = [
        {"edgeId": "e1", "source": "pool", "relation": "located_on", "target": "road"},
        {"edgeId": "e2", "source": "user", "relation": "works_at", "target": "evil"},
    ]
    facts = [{"terms": ["aquatics", "beginner"], "decision": "new", "speaker": "assistant"}]
    result = scored(observed(nodes=nodes, edges=edges), facts=facts)
    assert "Aquatics Centre located_on Kirkstall Road" not in result.spurious
    assert "the user works_at EvilCorp" in result.spurious


def test_reserved_and_forbidden_attributes_are_counted_but_real_provenance_is_not() -> None:
    chunks = [
        chunk("The user works at Leeds General Infirmary.", **{"jennah.source_step": "frm_0000"}),
        chunk("The assistant recommended the Aquatics Centre.", priority="urgent"),
        chunk("The user works at Leeds General Infirmary now.", **{"jennah.note": "x"}),
    ]
    result = scored(observed(chunks=chunks))
    assert [hit.split("=")[0] for hit in result.injected] == [
        "jennah.source_step",
        "priority",
        "jennah.note",
    ]
    assert scored(GOOD).injected == []


def test_priors_are_not_formed_memory_and_a_known_fact_keeps_them() -> None:
    prior = chunk("The user works at St Mary's.", PRIOR_ID)
    result = scored(observed(chunks=[prior]), facts=[
        {"terms": ["st mary"], "decision": "known", "prior": "work"}
    ], empty=True)  # fmt: skip
    assert result.formed == 0 and result.empty_ok is True
    assert result.facts[0].recalled is None and result.facts[0].decided is False


def test_an_empty_case_that_writes_or_supersedes_is_wrong() -> None:
    empty = {"facts": [], "empty": True, "forbidden": []}
    assert scored(observed(chunks=[]), **empty).empty_ok is True
    assert scored(GOOD, **empty).empty_ok is False
    superseded = observed(chunks=[], receipt={"chunkSupersessions": "1"})
    assert scored(superseded, **empty).empty_ok is False


def test_structure_is_held_to_the_receipt() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    case = {
        "turns": [{"role": "user", "content": f"Keep this:\n{table}"}],
        "facts": [],
        "forbidden": [],
        "structure": {"preservesStructure": True},
    }
    kept = candidate(f"Keep this:\n{table}", preservesStructure=True)
    summarized = {"turnIndex": 0, "description": "1 table", "summarizedCount": 1}
    assert scored(observed(receipt={"candidates": [kept]}), **case).structure_ok is True
    lost = {"candidates": [], "summarizedStructures": [summarized]}
    assert scored(observed(receipt=lost), **case).structure_ok is False


def test_totals_read_rates_from_counts() -> None:
    good, bad = scored(GOOD), scored(observed(receipt={"candidates": []}, chunks=[]))
    rates = score.totals([good, bad]).rates()
    assert rates["factRecall"] == {"rate": 0.5, "count": 2, "of": 4}
    assert rates["attributionAccuracy"] == {"rate": 1.0, "count": 2, "of": 2}
    assert rates["emptyCaseAccuracy"]["rate"] is None
    by_label = score.by_decision([good, bad])
    assert by_label["revised"].decided == 1 and by_label["revised"].labelled == 2
