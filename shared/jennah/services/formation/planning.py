"""Planning: the decided candidates as ONE CommitPlan (chunks, nodes, edges,
supersessions, evidence and the execution-log step).

Valid time:
- a NEW fact starts at observedAt; without observedAt it has no validAt (valid
  for all past time), except when that row exists already with a closed
  window: a statement made now cannot reopen it, so the fact starts at the
  receipt time instead;
- a NEW relationship starts at observedAt, else at the receipt time (its id is
  derived before the commit, so the receipt time stands for the commit time);
- a REVISED candidate's replacement starts at the boundary (observedAt, else the
  receipt time), and the revised memory's window closes there. A memory
  retired by several revisions is closed ONCE, `superseded_by` naming the first
  replacement in candidate order; every replacement names it in `supersedes`.

Provenance: every written fact chunk carries `jennah.source_step` (the step id)
and, when attribution is usable, `jennah.source_turns` (ascending turn
numbers), and gets an evidence line (ref `conv://{scope}/{stepId}#turn=a-b`,
the quote, recorded at the receipt time). Chunks are create-or-replace on their
content-derived id, so a fact stated as NEW again names the later conversation;
KNOWN candidates keep the provenance they have. The step is written
(idempotently) whenever the plan writes memory; `execution_log_rows` is 0 when it
existed already (the same conversation formed before).

Claims: a formed fact's record carries the claim fields code decided
(`claims.assess`, after the checks in `checks`): type, about, summary, body (the
text), whenToUse, authority, strength, confidence, durability, validUntil and
sensitivity; and `applies_to`, the node ids of the entities this formation's
relationships name that its text mentions.

Reinforcement: a KNOWN fact reinforces the active claim it restates, with a
ClaimUpdate under the revision read while planning (reinforcement_count + 1,
last_reinforced_at = the boundary, never earlier than it was), ONE evidence line
(`conv://{scope}/{stepId}#turn=a-b`, the quote, recorded at the receipt time) and
a "reinforced" change-log line, and writes no new record. Only when the claim's
evidence has no line of this step yet: forming the same conversation again (a
replay without its formationKey) changes nothing.

Contradiction: an inference that contradicts a claim the user stated is REJECTED
(`verdicts`); the kept claim gets a "contradicted" change-log line (from: the
candidate's words, to: its conv:// ref), the first time the conversation is formed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from jennah.domain import rules
from jennah.domain.formation import (
    SOURCE_STEP,
    SOURCE_TURNS,
    TURN_OFFSETS,
    Decision,
    RenderedConversation,
)
from jennah.domain.models import (
    Authority,
    ChangeLogEntry,
    ClaimUpdate,
    CommitPlan,
    Evidence,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRef,
    Status,
    Supersession,
)
from jennah.domain.references import conv_ref
from jennah.ports.store import MemoryStore
from jennah.services.formation.candidates import Candidate, ContentKey, Entity


@dataclass(frozen=True)
class PlanContext:
    scope: ScopeRef
    rendered: RenderedConversation
    received_at: datetime
    observed_at: datetime | None
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))  # the scope's

    @property
    def boundary(self) -> datetime:
        return self.observed_at or self.received_at

    @property
    def day(self) -> str:
        """The boundary's calendar date where the scope is (a change-log line's day)."""
        return self.boundary.astimezone(self.zone).date().isoformat()


@dataclass
class FormationPlan:
    plan: CommitPlan
    execution_log_rows: int = 0
    rows: dict[ContentKey, str] = field(default_factory=dict)  # content -> planned row id

    @property
    def writes_memory(self) -> bool:
        plan = self.plan
        return bool(
            plan.chunks
            or plan.edges
            or plan.chunk_supersessions
            or plan.edge_supersessions
            or plan.claim_updates
            or plan.change_log
        )


def build_plan(
    candidates: Sequence[Candidate], context: PlanContext, store: MemoryStore
) -> FormationPlan:
    """Everything the decided candidates write; revisions are planned before NEW
    candidates, so content both state is stored once, as the replacement."""
    formation = FormationPlan(plan=CommitPlan(scope=context.scope))
    revised = [c for c in candidates if c.decision is Decision.REVISED]
    new = [c for c in candidates if c.decision is Decision.NEW]
    step_known = store.get_step(context.scope, context.rendered.step_id) is not None
    _plan_revisions(formation, revised, context)
    _plan_new_facts(formation, [c for c in new if c.is_fact], context, store)
    _plan_new_edges(formation, [c for c in new if c.edge is not None], context)
    _plan_nodes(formation, [*revised, *new], context, store)
    _plan_applies_to(formation, candidates)
    _plan_reinforcements(formation, candidates, context, store)
    if not step_known:
        _plan_contradictions(formation, candidates, context)
    if formation.writes_memory:
        formation.plan.steps.append(_step(context))
        formation.execution_log_rows = 0 if step_known else 1
        _plan_evidence(formation, [*revised, *new], context)
    return formation


def _plan_revisions(
    formation: FormationPlan, revised: Sequence[Candidate], context: PlanContext
) -> None:
    plan = formation.plan
    closed: set[str] = set()
    for candidate in revised:
        assert candidate.matched_id is not None
        row_id = _add_row(formation, candidate, context.boundary, context, candidate.matched_id)
        if candidate.matched_id in closed:
            continue
        closed.add(candidate.matched_id)
        supersession = Supersession(
            target_id=candidate.matched_id, invalid_at=context.boundary, superseded_by=row_id
        )
        (plan.chunk_supersessions if candidate.is_fact else plan.edge_supersessions).append(
            supersession
        )


def _plan_new_facts(
    formation: FormationPlan,
    facts: Sequence[Candidate],
    context: PlanContext,
    store: MemoryStore,
) -> None:
    closed = _closed_unbounded_rows(facts, context, store)
    for candidate in facts:
        valid_at = context.observed_at
        if valid_at is None and rules.chunk_id(candidate.text, None) in closed:
            valid_at = context.received_at
        _add_row(formation, candidate, valid_at, context, None)


def _closed_unbounded_rows(
    facts: Sequence[Candidate], context: PlanContext, store: MemoryStore
) -> set[str]:
    """Ids of facts' unbounded-past rows (no validAt) that exist with a closed window."""
    if context.observed_at is not None or not facts:
        return set()
    ids = sorted({rules.chunk_id(c.text, None) for c in facts})
    return {r.id for r in store.get_chunks(context.scope, ids) if r.invalid_at or r.retired_at}


