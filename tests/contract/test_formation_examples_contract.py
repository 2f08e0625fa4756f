"""Contract: every example of the memory:form spec, formed on both stores."""

from __future__ import annotations

from jennah.domain import rules
from jennah.domain.formation import (
    SOURCE_STEP,
    SOURCE_TURNS,
    TURN_OFFSETS,
    CandidateKind,
    Decision,
    SummarizedStructures,
    render,
)
from jennah.domain.models import Direction, MemoryType, MetadataFilter, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import GraphQuery, Traversal
from jennah.services.formation.candidates import node_id
from tests.contract.conftest import graph, search_ids
from tests.contract.formation_support import (
    RECEIVED,
    assistant,
    at,
    chunk,
    decisions,
    extraction,
    fact,
    relationship,
    run,
    scripted,
    user,
    verdicts,
    written_rows,
)

THREE_TURNS = [
    user("I live in Tokyo and I work at Alphaus."),
    assistant("Noted. Anything else about your setup?"),
    user("I prefer dark mode in every tool."),
]
THREE_TURN_EXTRACTION = extraction(
    fact("The user lives in Tokyo.", [0], "I live in Tokyo"),
    fact("The user works at Alphaus.", [0], "I work at Alphaus"),
    fact(
        "The user prefers dark mode in every tool.",
        [2],
        "I prefer dark mode in every tool.",
        memory_type="preference",
    ),
    relationship("the user", "LIVES_IN", "Tokyo", [0], "I live in Tokyo"),
    relationship("the user", "WORKS_AT", "Alphaus", [0], "I work at Alphaus"),
)


def test_the_three_turn_request_forms_facts_and_relationships(
    store: MemoryStore, scope: ScopeRef
) -> None:
    model = scripted(THREE_TURN_EXTRACTION)
    receipt = run(store, scope, THREE_TURNS, model)

    assert len(model.calls) == 1  # an empty workspace: nothing to reconcile against
    assert decisions(receipt) == ["NEW"] * 5
    assert [c.kind for c in receipt.candidates] == [CandidateKind.FACT] * 3 + [
        CandidateKind.RELATIONSHIP
    ] * 2
    assert all(c.candidate_id.startswith("fct_") for c in receipt.candidates[:3])
    assert all(c.candidate_id.startswith("rel_") for c in receipt.candidates[3:])
    assert receipt.commit_timestamp is not None and receipt.commit_timestamp >= RECEIVED
    assert (receipt.chunk_supersessions, receipt.edge_supersessions) == (0, 0)
    assert receipt.execution_log_rows == 1
    assert receipt.formation_units == 1 and receipt.input_tokens > 0 and receipt.output_tokens > 0
    assert not receipt.replay

    step_id = render(THREE_TURNS, RECEIVED).step_id
    tokyo = chunk(store, scope, "The user lives in Tokyo.")
    assert tokyo.valid_at is None  # no observedAt: valid for all past time
    assert tokyo.metadata == {SOURCE_STEP: step_id, SOURCE_TURNS: "0"}
    dark = chunk(store, scope, "The user prefers dark mode in every tool.")
    assert dark.type is MemoryType.PREFERENCE and dark.metadata[SOURCE_TURNS] == "2"
    step = store.get_step(scope, step_id)
    assert step is not None
    assert step.metadata[TURN_OFFSETS] == ",".join(
        str(o) for o in render(THREE_TURNS, RECEIVED).offsets
    )
    assert store.get_scope(scope) is not None  # the first write registered the workspace

    user_node, tokyo_node = node_id("the user"), node_id("Tokyo")
    edges = store.edges_touching(scope, [user_node], [], Direction.OUTBOUND, None)
    assert sorted((e.relation, e.target) for e in edges) == sorted(
        [("LIVES_IN", tokyo_node), ("WORKS_AT", node_id("Alphaus"))]
    )
    assert all(e.valid_at == RECEIVED for e in edges)  # relationships start at receipt
    (tokyo_label,) = store.get_nodes(scope, [tokyo_node])
    assert tokyo_label.label == "Tokyo" and tokyo_label.node_type is None


def _form_tokyo(store: MemoryStore, scope: ScopeRef) -> None:
    run(
        store,
        scope,
        [user("I live in Tokyo.")],
        scripted(
            extraction(
                fact("The user lives in Tokyo.", [0], "I live in Tokyo"),
                relationship("the user", "LIVES_IN", "Tokyo", [0], "I live in Tokyo"),
            )
        ),
        received=at(2026, 8, 1),
    )


