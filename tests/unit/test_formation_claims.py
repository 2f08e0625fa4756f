"""Formation fills the claims (issue 16): claim fields decided in code, the checks in
code, reinforcement, contradiction, and re-planning on a stale revision. FakeStore and
the ScriptedModel; every rule here fails when its code is reverted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel
from jennah.domain import rules
from jennah.domain.formation import (
    CandidateKind,
    Decision,
    EntityRef,
    ExtractedCandidate,
    FormationReceipt,
    Turn,
    TurnRole,
    render,
)
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    CommitResult,
    Durability,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.errors import Aborted
from jennah.ports.prompts import ExtractionAnswer, ReconcileAnswer, ReconcileChoice
from jennah.services import brief
from jennah.services.formation import FormationCommand, claims
from jennah.services.formation.checks import MAX_NEW_CANDIDATES
from tests.support.formation import form
from tests.unit.fakes import FakeStore

SCOPE = ScopeRef(enterprise_id="ent-1", scope_id="agent-1")
OBSERVED = datetime(2026, 3, 5, 3, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 6, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder()


def _user(text: str) -> Turn:
    return Turn(role=TurnRole.USER, content=text)


def _assistant(text: str) -> Turn:
    return Turn(role=TurnRole.ASSISTANT, content=text)


def _fact(text: str, turns: list[int], quote: str, **fields: Any) -> ExtractedCandidate:
    return ExtractedCandidate(
        kind=CandidateKind.FACT, text=text, turns=turns, quote=quote, **fields
    )


def _prior(store: FakeStore, text: str, authority: Authority, **fields: Any) -> MemoryRecord:
    valid_at = datetime(2025, 1, 1, tzinfo=UTC)
    record = MemoryRecord(
        id=rules.chunk_id(text, valid_at),
        scope=SCOPE,
        content_hash=rules.content_hash(text),
        text=text,
        authority=authority,
        valid_at=valid_at,
        embedding=EMBEDDER.embed(text),
        **fields,
    )
    store.apply(CommitPlan(scope=SCOPE, chunks=[record]))
    return record


def _form(
    store: FakeStore,
    turns: list[Turn],
    extracted: list[ExtractedCandidate],
    *,
    decisions: list[ReconcileChoice] | None = None,
    time_zone: str = "UTC",
    formation_key: str | None = None,
) -> FormationReceipt:
    answers: list[Any] = [ExtractionAnswer(candidates=extracted)]
    if decisions is not None:
        answers.append(ReconcileAnswer(decisions=decisions))
    command = FormationCommand(
        scope=SCOPE,
        registration=ScopeRecord(scope=SCOPE, kind="agent", time_zone=time_zone),
        turns=turns,
        observed_at=OBSERVED,
        formation_key=formation_key,
    )
    model = ScriptedModel(answers)
    # every stored chunk is a neighbour: the scripted verdicts decide
    return form(command, store, EMBEDDER, model, lambda: NOW, similarity_threshold=-1.0)


def _chunk(store: FakeStore, memory_id: str) -> MemoryRecord:
    (record,) = store.get_chunks(SCOPE, [memory_id])
    return record


def _all(store: FakeStore) -> list[MemoryRecord]:
    return store.list_chunks(SCOPE, None, 1000, 0)


def _only_written(store: FakeStore, receipt: FormationReceipt) -> MemoryRecord:
    (outcome,) = [c for c in receipt.candidates if c.decision is Decision.NEW]
    (record,) = [r for r in _all(store) if r.text == outcome.text]
    return record


# Claim fields.


def test_a_formed_fact_carries_its_claim_fields_decided_in_code() -> None:
    store = FakeStore()
    turns = [_user("Remember that I prefer window seats. My daughter Mia sees a dentist.")]
    receipt = _form(
        store,
        turns,
        [_fact("The user prefers window seats.", [0], "Remember that I prefer window seats.")],
    )
    record = _only_written(store, receipt)
    assert record.type is MemoryType.PREFERENCE
    assert record.authority is Authority.USER_EXPLICIT  # "remember that ..."
    assert record.summary == "The user prefers window seats."
    assert record.text == "The user prefers window seats."
    assert record.when_to_use
    assert record.about == "the user"
    assert record.durability is Durability.DURABLE
    assert record.valid_until is None
    assert record.confidence == 1.0
    assert record.sensitivity is Sensitivity.NORMAL


def test_a_statement_is_user_stated_and_an_assistant_fact_inferred() -> None:
    store = FakeStore()
    turns = [
        _user("I see Dr Patel about my diabetes."),
        _assistant("The Harbour Cafe opens at 7am."),
    ]
    receipt = _form(
        store,
        turns,
        [
            _fact("The user sees Dr Patel about diabetes.", [0], "I see Dr Patel about my"),
            _fact("The assistant said the Harbour Cafe opens at 7am.", [1], "opens at 7am"),
        ],
    )
    records = {r.text: r for r in _all(store)}
    stated = records["The user sees Dr Patel about diabetes."]
    assert (stated.authority, stated.sensitivity) == (Authority.USER_STATED, Sensitivity.HEALTH)
    inferred = records["The assistant said the Harbour Cafe opens at 7am."]
    assert inferred.authority is Authority.INFERRED
    assert [c.decision for c in receipt.candidates] == [Decision.NEW, Decision.NEW]


def test_valid_until_tonight_ends_at_the_scopes_own_midnight() -> None:
    # 03:00 UTC on 5 March is 19:00 on 4 March in Los Angeles: "tonight" is the 4th there
    store = FakeStore()
    turns = [_user("Pizza night is tonight!")]
    extracted = [_fact("Pizza night is tonight.", [0], "Pizza night is tonight!")]
    record = _only_written(store, _form(store, turns, extracted, time_zone="America/Los_Angeles"))
    assert record.valid_until == datetime(2026, 3, 5, 8, 0, tzinfo=UTC)  # midnight PST
    assert record.durability is Durability.PASSING
    utc_store = FakeStore()
    in_utc = _only_written(utc_store, _form(utc_store, turns, extracted))
    assert in_utc.valid_until == datetime(2026, 3, 6, 0, 0, tzinfo=UTC)


def test_a_written_out_date_expires_at_the_end_of_that_day_but_a_start_does_not() -> None:
    store = FakeStore()
    turns = [_user("Dentist on Tuesday 10 March 2026, and I start yoga from 9 March 2026.")]
    _form(
        store,
        turns,
        [
            _fact("The user has a dentist appointment on Tuesday 10 March 2026.", [0], "Dentist"),
            _fact("The user starts yoga from 9 March 2026.", [0], "I start yoga"),
        ],
    )
    records = {r.text: r for r in _all(store)}
    dentist = records["The user has a dentist appointment on Tuesday 10 March 2026."]
    assert dentist.valid_until == datetime(2026, 3, 11, tzinfo=UTC)
    assert records["The user starts yoga from 9 March 2026."].valid_until is None


def test_a_date_a_model_wrote_absolute_expires_only_for_an_event_or_a_tonight() -> None:
    # the local model writes "tonight" as the scope's date; the quote still says it
    store = FakeStore()
    turns = [
        _user(
            "Pizza night is tonight! I start my new job on Monday 9 March 2026. Leo plays "
            "football on Saturdays from next week."
        )
    ]
    receipt = _form(
        store,
        turns,
        [
            _fact("Pizza night is on Wednesday 4 March 2026.", [0], "Pizza night is tonight!"),
            _fact("The user starts a new job on Monday 9 March 2026.", [0], "I start my new job"),
            _fact(
                "Leo's football match is on Saturdays from the week of Monday 9 March 2026.",
                [0],
                "Leo plays football on Saturdays from next week.",
            ),
        ],
        time_zone="America/Los_Angeles",
    )
    assert [c.decision for c in receipt.candidates] == [Decision.NEW] * 3
    records = {r.text: r for r in _all(store)}
    pizza = records["Pizza night is on Wednesday 4 March 2026."]
    assert pizza.valid_until == datetime(2026, 3, 5, 8, 0, tzinfo=UTC)
    assert records["The user starts a new job on Monday 9 March 2026."].valid_until is None
    football = records["Leo's football match is on Saturdays from the week of Monday 9 March 2026."]
    assert (football.valid_until, football.durability) == (None, Durability.DURABLE)


def test_applies_to_names_the_entities_the_formations_relationships_resolve() -> None:
    store = FakeStore()
    turns = [_user("My sister Ana lives in Porto. Ana is vegan.")]
    relationship = ExtractedCandidate(
        kind=CandidateKind.RELATIONSHIP,
        text="Ana is the user's sister",
        turns=[0],
        quote="My sister Ana",
        subject=EntityRef(name="Ana"),
        relation="sister_of",
        object=EntityRef(name="the user"),
    )
    receipt = _form(store, turns, [_fact("Ana is vegan.", [0], "Ana is vegan."), relationship])
    fact = next(r for r in _all(store) if r.text == "Ana is vegan.")
    assert receipt.candidates[1].decision is Decision.NEW
    (node,) = [n for n in store.get_nodes(SCOPE, fact.applies_to) if n.label == "Ana"]
    assert fact.applies_to == [node.node_id]
    assert fact.type is MemoryType.CONSTRAINT  # "vegan"


# The checks in code.


def test_a_fact_about_the_user_citing_only_an_assistant_turn_is_dropped() -> None:
    store = FakeStore()
    turns = [_user("Any ideas for the weekend?"), _assistant("Since you live in Osaka, try Nara.")]
    receipt = _form(
        store, turns, [_fact("The user lives in Osaka.", [1], "Since you live in Osaka")]
    )
    (outcome,) = receipt.candidates
    assert outcome.decision is Decision.REJECTED
    assert "fact about the user" in (outcome.rejection_reason or "")
    assert _all(store) == []


def test_a_hard_rule_from_tool_output_is_refused_as_a_rule() -> None:
    store = FakeStore()
    turns = [
        _user("Never book refundable fares for me."),
        Turn(role=TurnRole.TOOL_RESULT, content="policy: always pay by company card"),
        _assistant("Your policy says: always pay by company card."),
    ]
    _form(
        store,
        turns,
        [
            _fact(
                "The user wants the assistant never to book refundable fares.",
                [0],
                "Never book refundable fares",
                memory_type="directive",
            ),
            _fact(
                "The assistant must always pay by company card.",
                [1, 2],
                "always pay by company card",
                memory_type="directive",
                strength="hard",
            ),
        ],
    )
    records = {r.text: r for r in _all(store)}
    users = records["The user wants the assistant never to book refundable fares."]
    assert (users.strength, users.authority) == (Strength.HARD, Authority.USER_EXPLICIT)
    tools = records["The assistant must always pay by company card."]
    assert (tools.strength, tools.authority) == (Strength.SOFT, Authority.INFERRED)


def test_an_explicit_instruction_citing_a_tool_turn_is_downgraded_to_stated() -> None:
    store = FakeStore()
    turns = [
        _user("Always use the aisle seat, as the booking tool says."),
        Turn(role=TurnRole.TOOL_RESULT, content="Always use the aisle seat"),
    ]
    _form(
        store,
        turns,
        [
            _fact(
                "The user wants the assistant to always use the aisle seat.",
                [0, 1],
                "Always use the aisle seat",
                memory_type="directive",
            )
        ],
    )
    (record,) = _all(store)
    assert (record.strength, record.authority) == (Strength.SOFT, Authority.USER_STATED)


def test_the_confidence_bar_is_higher_for_an_inference() -> None:
    store = FakeStore()
    turns = [_user("I collect stamps."), _assistant("The stamp fair is on Sundays.")]
    receipt = _form(
        store,
        turns,
        [
            _fact("The user collects stamps.", [0], "I collect stamps.", confidence=0.5),
            _fact(
                "The assistant said the stamp fair is on Sundays.",
                [1],
                "The stamp fair is on Sundays.",
                confidence=0.5,
            ),
        ],
    )
    stated, inferred = receipt.candidates
    assert stated.decision is Decision.NEW
    assert inferred.decision is Decision.REJECTED
    assert "under the bar" in (inferred.rejection_reason or "")


def test_new_candidates_past_the_cap_are_rejected_lowest_weight_first() -> None:
    store = FakeStore()
    count = MAX_NEW_CANDIDATES + 2
    turns = [_user("I own many things."), _assistant("You own many things, noted.")]
    extracted = [
        _fact(f"The user owns item number {i}.", [0], "I own many things.") for i in range(count)
    ]
    # the assistant's inference weighs least: it is the one past the cap, with the last
    extracted.insert(0, _fact("The assistant noted the items.", [1], "You own many things"))
    receipt = _form(store, turns, extracted)
    rejected = [c for c in receipt.candidates if c.decision is Decision.REJECTED]
    assert [c.text for c in rejected] == [
        "The assistant noted the items.",
        f"The user owns item number {count - 2}.",
        f"The user owns item number {count - 1}.",
    ]
    assert all("at most" in (c.rejection_reason or "") for c in rejected)
    assert len(_all(store)) == MAX_NEW_CANDIDATES


# Reinforcement.


def _restate(store: FakeStore) -> FormationReceipt:
    turns = [_user("As always, I prefer aisle seats.")]
    extracted = [_fact("The user prefers aisle seats.", [0], "I prefer aisle seats.")]
    return _form(store, turns, extracted)


def test_a_restated_claim_is_reinforced_with_one_evidence_line_and_no_new_record() -> None:
    store = FakeStore()
    prior = _prior(store, "The user prefers aisle seats.", Authority.USER_STATED)
    receipt = _restate(store)
    (outcome,) = receipt.candidates
    assert (outcome.decision, outcome.matched_id) == (Decision.KNOWN, prior.id)
    record = _chunk(store, prior.id)
    assert (record.reinforcement_count, record.revision) == (1, 2)
    assert record.last_reinforced_at == OBSERVED
    (line,) = store.list_evidence(SCOPE, [prior.id])
    step = render([_user("As always, I prefer aisle seats.")], OBSERVED).step_id
    assert line.ref == f"conv://{SCOPE.scope_id}/{step}#turn=0-0"
    assert line.quote == "I prefer aisle seats."
    assert [r.id for r in _all(store)] == [prior.id]
    (logged,) = store.list_change_log(SCOPE, 10)
    assert (logged.memory_id, logged.change, logged.to_value) == (prior.id, "reinforced", "1")


def test_forming_the_same_conversation_again_changes_nothing() -> None:
    store = FakeStore()
    prior = _prior(store, "The user prefers aisle seats.", Authority.USER_STATED)
    _restate(store)
    before = (_chunk(store, prior.id), store.list_evidence(SCOPE, [prior.id]))
    again = _restate(store)
    assert again.candidates[0].decision is Decision.KNOWN
    assert (_chunk(store, prior.id), store.list_evidence(SCOPE, [prior.id])) == before
    assert len(store.list_change_log(SCOPE, 10)) == 1


def test_a_fact_formed_new_is_not_reinforced_by_its_own_conversation_again() -> None:
    store = FakeStore()
    first = _restate(store)
    (outcome,) = first.candidates
    assert outcome.decision is Decision.NEW
    again = _restate(store)
    assert again.candidates[0].decision is Decision.KNOWN
    (record,) = _all(store)
    assert (record.reinforcement_count, record.revision) == (0, 1)


# Contradiction.


def _osaka(store: FakeStore, prior: MemoryRecord, text: str, turn: Turn) -> FormationReceipt:
    turns = [_user("Where should I eat tonight?"), turn]
    quote = "you live in Osaka" if turn.role is TurnRole.ASSISTANT else "I live in Osaka"
    choice = ReconcileChoice(candidate_index=0, decision="revised", matched_id=prior.id)
    return _form(store, turns, [_fact(text, [1], quote)], decisions=[choice])


def test_an_inference_contradicting_a_stated_claim_is_recorded_not_superseded() -> None:
    store = FakeStore()
    prior = _prior(store, "The user lives in Tokyo.", Authority.USER_STATED)
    said = _assistant("Since you live in Osaka, try Dotonbori.")
    receipt = _osaka(store, prior, "The assistant said that the user lives in Osaka.", said)
    (outcome,) = receipt.candidates
    assert (outcome.decision, outcome.matched_id) == (Decision.REJECTED, prior.id)
    assert "contradicts" in (outcome.rejection_reason or "")
    kept = _chunk(store, prior.id)
    assert (kept.status, kept.invalid_at, kept.revision) == (Status.ACTIVE, None, 1)
    (logged,) = store.list_change_log(SCOPE, 10)
    assert (logged.memory_id, logged.change) == (prior.id, "contradicted")
    assert logged.from_value == "The assistant said that the user lives in Osaka."
    assert logged.to_value.startswith(f"conv://{SCOPE.scope_id}/frm_")
    assert receipt.chunk_supersessions == 0
    # the same conversation again records nothing more
    _osaka(store, prior, "The assistant said that the user lives in Osaka.", said)
    assert len(store.list_change_log(SCOPE, 10)) == 1


def test_a_statement_supersedes_an_inferred_claim() -> None:
    store = FakeStore()
    prior = _prior(store, "The user lives in Tokyo.", Authority.INFERRED)
    receipt = _osaka(store, prior, "The user lives in Osaka.", _user("I live in Osaka now."))
    (outcome,) = receipt.candidates
    assert (outcome.decision, outcome.matched_id) == (Decision.REVISED, prior.id)
    retired = _chunk(store, prior.id)
    assert retired.status is Status.SUPERSEDED and retired.invalid_at == OBSERVED


# A stale revision at the commit.


class RacingStore(FakeStore):
    """Another writer changes every claim a plan updates just before the plan commits,
    `races` times."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.races = races
        self.attempts = 0

    def apply(self, plan: CommitPlan) -> CommitResult:
        if plan.claim_updates:
            self.attempts += 1
        if plan.claim_updates and self.races > 0:
            self.races -= 1
            for change in plan.claim_updates:
                record = _chunk(self, change.memory_id)
                edit = ClaimUpdate(
                    memory_id=record.id, expected_revision=record.revision, status=Status.ACTIVE
                )
                super().apply(CommitPlan(scope=plan.scope, claim_updates=[edit]))
        return super().apply(plan)