def _plan_new_edges(
    formation: FormationPlan, edges: Sequence[Candidate], context: PlanContext
) -> None:
    for candidate in edges:
        _add_row(formation, candidate, context.boundary, context, None)


def _add_row(
    formation: FormationPlan,
    candidate: Candidate,
    valid_at: datetime | None,
    context: PlanContext,
    supersedes: str | None,
) -> str:
    """Plan the candidate's chunk or edge unless its content is planned already; its row id."""
    planned = formation.rows.get(candidate.content_key)
    if planned is not None:
        return planned
    if candidate.is_fact:
        record = _fact_record(candidate, valid_at, supersedes, context)
        formation.plan.chunks.append(record)
        row_id = record.id
    else:
        edge = _edge(candidate, valid_at, supersedes)
        formation.plan.edges.append(edge)
        row_id = edge.edge_id
    formation.rows[candidate.content_key] = row_id
    return row_id


def _fact_record(
    candidate: Candidate, valid_at: datetime | None, supersedes: str | None, context: PlanContext
) -> MemoryRecord:
    metadata = dict(candidate.extracted.attributes)
    metadata[SOURCE_STEP] = context.rendered.step_id
    if candidate.source_turns is not None:
        metadata[SOURCE_TURNS] = ",".join(str(turn) for turn in candidate.source_turns)
    record = MemoryRecord(
        id=rules.chunk_id(candidate.text, valid_at),
        scope=context.scope,
        content_hash=rules.content_hash(candidate.text),
        text=candidate.text,
        type=candidate.memory_type,
        metadata=metadata,
        authority=Authority.INFERRED,
        valid_at=valid_at,
        supersedes=supersedes,
        embedding=candidate.embedding,
    )
    claim = candidate.claim
    if claim is None:
        return record
    return record.model_copy(
        update={
            "type": claim.type,
            "about": claim.about,
            "summary": claim.summary,
            "when_to_use": claim.when_to_use,
            "authority": claim.authority,
            "strength": claim.strength,
            "confidence": claim.confidence,
            "durability": claim.durability,
            "valid_until": claim.valid_until,
            "sensitivity": claim.sensitivity,
        }
    )


def _edge(candidate: Candidate, valid_at: datetime | None, supersedes: str | None) -> GraphEdge:
    shape = candidate.edge
    assert shape is not None
    source, target = shape.source.node_id, shape.target.node_id
    return GraphEdge(
        edge_id=rules.edge_id(source, shape.relation, target, valid_at),
        source=source,
        relation=shape.relation,
        target=target,
        properties=dict(candidate.extracted.attributes),
        valid_at=valid_at,
        supersedes=supersedes,
    )


def _plan_nodes(
    formation: FormationPlan,
    written: Sequence[Candidate],
    context: PlanContext,
    store: MemoryStore,
) -> None:
    """New nodes for the planned edges' entities; an existing node is rewritten only to
    give it a class it lacks (keeping its label and properties)."""
    planned_edges = {e.edge_id for e in formation.plan.edges}
    entities: dict[str, Entity] = {}
    for candidate in written:
        shape = candidate.edge
        if shape is None or formation.rows.get(candidate.content_key) not in planned_edges:
            continue
        for entity in (shape.source, shape.target):
            known = entities.get(entity.node_id)
            if known is None or (known.node_type is None and entity.node_type):
                entities[entity.node_id] = entity
    if not entities:
        return
    existing = {n.node_id: n for n in store.get_nodes(context.scope, sorted(entities))}
    for node_id, entity in entities.items():
        stored = existing.get(node_id)
        if stored is None:
            formation.plan.nodes.append(
                GraphNode(node_id=node_id, label=entity.label, node_type=entity.node_type)
            )
        elif stored.node_type is None and entity.node_type:
            formation.plan.nodes.append(
                GraphNode(
                    node_id=node_id,
                    label=stored.label,
                    node_type=entity.node_type,
                    properties=stored.properties,
                )
            )


