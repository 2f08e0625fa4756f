"""The `rules` model: every extraction pattern, both sides, structures, reconciliation, usage."""

from __future__ import annotations

from typing import Any

import pytest

from jennah.adapters.models.rules import RulesModel
from jennah.domain.formation import (
    CandidateKind,
    ExtractedCandidate,
    detect_structures,
    preserves_structure,
)
from jennah.errors import Aborted, Internal
from jennah.ports.model import LanguageModel
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

FACT = CandidateKind.FACT
RELATIONSHIP = CandidateKind.RELATIONSHIP
SPEC_TURNS = [
    ("user", "I live in Tokyo and I work at Alphaus."),
    ("assistant", "Noted. Anything else about your setup?"),
    ("user", "I prefer dark mode in every tool."),
]
SHIFTS = "Shift rotation:\n\n| agent | shift |\n|---|---|\n| Admon | early |\n| Bea | late |"


def _extract_data(
    turns: list[tuple[str, str]],
    *,
    vocabulary: dict[str, Any] | None = None,
    with_structures: bool = True,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "task": "extract",
        "clock": "2026-08-25T08:48:01+00:00",
        "turns": [{"index": i, "role": r, "content": c} for i, (r, c) in enumerate(turns)],
        "vocabulary": vocabulary or {"entityClasses": [], "relationTypes": []},
    }
    if with_structures:
        data["structures"] = [
            {"turnIndex": i, "kind": s.kind.value, "text": s.text}
            for i, (_, content) in enumerate(turns)
            for s in detect_structures(content)
        ]
    return data


def _extract(turns: list[tuple[str, str]], **options: Any) -> list[ExtractedCandidate]:
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, _extract_data(turns, **options))
    result = RulesModel().generate(prompt, EXTRACTION_SCHEMA, 32_768, 30.0)
    return parse_answer(result.text, ExtractionAnswer, "extraction").candidates


def _texts(turns: list[tuple[str, str]], **options: Any) -> list[str]:
    return [c.text for c in _extract(turns, **options)]


def test_it_is_the_local_rules_model() -> None:
    model: LanguageModel = RulesModel()
    assert (model.name, model.region) == ("rules", "local")


# Extraction: the spec's conversation.


def test_the_spec_conversation_forms_facts_and_relationships_about_the_user() -> None:
    candidates = _extract(SPEC_TURNS)
    assert [(c.kind, c.text, c.turns) for c in candidates] == [
        (FACT, "The user lives in Tokyo.", [0]),
        (RELATIONSHIP, "the user lives_in Tokyo", [0]),
        (FACT, "The user works at Alphaus.", [0]),
        (RELATIONSHIP, "the user works_at Alphaus", [0]),
        (FACT, "The user prefers dark mode in every tool.", [2]),
    ]
    lives = candidates[1]
    assert lives.subject is not None and lives.object is not None
    assert (lives.subject.name, lives.relation, lives.object.name) == (
        "the user",
        "lives_in",
        "Tokyo",
    )
    assert lives.subject.entity_class is None and lives.object.entity_class is None
    assert candidates[4].memory_type == "preference"


def test_clauses_joined_by_and_i_are_quoted_separately() -> None:
    quotes = [c.quote for c in _extract(SPEC_TURNS) if c.kind is FACT]
    assert quotes == ["I live in Tokyo", "I work at Alphaus", "I prefer dark mode in every tool"]


# Extraction: every user pattern.


@pytest.mark.parametrize(
    ("content", "text", "memory_type"),
    [
        ("I live in Lisbon.", "The user lives in Lisbon.", "fact"),
        ("I moved to Osaka last year.", "The user moved to Osaka last year.", "fact"),
        ("I work at Alphaus.", "The user works at Alphaus.", "fact"),
        ("I work for Google as an engineer.", "The user works for Google as an engineer.", "fact"),
        ("I prefer tea over coffee.", "The user prefers tea over coffee.", "preference"),
        ("I like hiking on weekends!", "The user likes hiking on weekends.", "preference"),
        ("I love my dog.", "The user loves the user's dog.", "preference"),
        ("I hate long meetings.", "The user hates long meetings.", "preference"),
        ("My favorite color is blue.", "The user's favorite color is blue.", "fact"),
        ("I am a nurse.", "The user is a nurse.", "identity"),
        ("I'm an engineer at Alphaus.", "The user is an engineer at Alphaus.", "identity"),
        ("Oh, and I now live in Kyoto.", "The user lives in Kyoto.", "fact"),
    ],
)
def test_each_first_person_pattern_becomes_a_third_person_fact(
    content: str, text: str, memory_type: str
) -> None:
    facts = [c for c in _extract([("user", content)]) if c.kind is FACT]
    assert [(f.text, f.memory_type) for f in facts] == [(text, memory_type)]


