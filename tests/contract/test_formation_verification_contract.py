"""Contract: candidates verified in code (turns, quote, attributes, metadata room, shape),
classes from the vocabulary, and the candidate cap."""

from __future__ import annotations

from typing import Any

from jennah.domain import rules
from jennah.domain.formation import (
    MAX_CANDIDATES,
    SOURCE_STEP,
    SOURCE_TURNS,
    Decision,
    render,
)
from jennah.domain.models import Direction, MemoryType, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import NodeInput
from jennah.services.formation.candidates import node_id
from jennah.services.formation.checks import MAX_NEW_CANDIDATES
from tests.contract.conftest import commit_items
from tests.contract.formation_support import (
    RECEIVED,
    assistant,
    chunk,
    decisions,
    evidence_lines,
    extraction,
    fact,
    relationship,
    run,
    scripted,
    user,
    written_rows,
)

TURNS = [
    user("I live in Tokyo and I work at Alphaus."),
    assistant("Noted."),
    user("My team lead is Ana."),
]
STEP = render(TURNS, RECEIVED).step_id
LIVES = "The user lives in Tokyo."


def _form(store: MemoryStore, scope: ScopeRef, *candidates: dict[str, Any], **extra: Any) -> Any:
    model = scripted(extraction(*candidates))
    receipt = run(store, scope, TURNS, model, **extra)
    assert len(model.calls) == 1
    return receipt


def test_attribution_to_turns_that_do_not_exist_leaves_source_turns_absent(
    store: MemoryStore, scope: ScopeRef
) -> None:
    receipt = _form(
        store,
        scope,
        fact(LIVES, [0, 7], "I live in Tokyo"),
        fact("The user's team lead is Ana.", [], "My team lead is Ana"),
    )
    assert decisions(receipt) == ["NEW", "NEW"]
    for text in (LIVES, "The user's team lead is Ana."):
        assert chunk(store, scope, text).metadata == {SOURCE_STEP: STEP}  # turn 0 ≠ absent
    refs = sorted(ref for _, ref, _ in evidence_lines(store, scope))
    assert refs == [f"conv://{scope.scope_id}/{STEP}"] * 2


def test_usable_attribution_records_ascending_turns_and_evidence(
    store: MemoryStore, scope: ScopeRef
) -> None:
    text = "The user, who lives in Tokyo, has Ana as team lead."
    _form(store, scope, fact(text, [2, 0, 2], "My team lead is Ana"))
    assert chunk(store, scope, text).metadata == {SOURCE_STEP: STEP, SOURCE_TURNS: "0,2"}
    assert evidence_lines(store, scope) == [
        (
            rules.chunk_id(text, None),
            f"conv://{scope.scope_id}/{STEP}#turn=0-2",
            "My team lead is Ana",
        )
    ]


def test_a_quote_differing_only_by_case_quotation_marks_or_spacing_attributes(
    store: MemoryStore, scope: ScopeRef
) -> None:
    turns = [
        user("I'm moving to Osaka.\nMy manager  said \u201cship it on Friday\u201d."),
        assistant("Noted."),
    ]
    moving, shipping = "The user is moving to Osaka.", "The user's manager said to ship Friday."
    model = scripted(
        extraction(
            fact(moving, [0], "i\u2019M MOVING to osaka"),  # case and a curly apostrophe
            fact(shipping, [0], 'Osaka. my manager said\n"SHIP it   on friday"'),  # spacing
        )
    )
    receipt = run(store, scope, turns, model)
    assert decisions(receipt) == ["NEW", "NEW"]
    step = render(turns, RECEIVED).step_id
    for text in (moving, shipping):
        assert chunk(store, scope, text).metadata == {SOURCE_STEP: step, SOURCE_TURNS: "0"}


def test_an_unusable_attribution_drops_source_turns_never_the_fact(
    store: MemoryStore, scope: ScopeRef
) -> None:
    kyoto, alphaus, tea = (
        "The user lives in Kyoto.", "The user works at Alphaus.", "The user likes tea."
    )  # fmt: skip
    receipt = _form(
        store,
        scope,
        fact(LIVES, [2], "I live in Tokyo"),  # said in turn 0, not in the turn it cites
        fact(kyoto, [0], "I live in Kyoto"),  # in no turn at all
        fact(alphaus, [], "I work at Alphaus"),  # no turn cited
        fact(tea, [0], ""),  # no quote
    )
    # an unusable attribution keeps the fact; words nobody said are no fact at all
    assert decisions(receipt) == ["NEW", "REJECTED", "NEW", "REJECTED"]
    kyoto_reason, tea_reason = (
        receipt.candidates[1].rejection_reason,
        receipt.candidates[3].rejection_reason,
    )
    assert kyoto_reason is not None and "does not appear in the conversation" in kyoto_reason
    assert tea_reason is not None and "no quote" in tea_reason
    for text in (LIVES, alphaus):
        assert chunk(store, scope, text).metadata == {SOURCE_STEP: STEP}  # no source_turns
    refs = sorted(ref for _, ref, _ in evidence_lines(store, scope))
    assert refs == [f"conv://{scope.scope_id}/{STEP}"] * 2  # the conversation, no turn