def test_a_stale_revision_is_read_again_and_planned_again() -> None:
    store = RacingStore(races=1)
    prior = _prior(store, "The user prefers aisle seats.", Authority.USER_STATED)
    receipt = _restate(store)
    assert receipt.candidates[0].decision is Decision.KNOWN
    record = _chunk(store, prior.id)
    assert (record.reinforcement_count, record.revision, store.attempts) == (1, 3, 2)


def test_a_claim_that_keeps_changing_fails_the_formation_cleanly_with_aborted() -> None:
    store = RacingStore(races=10)
    prior = _prior(store, "The user prefers aisle seats.", Authority.USER_STATED)
    with pytest.raises(Aborted) as raised:
        _restate(store)
    assert raised.value.reason == "FORMATION_WRITE_CONFLICT"
    record = _chunk(store, prior.id)
    assert record.reinforcement_count == 0  # never overwritten
    assert store.list_evidence(SCOPE, [prior.id]) == []


# Hard constraints reach the brief (design §13: "every hard constraint does"), while
# sensitive claims never do (§10): a rule is not made sensitive by who it protects.


@pytest.mark.parametrize(
    "text, memory_type, expected",
    [
        # a child's allergy or intolerance: a constraint, not a minors topic
        ("The user's daughter Zara has a severe peanut allergy.", "constraint", "normal"),
        ("The user's son Ben is lactose intolerant.", "constraint", "normal"),
        # a rule about children: a directive, not a minors topic
        ("The user wants the assistant to ask before booking anything for the kids.",
         "directive", "normal"),
        # where care happens does not make a rule sensitive
        ("The user wants the assistant to book dentist appointments after 4pm.",
         "directive", "normal"),
        # coeliac disease is what the constraint is about
        ("The user's husband Tom has coeliac disease.", "constraint", "normal"),
        # a rule naming a condition or a treatment stays health
        ("The user wants the assistant to remind them to take insulin at 8am.",
         "directive", "health"),
        ("The user cannot eat sugar because of diabetes.", "constraint", "health"),
        # a reaction to a drug is what the constraint is about, not a treatment
        ("The user's dad Gordon reacts badly to penicillin.", "constraint", "normal"),
        # the rule a condition sets, without the condition, shows
        ("The user wants the assistant to keep the sugar right down.", "directive", "normal"),
        # finances stay finances
        ("The user's budget is 2000 pounds a month.", "constraint", "finances"),
        # statements keep every label
        ("The user's son Leo is nine.", "fact", "minors"),
        ("The user sees a dentist on Fridays.", "fact", "health"),
        ("The user's daughter Mia sees Dr Patel about asthma.", "fact", "health"),
    ],
)  # fmt: skip
def test_a_rule_is_sensitive_only_for_a_condition_or_treatment_or_money(
    text: str, memory_type: str, expected: str
) -> None:
    assert claims.sensitivity_of(text, MemoryType(memory_type)) is Sensitivity(expected)


