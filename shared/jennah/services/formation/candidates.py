"""The pipeline's working objects: a candidate on its way to a decision, and an
existing memory (chunk or edge) it is reconciled against.

A candidate's decision is set once: `decide` refuses to overwrite it, so a
rejected candidate can never be turned into another decision later.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

from jennah.domain import rules
from jennah.domain.formation import (
    CandidateKind,
    CandidateOutcome,
    Decision,
    ExtractedCandidate,
)
from jennah.domain.models import Authority, GraphEdge, MemoryRecord, MemoryType
from jennah.services.formation.claims import Claim

# What a stored item says, independent of its validity window: identical
# content has the same key. ("fact", content hash) or ("edge", source, relation, target).
ContentKey = tuple[str, ...]


@dataclass(frozen=True)
class Entity:
    """A graph node a relationship names: id derived from the normalized name."""

    node_id: str
    label: str
    node_type: str | None


@dataclass(frozen=True)
class EdgeShape:
    source: Entity
    relation: str
    target: Entity

    @property
    def content_key(self) -> ContentKey:
        return ("edge", self.source.node_id, self.relation, self.target.node_id)


@dataclass
class Candidate:
    """One extracted candidate (kept within the candidate cap) and what became of it."""

    index: int
    extracted: ExtractedCandidate
    decision: Decision | None = None
    matched_id: str | None = None
    matched: Memory | None = None  # the memory a KNOWN or REVISED decision names
    rejection_reason: str | None = None
    preserves_structure: bool = False
    # set by verification
    source_turns: list[int] | None = None  # None: attribution unusable
    memory_type: MemoryType = MemoryType.FACT
    edge: EdgeShape | None = None
    claim: Claim | None = None  # a fact's claim fields (`claims.assess`)
    # set when reconciliation found it contradicts a claim that outranks it (REJECTED)
    contradicted: Memory | None = None
    # set by reconciliation, for facts that may be written
    embedding: list[float] | None = None
    neighbours: list[Memory] = field(default_factory=list)

    @property
    def kind(self) -> CandidateKind:
        return self.extracted.kind

    @property
    def text(self) -> str:
        return self.extracted.text

    @property
    def is_fact(self) -> bool:
        return self.kind is CandidateKind.FACT

    @property
    def undecided(self) -> bool:
        return self.decision is None

    @property
    def content_key(self) -> ContentKey:
        if self.edge is not None:
            return self.edge.content_key
        return ("fact", rules.content_hash(self.text))

    @property
    def candidate_id(self) -> str:
        """Derived from the candidate's content ("fct_…" / "rel_…"); correlates, never looks up."""
        extracted = self.extracted
        if self.is_fact:
            return "fct_" + _digest("fact", extracted.text)
        ends = [
            normalize_name(ref.name) if ref is not None else ""
            for ref in (extracted.subject, extracted.object)
        ]
        return "rel_" + _digest(
            "relationship", ends[0], extracted.relation or "", ends[1], extracted.text
        )

    def decide(self, decision: Decision, matched: Memory | None = None) -> None:
        if self.decision is not None:
            raise AssertionError(f"candidate {self.index} is already decided: {self.decision}")
        self.decision = decision
        self.matched = matched
        self.matched_id = matched.id if matched is not None else None

    def reject(self, reason: str) -> None:
        """Reject an undecided candidate, or overrule a NEW / KNOWN / REVISED one."""
        if self.decision is Decision.REJECTED:
            return
        self.decision = Decision.REJECTED
        self.rejection_reason = reason
        self.matched = None
        self.matched_id = None

    def contradict(self, memory: Memory, reason: str) -> None:
        """Reject it as contradicting `memory`, which outranks it and is kept: the
        receipt names the kept memory as matchedId, and planning records it."""
        self.reject(reason)
        self.contradicted = memory
        self.matched_id = memory.id

    def outcome(self) -> CandidateOutcome:
        return CandidateOutcome(
            candidate_id=self.candidate_id,
            kind=self.kind,
            text=self.text,
            decision=self.decision or Decision.REJECTED,
            matched_id=self.matched_id,
            rejection_reason=self.rejection_reason,
            preserves_structure=self.preserves_structure,
        )


@dataclass(frozen=True)
class Memory:
    """An existing chunk or edge, as reconciliation sees it."""

    id: str
    kind: CandidateKind
    text: str
    memory_type: str
    valid_at: datetime | None
    invalid_at: datetime | None
    retired_at: datetime | None
    content_key: ContentKey
    normalized_text: str
    authority: Authority | None = None  # a chunk's; None for an edge

    def is_current(self, instant: datetime) -> bool:
        return rules.is_valid_at(self.valid_at, self.invalid_at, self.retired_at, instant)

    def is_open(self) -> bool:
        """Its validity window has not been closed (a supersession may still close it)."""
        return self.invalid_at is None and self.retired_at is None

    @classmethod
    def of_chunk(cls, record: MemoryRecord) -> Memory:
        return cls(
            id=record.id,
            kind=CandidateKind.FACT,
            text=record.text,
            memory_type=record.type.value,
            valid_at=record.valid_at,
            invalid_at=record.invalid_at,
            retired_at=record.retired_at,
            content_key=("fact", record.content_hash or rules.content_hash(record.text)),
            normalized_text=normalize_text(record.text),
            authority=record.authority,
        )

    @classmethod
    def of_edge(cls, edge: GraphEdge, labels: dict[str, str]) -> Memory:
        text = (
            f"{labels.get(edge.source) or edge.source} {edge.relation} "
            f"{labels.get(edge.target) or edge.target}"
        )
        return cls(
            id=edge.edge_id,
            kind=CandidateKind.RELATIONSHIP,
            text=text,
            memory_type=MemoryType.RELATIONSHIP.value,
            valid_at=edge.valid_at,
            invalid_at=edge.invalid_at,
            retired_at=edge.retired_at,
            content_key=("edge", edge.source, edge.relation, edge.target),
            normalized_text=normalize_text(text),
        )


def normalize_name(name: str) -> str:
    """An entity name as its node id is derived from it: NFKC, case-folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def normalize_text(text: str) -> str:
    """Text compared for "identical to the existing record": case, spacing and final
    punctuation do not make a statement different."""
    return normalize_name(text).rstrip(".!;")


def node_id(name: str) -> str:
    """The node id of an entity named `name`: the same for every spelling that normalizes alike."""
    return "ent_" + _digest("entity", normalize_name(name))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]