def test_reserved_attribute_keys_are_rejected_naming_the_key(
    store: MemoryStore, scope: ScopeRef
) -> None:
    receipt = _form(
        store,
        scope,
        fact(LIVES, [0], "I live in Tokyo", attributes={"jennah.source_step": "frm_other"}),
        relationship(
            "the user", "WORKS_AT", "Alphaus", [0], "work at Alphaus", attributes={"jennah.x": "1"}
        ),
    )
    assert decisions(receipt) == ["REJECTED", "REJECTED"]
    assert "'jennah.source_step'" in (receipt.candidates[0].rejection_reason or "")
    assert "'jennah.x'" in (receipt.candidates[1].rejection_reason or "")
    assert written_rows(store, scope) == {}


def test_attributes_must_leave_room_for_provenance(store: MemoryStore, scope: ScopeRef) -> None:
    many = {f"a{i}": "v" for i in range(rules.MAX_METADATA_KEYS - 1)}
    fewer = {f"a{i}": "v" for i in range(rules.MAX_METADATA_KEYS - 2)}
    receipt = _form(
        store,
        scope,
        fact(LIVES, [0], "I live in Tokyo", attributes=many),  # 15 + 2 > 16
        fact("The user works at Alphaus.", [9], "I work at Alphaus", attributes=many),  # 15 + 1
        fact("The user's team lead is Ana.", [2], "team lead is Ana", attributes=fewer),
    )
    assert decisions(receipt) == ["REJECTED", "NEW", "NEW"]
    reason = receipt.candidates[0].rejection_reason or ""
    assert f"{rules.MAX_METADATA_KEYS} keys" in reason and "2 provenance keys" in reason
    assert len(chunk(store, scope, "The user works at Alphaus.").metadata) == 16
    stored = chunk(store, scope, "The user's team lead is Ana.").metadata
    assert stored == {**fewer, SOURCE_STEP: STEP, SOURCE_TURNS: "2"}


def test_attributes_are_validated_like_metadata(store: MemoryStore, scope: ScopeRef) -> None:
    receipt = _form(
        store,
        scope,
        fact(LIVES, [0], "I live in Tokyo", attributes={"bad key!": "v"}),
        fact("The user works at Alphaus.", [0], "I work at Alphaus", attributes={"k": "x" * 1025}),
    )
    assert decisions(receipt) == ["REJECTED", "REJECTED"]
    assert "'bad key!'" in (receipt.candidates[0].rejection_reason or "")
    assert "1024" in (receipt.candidates[1].rejection_reason or "")


def test_a_fact_needs_text_and_its_memory_type_is_never_lost(
    store: MemoryStore, scope: ScopeRef
) -> None:
    named = {
        LIVES: ("rumour", MemoryType.FACT),  # unknown: a fact, kept
        "The user works at Alphaus.": ("Identity", MemoryType.IDENTITY),
        "The user prefers tea.": ("preferences", MemoryType.PREFERENCE),
        "Always reply in English.": ("instruction", MemoryType.DIRECTIVE),
        "The user's team lead is Ana.": ("relationship", MemoryType.FACT),
    }
    receipt = _form(
        store,
        scope,
        *(fact(text, [0], "I live in Tokyo", memory_type=t) for text, (t, _) in named.items()),
        fact("  ", [0], "I live in Tokyo"),
    )
    assert decisions(receipt) == ["NEW"] * len(named) + ["REJECTED"]
    assert "no text" in (receipt.candidates[-1].rejection_reason or "")
    for text, (_, memory_type) in named.items():
        assert chunk(store, scope, text).type is memory_type


def test_relationships_need_both_ends_and_a_relation(store: MemoryStore, scope: ScopeRef) -> None:
    receipt = _form(
        store,
        scope,
        relationship("the user", "WORKS_AT", "", [0], "work at Alphaus"),
        relationship("the user", "  ", "Alphaus", [0], "work at Alphaus"),
        relationship("the user", " works at ", "Alphaus", [0], "work at Alphaus"),
    )
    assert decisions(receipt) == ["REJECTED", "REJECTED", "NEW"]
    (edge,) = store.edges_touching(scope, [node_id("the user")], [], Direction.OUTBOUND, None)
    assert edge.relation == "works at"  # as extracted (surrounding spaces aside)


