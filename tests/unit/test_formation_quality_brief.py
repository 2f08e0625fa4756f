"""The brief's quality targets (bench/formation_quality_brief.py), on briefs, inspected
claims and query hits written by hand: no server, no model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import formation_quality_brief as fqb  # noqa: E402
from formation_quality_cases import Case, ExpectedFact  # noqa: E402

CASE = Case.model_validate(
    {
        "id": "901-example",
        "split": "tune",
        "tags": ["revision"],
        "description": "An example.",
        "observedAt": "2026-09-14T19:00:00Z",
        "priors": [{"label": "city", "text": "The user lives in Leeds."}],
        "turns": [{"role": "user", "content": "I'm allergic to peanuts. I live in Leeds."}],
        "facts": [
            {"terms": ["allerg", "peanut"], "decision": "new", "type": "fact"},
            {"terms": [["ask", "check"], "booking"], "decision": "new", "type": "directive"},
            {"terms": ["leeds"], "decision": "known", "prior": "city"},
            {"terms": ["date:2026-10-14", "dentist"], "decision": "new"},
            {"terms": ["tonight"], "decision": "new", "optional": True},
        ],
    }
)


def brief(*ids: str, topic_id: str = "") -> str:
    lines = ['<memory-brief scope="fq-901" variant="full">', "## Directives"]
    lines += [f'- (hard) "text {i}" memory://fq-901/{i}' for i in ids]
    lines += ["## Topic index", "- fact: 3"]
    if topic_id:
        lines.append(f'- about "Dentist": 1 memory://fq-901/{topic_id}')
    return "\n".join([*lines, "</memory-brief>"])


def chunk(chunk_id: str, text: str, status: str = "active") -> dict[str, Any]:
    return {"id": chunk_id, "text": text, "status": status}


CHUNKS = [
    chunk("c1", "The user is allergic to peanuts."),
    chunk("c2", "The user wants the assistant to ask before booking."),
    chunk("c3", "The user lives in Leeds."),
    chunk("c4", "The user has a dentist appointment on 14 October 2026."),
]


def fact(terms: list[Any], **fields: Any) -> ExpectedFact:
    return ExpectedFact.model_validate({"terms": terms, "decision": "new"} | fields)


def test_claim_lines_count_topic_lines_do_not() -> None:
    assert fqb.brief_claim_ids(brief("c1", "c2", topic_id="c4")) == {"c1", "c2"}


def test_query_text_drops_the_subject_and_stop_words_and_spells_dates() -> None:
    assert fqb.query_text(fact([["ask", "check"], "the booking"])) == "ask booking"
    assert fqb.query_text(fact(["user", "date:2026-10-14"])) == "14 October 2026"


def test_hard_constraints_are_rules_constraints_and_allergies() -> None:
    assert fqb.is_hard(fact(["peanut"], type="constraint"))
    assert fqb.is_hard(fact(["call"], type="directive"))
    assert fqb.is_hard(fact([["allerg", "intoleran"], "nut"]))
    assert not fqb.is_hard(fact(["leeds"], type="fact"))


def test_a_fact_is_reached_by_the_brief_or_the_top_five() -> None:
    hits = {"dentist 14 October 2026": ["x1", "x2", "x3", "x4", "x5", "c4"],
            "leeds": ["c3"]}  # fmt: skip
    score = fqb.score_brief(CASE, brief("c1", "c2"), 120, CHUNKS, hits, None)
    reach = {tuple(map(str, f.terms)): f for f in score.facts}
    assert len(score.facts) == 4  # the optional fact is not counted
    assert reach[("allerg", "peanut")].in_brief
    assert reach[("leeds",)].in_top_k and not reach[("leeds",)].in_brief
    dentist = reach[("date:2026-10-14", "dentist")]
    assert dentist.held and not dentist.reached  # sixth is outside the top 5
    report = fqb.brief_report([score])
    assert report["factsReached"] == {
        "rate": 0.75, "count": 3, "of": 4, "target": 0.8, "met": False,
    }  # fmt: skip
    assert report["hardInBrief"]["count"] == report["hardInBrief"]["of"] == 2
    assert report["hardInBrief"]["met"] is True


def test_a_hard_constraint_only_in_the_top_five_is_missed() -> None:
    hits = {"ask booking": ["c2"]}
    score = fqb.score_brief(CASE, brief("c1"), 50, CHUNKS, hits, None)
    report = fqb.brief_report([score])
    assert report["hardInBrief"] == {
        "rate": 0.5, "count": 1, "of": 2, "target": 1.0, "met": False,
    }  # fmt: skip


def test_inactive_claims_reach_nothing() -> None:
    chunks = [chunk("c1", "The user is allergic to peanuts.", status="superseded")]
    score = fqb.score_brief(CASE, brief("c1"), 50, chunks, {}, None)
    assert not score.facts[0].held and not score.facts[0].in_brief
    assert score.active_claims == 0


def test_duplicates_by_normalized_text_and_by_cosine_transitively() -> None:
    texts = ["The user lives in Leeds.", "the user lives in leeds", "A", "B", "C", "D"]
    vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.95, 0.31], [0.8, 0.6], [-1.0, 0.0]]
    clusters = fqb.duplicate_clusters(texts, vectors, threshold=0.9)
    # A~B (0.95) and B~C (0.95) join C to A although A~C is 0.8; the first two by text
    # (and A joins them by cosine with the first); D stands alone.
    assert sorted(map(sorted, clusters)) == [sorted(texts[:5])]
    assert fqb.duplicate_clusters(texts, None) == [texts[:2]]


def test_cluster_counts_are_swept_over_thresholds() -> None:
    chunks = [chunk("a", "A"), chunk("b", "B"), chunk("c", "C")]
    vectors = [[1.0, 0.0], [0.92, 0.39], [0.0, 1.0]]  # a~b: 0.92
    score = fqb.score_brief(CASE, brief(), 10, chunks, {}, vectors)
    assert len(score.duplicate_clusters) == 1
    assert fqb.brief_report([score])["duplicateClustersAt"] == {
        "0.80": 1, "0.85": 1, "0.90": 1, "0.95": 0,
    }  # fmt: skip


def test_duplicate_rate_and_token_limit() -> None:
    chunks = [*CHUNKS, chunk("c5", "The user lives in Leeds!")]
    score = fqb.score_brief(CASE, brief(), 2001, chunks, {}, None)
    report = fqb.brief_report([score])
    assert report["duplicateClusters"] == {
        "rate": 0.2, "count": 1, "of": 5, "target": 0.05, "met": False,
    }  # fmt: skip
    assert report["briefTokensMax"] == 2001 and report["briefTokensOverLimit"] == 1


def test_unread_briefs_are_counted_apart() -> None:
    report = fqb.brief_report([fqb.BriefScore("x", "tune", error="404")])
    assert report["failed"] == 1 and report["factsReached"]["rate"] is None