def _step(context: PlanContext) -> ExecutionLogStep:
    rendered = context.rendered
    return ExecutionLogStep(
        step_id=rendered.step_id,
        tool_input=rendered.tool_input,
        metadata={TURN_OFFSETS: ",".join(str(offset) for offset in rendered.offsets)},
    )


def _plan_applies_to(formation: FormationPlan, candidates: Sequence[Candidate]) -> None:
    """Each planned fact applies to the entities this formation's relationships name
    that its text mentions by label (whole words, any case)."""
    entities: dict[str, str] = {}
    for candidate in candidates:
        if candidate.edge is None or candidate.decision is Decision.REJECTED:
            continue
        for entity in (candidate.edge.source, candidate.edge.target):
            entities.setdefault(entity.node_id, entity.label)
    if not entities:
        return
    patterns = {
        node: re.compile(rf"(?<!\w){re.escape(label)}(?!\w)", re.IGNORECASE)
        for node, label in entities.items()
    }
    for record in formation.plan.chunks:
        record.applies_to = sorted(n for n, p in patterns.items() if p.search(record.text))


def _plan_reinforcements(
    formation: FormationPlan,
    candidates: Sequence[Candidate],
    context: PlanContext,
    store: MemoryStore,
) -> None:
    """Reinforce each active claim a KNOWN fact restates: reinforcement_count + 1 and
    last_reinforced_at under the revision read now, one evidence line and a
    "reinforced" change-log line; only when its evidence holds no line of this
    conversation's step yet, so forming the same conversation again changes nothing."""
    restating: dict[str, Candidate] = {}
    for candidate in candidates:
        matched = candidate.matched
        if candidate.decision is Decision.KNOWN and candidate.is_fact and matched is not None:
            restating.setdefault(matched.id, candidate)
    if not restating:
        return
    ids = sorted(restating)
    step = evidence_ref(context, None)
    seen = {
        e.memory_id
        for e in store.list_evidence(context.scope, ids)
        if e.ref == step or e.ref.startswith(step + "#")
    }
    plan = formation.plan
    for record in store.get_chunks(context.scope, ids):
        if record.id in seen or record.status is not Status.ACTIVE:
            continue
        candidate = restating[record.id]
        count = record.reinforcement_count + 1
        last = record.last_reinforced_at
        plan.claim_updates.append(
            ClaimUpdate(
                memory_id=record.id,
                expected_revision=record.revision,
                reinforcement_count=count,
                last_reinforced_at=max(last, context.boundary) if last else context.boundary,
            )
        )
        plan.evidence.append(
            Evidence(
                memory_id=record.id,
                ref=evidence_ref(context, candidate.source_turns),
                quote=candidate.extracted.quote,
                recorded_at=context.received_at,
            )
        )
        plan.change_log.append(
            ChangeLogEntry(
                memory_id=record.id,
                day=context.day,
                change="reinforced",
                from_value=str(count - 1),
                to_value=str(count),
            )
        )


CHANGE_VALUE_CHARS = 240


def _plan_contradictions(
    formation: FormationPlan, candidates: Sequence[Candidate], context: PlanContext
) -> None:
    """A "contradicted" change-log line on each kept claim an inference contradicted:
    from the candidate's words (capped) to where they were said (its conv:// ref).
    Planned only the first time a conversation is formed (its step is new)."""
    for candidate in candidates:
        kept = candidate.contradicted
        if kept is None:
            continue
        words = " ".join(candidate.text.split())
        if len(words) > CHANGE_VALUE_CHARS:
            words = words[: CHANGE_VALUE_CHARS - 1] + "…"
        formation.plan.change_log.append(
            ChangeLogEntry(
                memory_id=kept.id,
                day=context.day,
                change="contradicted",
                from_value=words,
                to_value=evidence_ref(context, candidate.source_turns),
            )
        )


def _plan_evidence(
    formation: FormationPlan, written: Sequence[Candidate], context: PlanContext
) -> None:
    chunk_ids = {c.id for c in formation.plan.chunks}
    lines: dict[tuple[str, str], Evidence] = {}
    for candidate in written:
        row_id = formation.rows.get(candidate.content_key)
        if not candidate.is_fact or row_id not in chunk_ids:
            continue
        assert row_id is not None
        ref = evidence_ref(context, candidate.source_turns)
        lines.setdefault(
            (row_id, ref),
            Evidence(
                memory_id=row_id,
                ref=ref,
                quote=candidate.extracted.quote,
                recorded_at=context.received_at,
            ),
        )
    formation.plan.evidence.extend(lines.values())


def evidence_ref(context: PlanContext, turns: list[int] | None) -> str:
    """`conv://{scopeId}/{stepId}#turn=a-b` (no fragment when attribution is unusable)."""
    span = None if turns is None else (turns[0], turns[-1])
    return conv_ref(context.scope.scope_id, context.rendered.step_id, span)