def test_relations_are_recorded_exactly_as_extracted_in_any_script(
    store: MemoryStore, scope: ScopeRef
) -> None:
    relations = ["勤務先", "работает_в", "is Ana's manager (since 2020)", "R" * 64]
    receipt = _form(
        store,
        scope,
        *(relationship("the user", r, f"Org {i}", [0], "Alphaus") for i, r in enumerate(relations)),
        relationship("the user", "R" * 65, "Org 9", [0], "Alphaus"),
        relationship("the user", "works\nat", "Org 10", [0], "Alphaus"),
    )
    assert decisions(receipt) == ["NEW"] * 4 + ["REJECTED"] * 2
    assert "65 characters; at most 64" in (receipt.candidates[4].rejection_reason or "")
    assert "control character" in (receipt.candidates[5].rejection_reason or "")
    edges = store.edges_touching(scope, [node_id("the user")], [], Direction.OUTBOUND, None)
    assert sorted(e.relation for e in edges) == sorted(relations)
    (japanese,) = store.edges_touching(
        scope, [node_id("the user")], ["勤務先"], Direction.OUTBOUND, None
    )
    assert japanese.target == node_id("Org 0")


def test_entity_classes_of_any_script_come_from_the_vocabulary(
    store: MemoryStore, scope: ScopeRef
) -> None:
    vocabulary = {
        "entityClasses": [{"name": "人物", "description": ""}, {"name": "組織", "description": ""}],
        "relationTypes": [{"name": "勤務先", "description": ""}],
    }
    model = scripted(
        extraction(
            relationship(
                "the user", "勤務先", "Alphaus", [0], "work at Alphaus",
                subject_class="人物", object_class="会社",
            )
        )
    )  # fmt: skip
    run(store, scope, TURNS, model, vocabulary=vocabulary)
    nodes = store.get_nodes(scope, [node_id("the user"), node_id("Alphaus")])
    assert {n.label: n.node_type for n in nodes} == {
        "the user": "人物", "Alphaus": None,  # 会社 is not declared: no class
    }  # fmt: skip


def test_entity_classes_come_only_from_the_vocabulary(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, nodes=[NodeInput(node_id=node_id("Ana"), label="Ana")])
    vocabulary = {
        "entityClasses": [{"name": "Person", "description": "a human"}],
        "relationTypes": [{"name": "REPORTS_TO", "description": ""}],
    }
    model = scripted(
        extraction(
            relationship(
                "the user",
                "REPORTS_TO",
                "Ana",
                [2],
                "team lead is Ana",
                subject_class="Entity",
                object_class="Person",
            )
        )
    )
    run(store, scope, TURNS, model, vocabulary=vocabulary)

    assert model.calls[0].data["vocabulary"] == vocabulary
    the_user, ana = store.get_nodes(scope, [node_id("the user"), node_id("Ana")])
    assert {the_user.node_id: the_user.node_type, ana.node_id: ana.node_type} == {
        node_id("the user"): None,  # "Entity" is not declared: no class, never a placeholder
        node_id("Ana"): "Person",  # an unclassified node may be given its class
    }


def test_candidates_over_the_cap_are_dropped(store: MemoryStore, scope: ScopeRef) -> None:
    texts = [f"The user noted item number {i}." for i in range(MAX_CANDIDATES + 6)]
    turns = [user(" ".join(texts))]
    model = scripted(extraction(*(fact(t, [0]) for t in texts)))
    receipt = run(store, scope, turns, model)

    assert len(receipt.candidates) == MAX_CANDIDATES
    assert (receipt.candidates_dropped, receipt.candidate_cap) == (6, 64)
    assert [c.text for c in receipt.candidates] == texts[:MAX_CANDIDATES]
    # of the kept candidates, at most MAX_NEW_CANDIDATES are new (issue 16): the rest,
    # equal in weight, are rejected in extraction order, naming the cap
    assert written_rows(store, scope)["memory_records"] == MAX_NEW_CANDIDATES
    over = receipt.candidates[MAX_NEW_CANDIDATES:]
    assert {c.decision for c in over} == {Decision.REJECTED}
    assert all(f"at most {MAX_NEW_CANDIDATES} new" in (c.rejection_reason or "") for c in over)


def test_a_rejected_candidate_never_reaches_reconciliation(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form(store, scope, fact(LIVES, [0], "I live in Tokyo"))
    osaka = fact("The user lives in Osaka.", [0], "Osaka", attributes={"jennah.x": "1"})
    model = scripted(extraction(osaka))
    receipt = run(store, scope, [user("I moved to Osaka.")], model)
    assert len(model.calls) == 1 and decisions(receipt) == ["REJECTED"]
    assert receipt.candidates[0].matched_id is None
    assert Decision.REJECTED is receipt.candidates[0].decision