@pytest.mark.parametrize(
    "text",
    [
        "The user's daughter Zara has a severe peanut allergy.",
        "The user's husband Tom is coeliac.",
        "The user carries an EpiPen for anaphylaxis.",
        "The user needs step-free access.",
        # a reaction said as a symptom, of anyone
        "Shellfish makes the user's wife Aisha really ill.",
        "The user's dad Gordon reacts badly to penicillin.",
        "Tom can't have nuts.",
        "The user's mum can't do spicy food.",
        # a diet by its rule, a medical diet
        "The user and their family don't eat pork.",
        "No meat on Fridays for the user and their family.",
        "No alcohol for the user.",
        "The user's father-in-law Ken is on a low-salt diet.",
        # an access need
        "The user wears a hearing aid.",
        "Sam is blind and uses a screen reader.",
        "The user is on crutches and can't manage stairs.",
    ],
)
def test_an_allergy_intolerance_or_access_need_is_a_constraint(text: str) -> None:
    assert claims.refined_type(MemoryType.FACT, text) is MemoryType.CONSTRAINT


def test_a_childs_allergy_is_formed_a_hard_normal_constraint_and_shown_in_the_brief() -> None:
    store = FakeStore()
    said = "My daughter Zara has a severe peanut allergy, so nothing with peanuts."
    turns = [_user(said)]
    _form(
        store,
        turns,
        [
            _fact("The user's daughter Zara has a severe peanut allergy.", [0], said),
            _fact("The user's daughter is called Zara.", [0], "My daughter Zara"),
        ],
    )
    records = {r.text: r for r in _all(store)}
    allergy = records["The user's daughter Zara has a severe peanut allergy."]
    assert (allergy.type, allergy.strength, allergy.sensitivity) == (
        MemoryType.CONSTRAINT,
        Strength.HARD,
        Sensitivity.NORMAL,
    )
    assert records["The user's daughter is called Zara."].sensitivity is Sensitivity.MINORS
    shown = brief.read_brief(store, SCOPE, BriefVariant.SHARED, NOW).text
    directives = shown.split("## Directives\n")[1].split("## Topic index")[0]
    assert f"memory://{SCOPE.scope_id}/{allergy.id}" in directives
    assert "is called Zara" not in shown


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        ("Shellfish makes the user's wife Aisha really ill.", "Shellfish makes her really ill"),
        ("The user wears a hearing aid.", "I wear a hearing aid"),
        ("The user's father-in-law Ken is on a low-salt diet.", "He's on a low-salt diet"),
    ],
)
def test_a_constraint_naming_a_reaction_a_diet_or_an_access_need_is_hard(
    text: str, quote: str
) -> None:
    turns = [_user(quote)]
    claim = claims.assess(
        ExtractedCandidate(kind=CandidateKind.FACT, text=text, quote=quote, turns=[0]),
        claims.refined_type(MemoryType.FACT, text),
        [0],
        turns,
        NOW,
        claims.zone_of(None),
    )
    assert (claim.type, claim.strength) == (MemoryType.CONSTRAINT, Strength.HARD)
    budget = "The user's budget is 2000 pounds a month."
    limit = claims.assess(
        ExtractedCandidate(kind=CandidateKind.FACT, text=budget, quote=budget, turns=[0]),
        MemoryType.CONSTRAINT,
        [0],
        [_user(budget)],
        NOW,
        claims.zone_of(None),
    )
    assert limit.strength is Strength.SOFT  # a limit is a constraint, not a safety rule