@pytest.mark.parametrize(
    ("content", "relation", "target"),
    [
        ("I live in Tokyo with my wife.", "lives_in", "Tokyo"),
        ("I moved to New York in 2020.", "lives_in", "New York"),
        ("I work at Bank of America, mostly remote.", "works_at", "Bank of America"),
        ("I work for Google as an engineer.", "works_at", "Google"),
    ],
)
def test_where_the_user_lives_and_works_are_relationships(
    content: str, relation: str, target: str
) -> None:
    [edge] = [c for c in _extract([("user", content)]) if c.kind is RELATIONSHIP]
    assert edge.object is not None and edge.subject is not None
    assert (edge.subject.name, edge.relation, edge.object.name) == ("the user", relation, target)
    assert edge.text == f"the user {relation} {target}"
    assert edge.memory_type == "relationship"


@pytest.mark.parametrize(
    "content",
    [
        "I used to live in Osaka.",  # the past
        "I don't work at Alphaus anymore.",  # a negation
        "If I worked at Google, I would move.",  # a hypothetical
        "I'd like a summary of this thread.",  # a request, not a preference
        "I prefer dark mode, do you?",  # a question
        "Thanks! I love it.",  # a bare pronoun
        "Ada lives in Lisbon.",  # the third person
    ],
)
def test_what_no_rule_covers_forms_nothing(content: str) -> None:
    assert _extract([("user", content)]) == []


def test_tool_turns_form_nothing() -> None:
    turns = [("tool call", "I live in Paris."), ("tool result", "I recommend the ramen.")]
    assert _extract(turns) == []


# Extraction: the assistant's side.


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (
            "I recommend Miss Bee Providore for nasi goreng.",
            "The assistant recommended Miss Bee Providore for nasi goreng.",
        ),
        (
            "You should try Miss Bee Providore for nasi goreng.",
            "The assistant recommended Miss Bee Providore for nasi goreng.",
        ),
        (
            "Try the night market for satay.",
            "The assistant recommended the night market for satay.",
        ),
        (
            "Good question. I'd suggest backing up your files first.",
            "The assistant suggested backing up the user's files first.",
        ),
    ],
)
def test_assistant_recommendations_say_the_assistant_made_them(content: str, text: str) -> None:
    [candidate] = _extract([("assistant", content)])
    assert (candidate.kind, candidate.text, candidate.turns) == (FACT, text, [0])


@pytest.mark.parametrize(
    "content",
    [
        "Noted. Anything else about your setup?",
        "Got it, you live in Tokyo and work at Alphaus.",
        "Happy to help!",
        "Let me know if you'd like more places, or you should try asking me later.",
        "Would you like me to recommend a restaurant? Feel free to try asking.",
    ],
)
def test_acknowledgements_restatements_and_offers_form_nothing(content: str) -> None:
    assert _extract([("assistant", content)]) == []


def test_every_quote_is_a_verbatim_substring_of_the_turn_it_cites() -> None:
    turns = [
        *SPEC_TURNS,
        ("assistant", "I recommend Miss Bee Providore for nasi goreng."),
        ("user", SHIFTS + "\n\nOh, and my favorite color is blue; I'm a nurse."),
        ("user", "Here is my config:\n```yaml\nretries: 3\n```\nI moved to Osaka with my wife."),
    ]
    candidates = _extract(turns)
    assert len(candidates) == 12
    for candidate in candidates:
        [turn] = candidate.turns
        assert candidate.quote and candidate.quote in turns[turn][1]