def test_tokyo_revised_to_osaka_closes_the_prior_window(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    tokyo_id = rules.chunk_id("The user lives in Tokyo.", None)
    tokyo_edge = rules.edge_id(node_id("the user"), "LIVES_IN", node_id("Tokyo"), at(2026, 8, 1))
    model = scripted(
        extraction(
            fact("The user lives in Osaka.", [0], "I moved to Osaka"),
            relationship("the user", "LIVES_IN", "Osaka", [0], "I moved to Osaka"),
        ),
        verdicts(
            ("The user lives in Osaka.", "revised", tokyo_id),
            ("the user LIVES_IN Osaka", "revised", tokyo_edge),
        ),
    )
    receipt = run(store, scope, [user("I moved to Osaka last month.")], model)

    assert len(model.calls) == 2
    assert (receipt.chunk_supersessions, receipt.edge_supersessions) == (1, 1)
    osaka = receipt.candidates[0]
    assert osaka.decision is Decision.REVISED and osaka.matched_id == tokyo_id
    assert osaka.kind is CandidateKind.FACT and osaka.text == "The user lives in Osaka."
    assert receipt.candidates[1].matched_id == tokyo_edge
    osaka_id = rules.chunk_id("The user lives in Osaka.", RECEIVED)
    tokyo = chunk(store, scope, "The user lives in Tokyo.")
    assert (tokyo.invalid_at, tokyo.superseded_by) == (RECEIVED, osaka_id)
    assert chunk(store, scope, "The user lives in Osaka.", RECEIVED).supersedes == tokyo_id
    # history stays queryable: before the revision, Tokyo; after it, Osaka
    assert search_ids(store, scope, "where does the user live", as_of=at(2026, 8, 10))[0] == (
        tokyo_id
    )
    assert search_ids(store, scope, "where does the user live", as_of=at(2026, 9, 1))[0] == (
        osaka_id
    )
    (closed,) = store.get_edges(scope, [tokyo_edge])
    assert closed.invalid_at == RECEIVED


def test_an_older_conversation_cannot_retire_newer_memory(
    store: MemoryStore, scope: ScopeRef
) -> None:
    run(
        store,
        scope,
        [user("I live in Tokyo.")],
        scripted(extraction(fact("The user lives in Tokyo.", [0], "I live in Tokyo"))),
        observed_at=at(2026),
    )
    tokyo_id = rules.chunk_id("The user lives in Tokyo.", at(2026))
    before = written_rows(store, scope)
    model = scripted(
        extraction(fact("The user lived in Osaka before moving.", [0], "I used to live in Osaka")),
        verdicts(("The user lived in Osaka before moving.", "revised", tokyo_id)),
    )
    receipt = run(
        store,
        scope,
        [user("I used to live in Osaka before moving.")],
        model,
        observed_at=at(2023, 5, 20, 12, 17),
    )

    (candidate,) = receipt.candidates
    assert candidate.decision is Decision.REJECTED and candidate.matched_id is None
    assert candidate.rejection_reason is not None
    assert tokyo_id in candidate.rejection_reason and "2026" in candidate.rejection_reason
    assert receipt.chunk_supersessions == 0 and receipt.execution_log_rows == 0
    tokyo = chunk(store, scope, "The user lives in Tokyo.", at(2026))
    assert tokyo.invalid_at is None and tokyo.superseded_by is None
    assert written_rows(store, scope) == before  # no supersession, no step, nothing


def test_two_revisions_of_one_edge_retire_it_once(store: MemoryStore, scope: ScopeRef) -> None:
    run(
        store,
        scope,
        [user("B owns T.")],
        scripted(extraction(relationship("B", "OWNS", "T", [0], "B owns T"))),
        received=at(2026, 8, 1),
    )
    owns = rules.edge_id(node_id("B"), "OWNS", node_id("T"), at(2026, 8, 1))
    model = scripted(
        extraction(
            relationship("A", "OWNS", "T", [0], "A owns T now"),
            relationship("B", "REPORTS_TO", "A", [0], "B reports to A"),
        ),
        verdicts(("A OWNS T", "revised", owns), ("B REPORTS_TO A", "revised", owns)),
    )
    receipt = run(store, scope, [user("A owns T now, and B reports to A.")], model)

    assert decisions(receipt) == ["REVISED", "REVISED"]
    assert {c.matched_id for c in receipt.candidates} == {owns}
    assert receipt.edge_supersessions == 1
    a_owns = rules.edge_id(node_id("A"), "OWNS", node_id("T"), RECEIVED)
    reports = rules.edge_id(node_id("B"), "REPORTS_TO", node_id("A"), RECEIVED)
    (old,) = store.get_edges(scope, [owns])
    assert (old.invalid_at, old.superseded_by) == (RECEIVED, a_owns)
    replacements = store.get_edges(scope, [a_owns, reports])
    assert [e.valid_at for e in replacements] == [RECEIVED, RECEIVED]  # the same instant
    assert {e.supersedes for e in replacements} == {owns}
    everything = GraphQuery(
        start_filters=[MetadataFilter(key="Label", values=["B"])],
        traversal=Traversal(relations=[], direction=Direction.OUTBOUND, depth=1),
    )
    now = graph(store, scope, everything.model_copy(update={"as_of_valid": at(2026, 9, 1)}))
    before = graph(store, scope, everything.model_copy(update={"as_of_valid": at(2026, 8, 2)}))
    assert now.graph is not None and before.graph is not None
    assert [e.relation for e in now.graph.edges] == ["REPORTS_TO"]
    assert [e.relation for e in before.graph.edges] == ["OWNS"]


def test_what_the_assistant_recommended_is_stored_as_its_statement(
    store: MemoryStore, scope: ScopeRef
) -> None:
    turns = [
        user("Where can I get good nasi goreng in Sydney?"),
        assistant("I recommend Miss Bee Providore for nasi goreng. Happy to help with more!"),
        user("Thanks!"),
    ]
    text = "The assistant recommended Miss Bee Providore for nasi goreng."
    model = scripted(extraction(fact(text, [1], "I recommend Miss Bee Providore for nasi goreng.")))
    receipt = run(store, scope, turns, model)

    (candidate,) = receipt.candidates
    assert (candidate.text, candidate.decision) == (text, Decision.NEW)
    assert candidate.candidate_id.startswith("fct_")
    record = chunk(store, scope, text)
    assert record.metadata[SOURCE_TURNS] == "1"
    assert search_ids(store, scope, "the restaurant the assistant recommended")[0] == record.id


SHIFTS = "| agent | shift |\n|---|---|\n| Admon | early |\n| Bea | late |"
ROTATION_TURNS = [
    user(f"Here is our shift rotation:\n\n{SHIFTS}\n\nPlease remember it."),
    assistant("Got it."),
    user("And the deploy script:\n```sh\nmake deploy\n```"),
]


def test_a_table_kept_verbatim_preserves_structure(store: MemoryStore, scope: ScopeRef) -> None:
    text = f"Shift rotation:\n\n{SHIFTS}"
    model = scripted(extraction(fact(text, [0], SHIFTS)))
    receipt = run(store, scope, ROTATION_TURNS, model)

    (candidate,) = receipt.candidates
    assert candidate.preserves_structure and candidate.decision is Decision.NEW
    assert chunk(store, scope, text).text == text
    # the table is kept; the code block of turn 2 formed nothing and is reported
    assert receipt.summarized_structures == [
        SummarizedStructures(turn_index=2, description="1 code block", summarized_count=1)
    ]


def test_github_flavoured_tables_and_fences_are_structure(
    store: MemoryStore, scope: ScopeRef
) -> None:
    rota = "agent | shift\n:-- | --:\nAdmon | early"  # no outer pipes, aligned
    readme = "````md\n```sh\nmake deploy\n```\n````"  # ``` inside ```` does not close it
    turns = [user(f"Rota:\n{rota}\n\nREADME:\n{readme}\n")]
    kept = f"The rota:\n{rota}"
    model = scripted(
        extraction(fact(kept, [0], "Admon | early"), fact("Deploy with make.", [0], "make"))
    )
    receipt = run(store, scope, turns, model)

    assert [c.preserves_structure for c in receipt.candidates] == [True, False]
    assert model.calls[0].data["structures"] == [
        {"turnIndex": 0, "kind": "table", "text": rota},
        {"turnIndex": 0, "kind": "code block", "text": readme},
    ]
    assert receipt.summarized_structures == [
        SummarizedStructures(turn_index=0, description="1 code block", summarized_count=1)
    ]


def test_a_summarized_table_is_reported(store: MemoryStore, scope: ScopeRef) -> None:
    model = scripted(
        extraction(
            fact("Admon works the early shift.", [0], "| Admon | early |"),
            fact("The deploy script runs make deploy.", [2], "make deploy"),
        )
    )
    receipt = run(store, scope, ROTATION_TURNS, model)

    assert [c.preserves_structure for c in receipt.candidates] == [False, False]
    assert receipt.summarized_structures == [
        SummarizedStructures(turn_index=0, description="1 table", summarized_count=1),
        SummarizedStructures(turn_index=2, description="1 code block", summarized_count=1),
    ]
