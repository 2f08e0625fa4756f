"""The memory record, the graph, the execution log, and the write plan.

Domain models only: no I/O, no HTTP shapes (those live in `jennah.api.dto`).
Times are timezone-aware UTC datetimes. Valid time is `valid_at` (None means
unbounded past) to `invalid_at` (None means still valid); transaction time is
`created_at` (commit timestamp) to `retired_at`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from jennah.domain.suppression import Suppression

EMBEDDING_DIMENSIONS = 384


class ScopeRef(BaseModel):
    """Every stored row belongs to exactly one enterprise and one scope."""

    model_config = ConfigDict(frozen=True)

    enterprise_id: str
    scope_id: str


class MemoryType(StrEnum):
    IDENTITY = "identity"
    DIRECTIVE = "directive"
    PREFERENCE = "preference"
    FACT = "fact"
    CONSTRAINT = "constraint"
    RELATIONSHIP = "relationship"


class Strength(StrEnum):
    HARD = "hard"
    SOFT = "soft"


class Authority(StrEnum):
    USER_EXPLICIT = "user_explicit"
    USER_STATED = "user_stated"
    INFERRED = "inferred"
    SYSTEM = "system"


class Status(StrEnum):
    ACTIVE = "active"
    DORMANT = "dormant"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"


class Durability(StrEnum):
    DURABLE = "durable"
    SEASONAL = "seasonal"
    PASSING = "passing"


class Sensitivity(StrEnum):
    """The sensitivity vocabulary (OKF `sensitivity`; the wire's SensitivityName). Every
    value but normal is sensitive: such a claim never enters the brief (domain/brief.py
    `eligible`), is found by search with its label and is listed in the card."""

    NORMAL = "normal"
    HEALTH = "health"
    FINANCES = "finances"
    MINORS = "minors"


class MemoryRecord(BaseModel):
    """One claim: a chunk written by memory:commit, a formed fact, or a keyed memory."""

    # identity
    id: str
    scope: ScopeRef
    key: str | None = None
    revision: int = 1
    content_hash: str = ""
    # content
    text: str
    summary: str = ""
    about: str = ""
    when_to_use: str = ""
    type: MemoryType = MemoryType.FACT
    metadata: dict[str, str] = Field(default_factory=dict)
    # weight and trust
    strength: Strength = Strength.SOFT
    pin: bool = False
    authority: Authority = Authority.SYSTEM
    confidence: float = 1.0
    sensitivity: Sensitivity = Sensitivity.NORMAL
    # time, bi-temporal
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    retired_at: datetime | None = None
    # lifecycle
    status: Status = Status.ACTIVE
    supersedes: str | None = None
    superseded_by: str | None = None
    durability: Durability = Durability.DURABLE
    reinforcement_count: int = 0
    last_reinforced_at: datetime | None = None
    # claim links (OKF): entity node ids the claim concerns, and related claims' ids
    applies_to: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    needs_enrichment: bool = False
    # front-matter keys this service does not know, kept verbatim (each value is the
    # key's YAML value as JSON text) so an export -> import round trip loses nothing
    extensions: dict[str, str] = Field(default_factory=dict)
    # retrieval: unit-length embedding of subject + summary + when-to-use text
    embedding: list[float] | None = None


# Statuses a default query, inspect listing and the brief leave out. `expired` and
# `superseded` claims also have a closed validity window, so an as-of query for a
# time they were valid still finds them; dormant and retracted ones are out of every
# default read (their rows stay: history is never destroyed).
HIDDEN_STATUSES = frozenset({Status.DORMANT, Status.RETRACTED})


class Evidence(BaseModel):
    """One line of a memory's evidence ledger: `ref` is `conv://{scope}/{stepId}#turn=a-b`.

    Lines are append-only: reinforcement adds one; (memory_id, ref) is unique."""

    memory_id: str
    ref: str
    quote: str
    recorded_at: datetime


class GraphNode(BaseModel):
    """An entity. `node_type` is assign-once: the first class written sticks."""

    node_id: str
    label: str = ""
    node_type: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class GraphEdge(BaseModel):
    """A relationship between two nodes, valid over a window of valid time."""

    edge_id: str
    source: str
    relation: str
    target: str
    properties: dict[str, str] = Field(default_factory=dict)
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime | None = None
    retired_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None


class MemoryLink(BaseModel):
    """A directed link between two memory records (keyed memory, at most 12 per record)."""

    source_id: str
    target_id: str
    created_at: datetime | None = None


class ExecutionLogStep(BaseModel):
    """The rendered turns of a formation that wrote memory (`jennah.turn_offsets` in metadata)."""

    step_id: str
    tool_input: str
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: datetime | None = None


class FormationKeyRecord(BaseModel):
    """Committed in the same transaction as the memory a formation wrote."""

    formation_key: str
    fingerprint: str
    receipt_json: str
    committed_at: datetime | None = None


class Supersession(BaseModel):
    """A supersession: close the validity window of an open chunk or edge.

    The adapter applies it only if the target exists and is still open;
    otherwise the whole commit fails and nothing is written. A supersession that
    was already applied identically (same `invalid_at` and `superseded_by`)
    is a no-op, so retrying a commit is idempotent.
    """

    target_id: str
    invalid_at: datetime
    superseded_by: str


class ScopeRecord(BaseModel):
    """A scope's registration: an agent workspace or a subject scope."""

    scope: ScopeRef
    kind: str  # jennah.domain.access.ScopeKind value: "agent" or "subject"
    created_at: datetime | None = None
    created_by: str = ""
    # IANA zone the scope's own calendar is judged in (expiry at local midnight)
    time_zone: str = "UTC"


class ClaimUpdate(BaseModel):
    """A change of one claim's state, applied only while its stored `revision` is
    `expected_revision` (then revision + 1 and `updated_at` = the commit time).

    Never changes a claim's words. A field left None is left as it is. When the
    stored revision differs (another writer got there first) or the claim does
    not exist, the WHOLE plan fails with Aborted / NotFound and nothing is written.
    """

    memory_id: str
    expected_revision: int
    status: Status | None = None
    durability: Durability | None = None
    reinforcement_count: int | None = None
    last_reinforced_at: datetime | None = None
    # close the validity window (an expiry); only an open window is closed
    invalid_at: datetime | None = None
    superseded_by: str | None = None
    related: list[str] | None = None


class BriefVariant(StrEnum):
    FULL = "full"
    SHARED = "shared"  # without the Last conversation section


class StoredBrief(BaseModel):
    """A compiled brief, replaced whole by each compile (one row per scope and variant).

    `expiries` maps the memory id of every line whose claim has a validUntil to that
    instant, so a line is filtered when the brief is served after it passed.
    """

    variant: BriefVariant
    text: str
    token_count: int
    expiries: dict[str, datetime] = Field(default_factory=dict)
    compiled_at: datetime | None = None


class ChangeLogEntry(BaseModel):
    """One line of a scope's dated change log: what a lifecycle pass (or a reconciliation)
    did to one claim. `day` is the scope's local calendar date (YYYY-MM-DD)."""

    memory_id: str
    day: str
    change: str  # expired | promoted | decayed | reinforced | contradicted | ...
    from_value: str = ""
    to_value: str = ""
    recorded_at: datetime | None = None


class CommitPlan(BaseModel):
    """Everything one commit writes, applied in ONE transaction, all or nothing.

    Chunks and edges are create-or-replace on their content-derived ids: a
    replace updates content and metadata but never reopens or moves a closed
    validity window (only supersessions change validity). Nodes are
    create-or-replace except `node_type`, which is kept once set.

    `registration` registers the scope in the same transaction when it is not
    registered yet (a scope comes into being on its first write); an
    existing registration is left as it is.

    `claim_updates` change claims' state under revision checks (see ClaimUpdate);
    `evidence` lines are inserted when their (memory, ref) is new and otherwise
    left as they are; `briefs` replace the stored brief of their variant;
    `change_log` lines are appended. A chunk supersession also sets the closed
    chunk's status to superseded and increments its revision.

    `suppressions` are inserted (a forget writes its retraction and its suppression
    together; an id already stored fails the plan with AlreadyExists), stamped with the
    commit time unless they carry their created_at (an import's);
    `suppressions_removed` names suppressions deleted (one not stored fails the plan
    with NotFound).
    """

    scope: ScopeRef
    registration: ScopeRecord | None = None
    chunks: list[MemoryRecord] = Field(default_factory=list)
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    chunk_supersessions: list[Supersession] = Field(default_factory=list)
    edge_supersessions: list[Supersession] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    claim_updates: list[ClaimUpdate] = Field(default_factory=list)
    briefs: list[StoredBrief] = Field(default_factory=list)
    change_log: list[ChangeLogEntry] = Field(default_factory=list)
    links: list[MemoryLink] = Field(default_factory=list)
    steps: list[ExecutionLogStep] = Field(default_factory=list)
    formation_key: FormationKeyRecord | None = None
    suppressions: list[Suppression] = Field(default_factory=list)
    suppressions_removed: list[str] = Field(default_factory=list)


class CommitResult(BaseModel):
    commit_timestamp: datetime
    chunks_written: int = 0
    nodes_written: int = 0
    edges_written: int = 0
    chunk_supersessions: int = 0
    edge_supersessions: int = 0
    claims_updated: int = 0
    chunk_ids: list[str] = Field(default_factory=list)
    edge_ids: list[str] = Field(default_factory=list)


class FilterOperator(StrEnum):
    EQUALS = "OPERATOR_EQUALS"
    NOT_EQUALS = "OPERATOR_NOT_EQUALS"
    IN = "OPERATOR_IN"


class MetadataFilter(BaseModel):
    """A filter on one metadata key (or, for nodes, on NodeId / Label / NodeType).

    EQUALS matches a record whose key has the value; IN matches any of the
    values; NOT_EQUALS matches a record whose key is absent or has another value.
    """

    key: str
    operator: FilterOperator = FilterOperator.EQUALS
    values: list[str]


class ScoredRecord(BaseModel):
    record: MemoryRecord
    score: float


class Direction(StrEnum):
    OUTBOUND = "DIRECTION_OUTBOUND"
    INBOUND = "DIRECTION_INBOUND"
    ANY = "DIRECTION_ANY"