def test_the_same_statement_twice_forms_one_candidate() -> None:
    texts = _texts([("user", "I live in Tokyo."), ("user", "I live in Tokyo!")])
    assert texts == ["The user lives in Tokyo.", "the user lives_in Tokyo"]


# Extraction: structures.


def test_the_shift_rotation_table_is_kept_verbatim_under_its_lead_in() -> None:
    [fact] = _extract([("user", SHIFTS)])
    assert fact.text == SHIFTS
    assert fact.quote == SHIFTS.split("\n\n", 1)[1]
    assert preserves_structure(fact.text, detect_structures(SHIFTS))


def test_prose_around_a_structure_still_forms_facts_and_the_rows_do_not() -> None:
    content = "I live in Lisbon.\n" + SHIFTS + "\n\nI prefer tea."
    texts = _texts([("user", content)])
    assert texts == [
        SHIFTS,
        "The user lives in Lisbon.",
        "the user lives_in Lisbon",
        "The user prefers tea.",
    ]


def test_a_code_block_keeps_its_lead_in_in_the_third_person() -> None:
    content = "Here is my config:\n```yaml\nretries: 3\n```"
    assert _texts([("user", content)]) == ["Here is the user's config:\n\n```yaml\nretries: 3\n```"]


def test_a_structure_without_a_lead_in_says_the_user_shared_it() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    assert _texts([("user", table)]) == [f"The user shared a table:\n\n{table}"]


def test_structures_are_detected_when_the_prompt_lists_none() -> None:
    assert _texts([("user", SHIFTS)], with_structures=False) == [SHIFTS]


def test_structures_listed_in_the_prompt_are_the_ones_used() -> None:
    data = _extract_data([("user", SHIFTS)])
    data["structures"] = []
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, data)
    result = RulesModel().generate(prompt, EXTRACTION_SCHEMA, 32_768, 30.0)
    assert parse_answer(result.text, ExtractionAnswer, "extraction").candidates == []


def test_an_assistant_structure_forms_nothing() -> None:
    assert _extract([("assistant", SHIFTS)]) == []


# Extraction: the vocabulary.


def test_entity_classes_come_only_from_declared_classes_by_trivial_rules() -> None:
    vocabulary = {
        "entityClasses": [
            {"name": "Person", "description": "a human"},
            {"name": "City", "description": "a city"},
            {"name": "Organization", "description": "a company"},
        ],
        "relationTypes": [],
    }
    lives, works = [c for c in _extract(SPEC_TURNS, vocabulary=vocabulary) if c.subject]
    assert lives.subject is not None and lives.object is not None
    assert works.subject is not None and works.object is not None
    assert lives.subject.entity_class == "Person"
    assert lives.object.entity_class is None  # "City" is not always true of where one lives
    assert works.object.entity_class == "Organization"


def test_a_declared_relation_type_of_the_same_meaning_names_the_relation() -> None:
    vocabulary = {
        "entityClasses": [{"name": "place", "description": ""}],
        "relationTypes": [
            {"name": "LIVES_IN", "description": "", "signatures": []},
            {"name": "EMPLOYED_BY", "description": "", "signatures": []},
        ],
    }
    edges = [c for c in _extract(SPEC_TURNS, vocabulary=vocabulary) if c.relation]
    assert [(e.text, e.relation) for e in edges] == [
        ("the user LIVES_IN Tokyo", "LIVES_IN"),
        ("the user EMPLOYED_BY Alphaus", "EMPLOYED_BY"),
    ]
    assert edges[0].object is not None and edges[0].object.entity_class == "place"


# Reconciliation.


def _existing(id_: str, text: str, memory_type: str = "fact", kind: str = "FACT") -> dict[str, Any]:
    return {
        "id": id_,
        "kind": f"CANDIDATE_KIND_{kind}",
        "text": text,
        "memoryType": memory_type,
        "validAt": None,
    }


def _decide(
    text: str, existing: list[dict[str, Any]], memory_type: str = "fact", kind: str = "FACT"
) -> tuple[str, str | None]:
    data = {
        "task": "reconcile",
        "candidates": [
            {
                "candidateIndex": 0,
                "kind": f"CANDIDATE_KIND_{kind}",
                "text": text,
                "memoryType": memory_type,
            }
        ],
        "existing": existing,
    }
    prompt = build_prompt(RECONCILE_INSTRUCTIONS, data)
    result = RulesModel().generate(prompt, RECONCILE_SCHEMA, 32_768, 30.0)
    [choice] = parse_answer(result.text, ReconcileAnswer, "reconciliation").decisions
    assert choice.candidate_index == 0
    return choice.decision, choice.matched_id


