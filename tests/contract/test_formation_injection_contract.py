"""Contract: prompt injection through memory:form stores nothing it asks for.

The corpus is tests/data/prompt_injection.json: reserved `jennah.` attributes, fake
system notes in user turns, instructions in tool output, turn content and vocabulary
descriptions that try to close the prompt's data block, vocabulary names that try the
same. Every case runs three ways on both stores: a hostile extraction (the scripted
model) whose every candidate verification in code must reject; a legitimate extraction
of the same turns, which is kept (so the checks are not simply refusing everything);
and the rules model. Whatever ran, nothing stored carries a `jennah.` key other than the
platform's own provenance, no stored text holds a forbidden string, and no node has an
entity class the vocabulary does not declare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.models.rules import RulesModel
from jennah.domain import vocabulary as vocabularies
from jennah.domain.formation import PLATFORM_PREFIX, SOURCE_STEP, SOURCE_TURNS, Turn, TurnRole
from jennah.domain.models import Direction, ScopeRef
from jennah.errors import InvalidArgument
from jennah.ports.prompts import (
    DATA_CLOSE,
    DATA_OPEN,
    EXTRACT_INSTRUCTIONS,
    build_prompt,
    read_data,
)
from jennah.ports.store import MemoryStore
from jennah.services.formation.extraction import extraction_data
from tests.contract.formation_support import RECEIVED, decisions, extraction, run, scripted

CORPUS = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "prompt_injection.json").read_text("utf-8")
)
CASES = {case["name"]: case for case in CORPUS["cases"]}
PROVENANCE = {SOURCE_STEP, SOURCE_TURNS}


def turns_of(case: dict[str, Any]) -> list[Turn]:
    return [Turn(role=TurnRole(t["role"]), content=t["content"]) for t in case["turns"]]


def vocabulary_of(case: dict[str, Any]) -> dict[str, Any] | None:
    """The case's vocabulary as a declaration would store it (checked, descriptions flat)."""
    if "vocabulary" not in case:
        return None
    declared = vocabularies.validated(vocabularies.from_data(case["vocabulary"]))
    return vocabularies.to_data(declared)


def form(store: MemoryStore, scope: ScopeRef, case: dict[str, Any], model: Any) -> Any:
    return run(store, scope, turns_of(case), model, vocabulary=vocabulary_of(case))


def stored(store: MemoryStore, scope: ScopeRef) -> tuple[list[Any], list[Any], list[Any]]:
    """Every chunk, node and edge of the scope, whatever its validity."""
    chunks = store.list_chunks(scope, None, 1000, 0)
    nodes = store.find_nodes(scope, [], 1000)
    edges = store.edges_touching(scope, [n.node_id for n in nodes], [], Direction.ANY, None)
    return chunks, nodes, edges


def assert_nothing_injected(store: MemoryStore, scope: ScopeRef, case: dict[str, Any]) -> None:
    chunks, nodes, edges = stored(store, scope)
    keys = [k for c in chunks for k in c.metadata] + [k for e in edges for k in e.properties]
    reserved = {k for k in keys if k.casefold().startswith(PLATFORM_PREFIX)} - PROVENANCE
    assert reserved == set(), f"reserved keys stored: {reserved}"
    texts = [c.text for c in chunks] + [n.label for n in nodes] + [e.relation for e in edges]
    values = [v for c in chunks for v in c.metadata.values()]
    for forbidden in case["forbidden"]:
        hits = [t for t in texts + values if forbidden.casefold() in t.casefold()]
        assert hits == [], f"{forbidden!r} stored in {hits}"
    classes = {n.node_type for n in nodes}
    assert classes.isdisjoint(case.get("undeclaredClasses", [])), classes


@pytest.mark.parametrize("name", CASES)
def test_a_hostile_extraction_is_rejected_in_code_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef, name: str
) -> None:
    case = CASES[name]
    receipt = form(store, scope, case, scripted(extraction(*case["hostile"])))

    assert decisions(receipt) == ["REJECTED"] * len(case["hostile"])
    assert all(c.rejection_reason for c in receipt.candidates)
    assert stored(store, scope) == ([], [], [])
    assert_nothing_injected(store, scope, case)


@pytest.mark.parametrize("name", CASES)
def test_a_legitimate_extraction_of_the_same_turns_is_kept(
    store: MemoryStore, scope: ScopeRef, name: str
) -> None:
    case = CASES[name]
    receipt = form(store, scope, case, scripted(extraction(*case["kept"])))

    assert decisions(receipt) == ["NEW"] * len(case["kept"])
    chunks, _, edges = stored(store, scope)
    facts = [c for c in case["kept"] if c["kind"] == "CANDIDATE_KIND_FACT"]
    assert sorted(c.text for c in chunks) == sorted(c["text"] for c in facts)
    assert len(edges) == len(case["kept"]) - len(facts)
    assert_nothing_injected(store, scope, case)


@pytest.mark.parametrize("name", CASES)
def test_the_rules_model_stores_nothing_the_injection_asks_for(
    store: MemoryStore, scope: ScopeRef, name: str
) -> None:
    case = CASES[name]
    receipt = form(store, scope, case, RulesModel())

    assert "REJECTED" not in decisions(receipt)
    assert_nothing_injected(store, scope, case)


def test_tool_output_is_memory_only_where_the_assistant_passed_it_on(
    store: MemoryStore, scope: ScopeRef
) -> None:
    case = CASES["instructions in tool output"]
    receipt = form(store, scope, case, scripted(extraction(*case["hostile"])))
    reasons = [c.rejection_reason or "" for c in receipt.candidates]
    assert all("comes from tool output" in reason for reason in reasons), reasons


@pytest.mark.parametrize("name", CASES)
def test_every_caller_string_stays_inside_the_one_data_block(name: str) -> None:
    case = CASES[name]
    data = extraction_data(turns_of(case), RECEIVED, [[] for _ in case["turns"]],
                           vocabulary_of(case))  # fmt: skip
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, data)

    assert prompt.count(DATA_OPEN) == 1 and prompt.count(DATA_CLOSE) == 1
    assert prompt.rstrip().endswith(DATA_CLOSE)
    assert read_data(prompt) == json.loads(json.dumps(data))  # read back exactly


@pytest.mark.parametrize("name", CORPUS["vocabularyNames"])
def test_a_vocabulary_name_that_tries_to_escape_is_refused(name: str) -> None:
    hostile = {"entityClasses": [{"name": name, "description": ""}], "relationTypes": []}
    with pytest.raises(InvalidArgument) as refused:
        vocabularies.validated(vocabularies.from_data(hostile))
    assert refused.value.metadata["field"] == "vocabulary.entityClasses[0].name"
