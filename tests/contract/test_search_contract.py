"""Contract: memory:search (jennah.services.search) on every store.

The hybrid search finds a claim by a word with a typo ("dentits" -> "dentist") and by a
word inside a longer one ("dentist" -> "orthodontist"); only active, unexpired claims
are candidates (not dormant, retracted, superseded, or past their validUntil); a
sensitive claim is a candidate with its label; a claim found by meaning and by words
is one candidate.
"""

from __future__ import annotations

from datetime import timedelta

from jennah.domain.models import ScopeRef, Sensitivity, Status
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, SupersessionInput
from jennah.services.search import SearchCommand, SearchResult, search
from tests.contract.conftest import EMBEDDER, NOW, chunk_id, commit_items

DENTIST = "Sam has a dentist appointment on Friday"
ORTHODONTIST = "The orthodontist fitted braces for Mia"
INSULIN = "Sam takes insulin every morning"
OLD_PHARMACY = "The pharmacy on Elm Street closed"
PHARMACY = "The pharmacy on Oak Street fills the prescriptions"
CORPUS = [
    ChunkInput(text=DENTIST, summary="Dentist appointment Friday"),
    ChunkInput(text=ORTHODONTIST),
    ChunkInput(text=INSULIN, sensitivity=Sensitivity.HEALTH),
    ChunkInput(text="Mia plays football on Saturdays"),
    ChunkInput(text="Grandma visits in December"),
    ChunkInput(text=OLD_PHARMACY),
    ChunkInput(text="Sam's dentist used to be downtown", status=Status.DORMANT),
    ChunkInput(text="A dentist appointment we forgot", status=Status.RETRACTED),
    ChunkInput(text="The dentist appointment moved to Thursday",
               valid_until=NOW - timedelta(days=1)),
]  # fmt: skip


def find(store: MemoryStore, scope: ScopeRef, query: str, max_items: int = 5) -> SearchResult:
    # a scope id of 38 characters makes each reference cost ~50 tokens: budget them all
    command = SearchCommand(scope=scope, query=query, max_items=max_items, token_budget=2000)
    return search(command, store, EMBEDDER, lambda: NOW)


def texts(store: MemoryStore, scope: ScopeRef, query: str, max_items: int = 5) -> list[str]:
    found = find(store, scope, query, max_items).rendered.candidates
    by_id = {r.id: r.text for r in store.get_chunks(scope, [c.memory_id for c in found])}
    return [by_id[c.memory_id] for c in found]


def seeded(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(store, scope, chunks=CORPUS)
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id(OLD_PHARMACY), replacement_chunk=ChunkInput(text=PHARMACY)
            )
        ],
    )
    return scope


def test_a_word_with_a_typo_finds_its_claim(store: MemoryStore, scope: ScopeRef) -> None:
    seeded(store, scope)
    assert DENTIST in texts(store, scope, "dentits")
    assert DENTIST in texts(store, scope, "when is the dentits apointment")
    assert INSULIN in texts(store, scope, "insluin")


FILLERS = [
    "Mia plays football on Saturdays", "Grandma visits in December", "Leo likes green tea",
    "The car needs new tyres", "Ava sings in the choir", "Noah collects stamps",
    "The garden gate is broken", "Zoe reads before bed",
]  # fmt: skip


def test_a_word_inside_a_longer_one_finds_its_claim(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text=t) for t in [ORTHODONTIST, *FILLERS]])
    # no word in common, so not among the 3 by meaning that lead: found by letter trigrams
    lead = store.search_chunks(scope, EMBEDDER.embed("dentist"), 3, [], NOW)
    assert chunk_id(ORTHODONTIST) not in {hit.record.id for hit in lead}
    assert ORTHODONTIST in texts(store, scope, "dentist", max_items=4)


def test_only_active_unexpired_claims_are_candidates(store: MemoryStore, scope: ScopeRef) -> None:
    seeded(store, scope)
    found = texts(store, scope, "dentist appointment pharmacy street", max_items=20)
    assert DENTIST in found and PHARMACY in found
    for gone in (
        "Sam's dentist used to be downtown",  # dormant
        "A dentist appointment we forgot",  # retracted
        "The dentist appointment moved to Thursday",  # validUntil passed
        OLD_PHARMACY,  # superseded
    ):
        assert gone not in found


def test_a_sensitive_claim_is_a_candidate_with_its_label(
    store: MemoryStore, scope: ScopeRef
) -> None:
    seeded(store, scope)
    rendered = find(store, scope, "insulin").rendered
    first = rendered.candidates[0]
    assert (first.summary, first.sensitivity) == (INSULIN, Sensitivity.HEALTH)
    # formedAt is the commit's time and NOW a fixed later instant: the age is not "today"
    assert f'(fact, {first.age}, sensitive: health) "{INSULIN}" {first.ref}' in rendered.text


def test_a_claim_found_by_meaning_and_by_words_is_one_candidate(
    store: MemoryStore, scope: ScopeRef
) -> None:
    seeded(store, scope)
    found = find(store, scope, "Sam dentist appointment Friday", max_items=20).rendered
    refs = [c.ref for c in found.candidates]
    assert len(refs) == len(set(refs))
    assert refs[0] == f"memory://{scope.scope_id}/{chunk_id(DENTIST)}"
    assert found.candidates[0].summary == "Dentist appointment Friday"