TOKYO = _existing("fct_tokyo", "The user lives in Tokyo.")


def test_osaka_revises_tokyo() -> None:
    assert _decide("The user lives in Osaka.", [TOKYO]) == ("revised", "fct_tokyo")


def test_moving_revises_where_the_user_lives() -> None:
    assert _decide("The user moved to Osaka.", [TOKYO]) == ("revised", "fct_tokyo")


def test_the_same_text_normalized_is_known() -> None:
    assert _decide("the user lives in TOKYO", [TOKYO]) == ("known", "fct_tokyo")


def test_known_wins_over_a_revision() -> None:
    osaka = _existing("fct_osaka", "The user lives in Osaka.")
    assert _decide("The user lives in Osaka.", [TOKYO, osaka]) == ("known", "fct_osaka")


def test_an_edge_revises_an_edge_whatever_the_relation_spelling() -> None:
    edge = _existing("edg_tokyo", "the user LIVES_IN Tokyo", "relationship", "RELATIONSHIP")
    decision = _decide("the user lives_in Osaka", [edge], "relationship", "RELATIONSHIP")
    assert decision == ("revised", "edg_tokyo")


def test_an_attribute_is_revised_by_a_new_value() -> None:
    color = _existing("fct_color", "The user's favorite color is green.")
    assert _decide("The user's favorite color is blue.", [color]) == ("revised", "fct_color")


@pytest.mark.parametrize(
    ("text", "existing"),
    [
        ("The user likes ramen.", _existing("p", "The user likes sushi.", "preference")),
        ("The user is a nurse.", _existing("i", "The user is a teacher.", "identity")),
        ("Ada lives in Lisbon.", TOKYO),
        ("The assistant recommended Miss Bee Providore.", TOKYO),
    ],
)
def test_multi_valued_verbs_and_unrelated_statements_are_new(
    text: str, existing: dict[str, Any]
) -> None:
    memory_type = str(existing["memoryType"])
    assert _decide(text, [existing], memory_type) == ("new", None)


def test_only_memories_of_the_candidates_kind_and_type_match() -> None:
    edge = _existing("edg", "The user lives in Tokyo.", "relationship", "RELATIONSHIP")
    assert _decide("The user lives in Tokyo.", [edge]) == ("new", None)
    assert _decide("The user lives in Osaka.", [TOKYO], "preference") == ("new", None)


def test_nothing_existing_means_new() -> None:
    assert _decide("The user lives in Osaka.", []) == ("new", None)


# Usage, bounds and prompts it cannot read.


def test_usage_is_a_deterministic_estimate_of_prompt_and_answer() -> None:
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, _extract_data(SPEC_TURNS))
    first = RulesModel().generate(prompt, EXTRACTION_SCHEMA, 32_768, 30.0)
    assert first == RulesModel().generate(prompt, EXTRACTION_SCHEMA, 32_768, 30.0)
    assert first.input_tokens == len(prompt) // 4
    assert first.output_tokens == len(first.text) // 4
    assert first.model == "rules"


def test_an_answer_over_the_output_bound_is_aborted_naming_it() -> None:
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, _extract_data(SPEC_TURNS))
    with pytest.raises(Aborted) as caught:
        RulesModel().generate(prompt, EXTRACTION_SCHEMA, 10, 30.0)
    assert "max output tokens per call (10)" in caught.value.message
    assert caught.value.metadata == {
        "inputTokens": str(len(prompt) // 4),
        "outputTokens": "10",
    }


def test_an_unknown_task_or_a_prompt_without_data_is_internal() -> None:
    with pytest.raises(Internal, match="not 'summarize'"):
        RulesModel().generate(build_prompt("x", {"task": "summarize"}), {}, 100, 1.0)
    with pytest.raises(Internal, match="build_prompt"):
        RulesModel().generate("Extract memories, please.", {}, 100, 1.0)
