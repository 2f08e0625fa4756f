"""Wire shapes of the HTTP API, in proto3 JSON style.

Requests and responses are camelCase; int64 counts travel as strings; enums
travel as their names (`OPERATOR_EQUALS`, `DIRECTION_OUTBOUND`), except a claim's,
which travel as their OKF values (`directive`, `user_explicit`), as an exported
claim file spells them; timestamps
are RFC 3339 with a time zone on input and Z-normalized on output. Request
models reject unknown fields. Optional fields that are absent are omitted
from responses. These models live apart from the domain models on purpose:
the wire may change shape without the domain changing, and the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict, JsonValue

from jennah.domain import claims, rules
from jennah.domain import keyed as keyed_rules
from jennah.domain import search as search_rules
from jennah.domain.access import (
    API_KEY_PRINCIPAL,
    MAX_DISPLAY_NAME,
    MAX_SELECTORS,
    SELECTOR_PATTERN,
    USER_PRINCIPAL,
    Role,
)
from jennah.domain.billing import MAX_OVERAGE_MULTIPLE, OVERAGE_MULTIPLE_STEP
from jennah.domain.brief import QUOTE_CHARS
from jennah.domain.formation import MAX_FORMATION_KEY_LENGTH, MAX_TURNS
from jennah.domain.models import MemoryType
from jennah.domain.rules import MAX_COMMIT_ITEMS
from jennah.domain.suppression import MAX_GROUP_CLAIMS
from jennah.domain.vocabulary import (
    MAX_ENTITY_CLASSES,
    MAX_NAME_LENGTH,
    MAX_RELATION_TYPES,
    MAX_SIGNATURES,
)

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
TIMESTAMP_HINT = "an RFC 3339 timestamp with a time zone, such as 2024-05-01T09:00:00Z"
TIMESTAMP_RANGE = "0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z"
INT32_MAX = 2**31 - 1


def parse_timestamp(value: object) -> datetime:
    """An RFC 3339 string (or an aware datetime) as a UTC datetime."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"must be {TIMESTAMP_HINT}")
        try:
            return value.astimezone(UTC)
        except OverflowError:
            raise ValueError(f"must be between {TIMESTAMP_RANGE}, in UTC") from None
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError(f"must be {TIMESTAMP_HINT}")
    text = value.upper()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        raise ValueError(f"must be {TIMESTAMP_HINT}") from None
    except OverflowError:  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise ValueError(f"must be between {TIMESTAMP_RANGE}, in UTC") from None


def format_timestamp(value: datetime) -> str:
    """Z-normalized RFC 3339 with 0, 3 or 6 fractional digits, as Google APIs print; the
    year in four digits (strftime's %Y printed year 1 as "1", which RFC 3339 refuses).
    (An f-string: every timestamp of every answer comes here, and strftime and an aware
    datetime's isoformat take 2-3 times as long.)"""
    if value.tzinfo is not UTC:
        value = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    micros = value.microsecond
    if micros == 0:
        fraction = ""
    elif micros % 1000 == 0:
        fraction = f".{micros // 1000:03d}"
    else:
        fraction = f".{micros:06d}"
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{fraction}Z"
    )


def _int32(value: object) -> int:
    """proto3 JSON int32: a JSON number without fraction, or a decimal string."""
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,10}", value.strip()):
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer")
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise ValueError("is out of the int32 range")
    return value


Timestamp = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time", "example": "2024-05-01T09:00:00Z"}),
]
Int32 = Annotated[
    int, BeforeValidator(_int32), WithJsonSchema({"type": "integer", "format": "int32"})
]
Int64 = Annotated[
    int,
    PlainSerializer(str, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "int64", "example": "3"}),
]


def _version_in(value: object) -> int:
    """A version sent back: proto3 JSON int64, a JSON number without fraction or a
    decimal string, never a boolean; at least 0."""
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and re.fullmatch(r"\d{1,19}", value):
        value = int(value)
    if not isinstance(value, int) or value < 0:
        raise ValueError("must be a whole number >= 0")
    return value


VersionIn = Annotated[
    int,
    BeforeValidator(_version_in),
    WithJsonSchema(
        {"type": ["integer", "string"], "format": "int64", "minimum": 0,
         "pattern": "^[0-9]{1,19}$"}
    ),
]  # fmt: skip
Operator = Literal["OPERATOR_EQUALS", "OPERATOR_NOT_EQUALS", "OPERATOR_IN"]
DirectionName = Literal["DIRECTION_OUTBOUND", "DIRECTION_INBOUND", "DIRECTION_ANY"]
ModeName = Literal["HYBRID", "SEMANTIC", "LEXICAL"]
# A claim's enums travel as their OKF values (lower case), as an exported file spells them.
MemoryTypeName = Literal[
    "identity", "directive", "preference", "fact", "constraint", "relationship"
]
StrengthName = Literal["hard", "soft"]
AuthorityName = Literal["user_explicit", "user_stated", "inferred", "system"]
DurabilityName = Literal["durable", "seasonal", "passing"]
StatusName = Literal["active", "dormant", "expired", "superseded", "retracted"]
WritableStatusName = Literal["active", "dormant", "retracted"]  # claims.WRITABLE_STATUSES
SensitivityName = Literal["normal", "health", "finances", "minors"]


# Bounds the services enforce, stated in the document only (`json_schema_extra`): the
# services refuse a request past them with their own message, field and reason, and the
# document says where they lie, so that a request valid by the document is not refused.
NON_BLANK = r"\S"  # a text that is not empty nor whitespace only (str.strip)


def _bounds(**schema: JsonValue) -> JsonDict:
    """JSON schema keywords to add to a field's generated schema."""
    return {key: value for key, value in schema.items() if value is not None}


def _identifier() -> JsonDict:
    return {"pattern": rules.IDENTIFIER_PATTERN.pattern}


def _map_bounds() -> JsonDict:
    """A metadata or properties map (rules.validate_metadata)."""
    return {
        "maxProperties": rules.MAX_METADATA_KEYS,
        "propertyNames": {"pattern": rules.METADATA_KEY_PATTERN.pattern},
        "additionalProperties": {"type": "string", "maxLength": rules.MAX_METADATA_VALUE_LENGTH},
    }


_PRINCIPAL = f"{USER_PRINCIPAL.pattern}|{API_KEY_PRINCIPAL.pattern}"
_ROLE = _bounds(enum=[role.value for role in Role])
_SELECTORS = _bounds(
    maxItems=MAX_SELECTORS, items={"type": "string", "pattern": SELECTOR_PATTERN.pattern}
)


class WireRequest(BaseModel):
    """A request body: camelCase names only, unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=False)


class WireResponse(BaseModel):
    """A response body: built in Python by field name, printed in camelCase."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True
    )


_PAGE_SIZE_HELP = "At most this many items; 0 means 50, at most 1000"
_PAGE_TOKEN_HELP = (
    "nextPageToken of the previous page, with the same other parameters; absent for the first page"
)
_NEXT_PAGE_HELP = "Pass as pageToken for the next page; absent on the last page"


class PageParams(WireRequest):
    """The query parameters every list takes (AIP-158)."""

    page_size: Int32 = Field(
        default=0, description=_PAGE_SIZE_HELP, json_schema_extra=_bounds(minimum=0)
    )
    page_token: str = Field(default="", description=_PAGE_TOKEN_HELP)


# memory:commit


class CommitChunk(WireRequest):
    """A chunk to write; its id is derived from its text and validAt."""

    text: str = Field(
        description="1-16,000 characters, not blank",
        json_schema_extra=_bounds(minLength=1, maxLength=rules.MAX_TEXT_LENGTH, pattern=NON_BLANK),
    )
    metadata: dict[str, str] = Field(
        default_factory=dict,
        description="At most 16 keys of 1-64 letters, digits, '_', '.' or '-'; "
        "values up to 1024 characters",
        json_schema_extra=_map_bounds(),
    )
    valid_at: Timestamp | None = Field(
        default=None, description="Start of the validity window; absent means unbounded past"
    )
    # the claim fields: each absent one takes the claim's default
    type: MemoryTypeName | None = Field(
        default=None, description="What kind of claim (default fact)"
    )
    about: str | None = Field(
        default=None,
        description="What the claim is about; up to 256 characters",
        json_schema_extra=_bounds(maxLength=claims.MAX_ABOUT_LENGTH),
    )
    summary: str | None = Field(
        default=None,
        description="A one-line summary; up to 1,024 characters",
        json_schema_extra=_bounds(maxLength=claims.MAX_SUMMARY_LENGTH),
    )
    when_to_use: str | None = Field(
        default=None,
        description="When an agent should use it; up to 1,024 characters",
        json_schema_extra=_bounds(maxLength=claims.MAX_WHEN_TO_USE_LENGTH),
    )
    applies_to: list[str] | None = Field(
        default=None,
        description="The entity node ids it concerns: at most 32, each once",
        json_schema_extra=_bounds(
            maxItems=claims.MAX_APPLIES_TO, uniqueItems=True, items=_identifier()
        ),
    )
    strength: StrengthName | None = Field(
        default=None, description="A hard rule or a soft leaning (default soft)"
    )
    pin: bool | None = Field(
        default=None, strict=True, description="Always in the brief (default false)"
    )
    authority: AuthorityName | None = Field(
        default=None,
        description="Who said it: stated explicitly, in passing, inferred, or the system "
        "system (the default)",
    )
    confidence: float | None = Field(
        default=None,
        description="The extractor's confidence, 0 to 1 (default 1)",
        json_schema_extra=_bounds(minimum=0, maximum=1),
    )
    durability: DurabilityName | None = Field(
        default=None, description="How long it lasts (default durable)"
    )
    valid_until: Timestamp | None = Field(
        default=None,
        description="When it stops being true (the lifecycle pass then expires it); after validAt",
    )
    status: WritableStatusName | None = Field(
        default=None,
        description="active (the default), dormant or retracted; taken on the claim's first "
        "write only (a replace keeps the stored status). A claim expires when validUntil "
        "arrives and is superseded by a supersession",
    )
    sensitivity: SensitivityName | None = Field(
        default=None, description="Sensitive claims never enter the brief (default normal)"
    )
    related: list[str] | None = Field(
        default=None,
        description="Ids of related memories: at most 32, each once",
        json_schema_extra=_bounds(
            maxItems=claims.MAX_RELATED, uniqueItems=True, items=_identifier()
        ),
    )
    needs_enrichment: bool | None = Field(
        default=None, strict=True, description="Its fields want filling in (default false)"
    )
    extensions: dict[str, str] | None = Field(
        default=None,
        description="Front-matter keys this service does not know, kept verbatim: each value "
        "the key's value as JSON text. At most 16 keys of 1-64 letters, digits, '_', '.' "
        "or '-' (not a claim field's own key); values up to 1024 characters",
        json_schema_extra=_map_bounds(),
    )


class CommitNode(WireRequest):
    """A graph node, create-or-replace on nodeId; nodeType is assign-once."""

    node_id: str = Field(json_schema_extra=_identifier())
    label: str = Field(default="", json_schema_extra=_bounds(maxLength=rules.MAX_LABEL_LENGTH))
    node_type: str | None = Field(
        default=None,
        description="The entity class; the first class a node gets is kept",
        json_schema_extra=_bounds(pattern=f"^$|{rules.METADATA_KEY_PATTERN.pattern}"),
    )
    properties: dict[str, str] = Field(default_factory=dict, json_schema_extra=_map_bounds())


class CommitEdge(WireRequest):
    """An edge between two nodes that exist (in the scope or this commit)."""

    source: str = Field(json_schema_extra=_identifier())
    relation: str = Field(json_schema_extra=_bounds(pattern=rules.METADATA_KEY_PATTERN.pattern))
    target: str = Field(json_schema_extra=_identifier())
    valid_at: Timestamp | None = None
    properties: dict[str, str] = Field(default_factory=dict, json_schema_extra=_map_bounds())


def _given(name: str, kind: str) -> JsonDict:
    """`name` is present and not null: a JSON value of type `kind`."""
    return {"required": [name], "properties": {name: {"type": kind}}}


def _absent(*names: str) -> JsonDict:
    """Each of `names` is absent or null."""
    return {"properties": {name: {"type": "null"} for name in names}}


class Supersession(WireRequest):
    """Close chunkId (or edgeId) where its replacement becomes valid, and write it."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "allOf": [
                        _given("chunkId", "string"),
                        _given("replacementChunk", "object"),
                        _absent("edgeId"),
                    ]
                },
                {
                    "allOf": [
                        _given("edgeId", "string"),
                        _given("replacementEdge", "object"),
                        _absent("chunkId"),
                    ]
                },
            ]
        }
    )

    chunk_id: str | None = None
    edge_id: str | None = None
    replacement_chunk: CommitChunk | None = None
    replacement_edge: CommitEdge | None = None


def _one_of_nonempty(*names: str) -> Callable[[dict[str, Any]], None]:
    """A request the service refuses as empty unless one of `names` is given: a list
    with an item, or an object (not null)."""

    def require(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [
            {
                "required": [name],
                "properties": {
                    name: {"minItems": 1}
                    if schema["properties"][name].get("type") == "array"
                    else {"type": "object"}
                },
            }
            for name in names
        ]

    return require


class CommitRequest(WireRequest):
    """Everything one memory:commit writes, in one transaction: at least one item, at most
    500 in all (each list is bounded on its own while it is parsed, the sum by the
    commit)."""

    model_config = ConfigDict(
        json_schema_extra=_one_of_nonempty("chunks", "nodes", "edges", "supersessions")
    )

    chunks: list[CommitChunk] = Field(default_factory=list, max_length=MAX_COMMIT_ITEMS)
    nodes: list[CommitNode] = Field(default_factory=list, max_length=MAX_COMMIT_ITEMS)
    edges: list[CommitEdge] = Field(default_factory=list, max_length=MAX_COMMIT_ITEMS)
    supersessions: list[Supersession] = Field(
        default_factory=list,
        max_length=MAX_COMMIT_ITEMS,
        description="Each names a different chunkId or edgeId",
    )


class CommitResponse(WireResponse):
    """What a commit wrote; chunkIds and edgeIds name the rows, for later supersessions."""

    commit_timestamp: Timestamp
    chunks_written: Int64 = 0
    nodes_written: Int64 = 0
    edges_written: Int64 = 0
    chunk_supersessions: Int64 = 0
    edge_supersessions: Int64 = 0
    chunk_ids: list[str] = Field(
        default_factory=list, description="Ids of the chunks written, replacements included"
    )
    edge_ids: list[str] = Field(
        default_factory=list, description="Ids of the edges written, replacements included"
    )


# memory:import (memory:export answers a tar.gz of OKF files, no JSON)


class ImportResponse(WireResponse):
    """What an import of OKF files wrote, in one transaction."""

    claims_imported: Int64 = 0
    evidence_lines_imported: Int64 = 0
    nodes_imported: Int64 = 0
    edges_imported: Int64 = 0
    suppressions_imported: Int64 = 0  # forgotten facts stay forgotten (suppressions.jsonl)


# memory:query


class Filter(WireRequest):
    """A filter on one key: `value` for EQUALS / NOT_EQUALS, `values` for IN (or one
    value in `values`); never both."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"allOf": [_given("value", "string"), _absent("values")]},
                {
                    "allOf": [
                        _given("values", "array"),
                        _absent("value"),
                        {"properties": {"values": {"minItems": 1, "maxItems": 1}}},
                    ]
                },
                {
                    "allOf": [
                        _given("values", "array"),
                        _absent("value"),
                        {
                            "required": ["operator"],
                            "properties": {"operator": {"const": "OPERATOR_IN"}},
                        },
                        {"properties": {"values": {"minItems": 1}}},
                    ]
                },
            ]
        }
    )

    key: str = Field(description="A metadata key")
    value: str | None = Field(default=None, description="The value, for EQUALS and NOT_EQUALS")
    values: list[str] | None = Field(
        default=None,
        description="The values, for OPERATOR_IN: at most 100",
        json_schema_extra=_bounds(maxItems=rules.MAX_FILTER_VALUES),
    )
    operator: Operator = "OPERATOR_EQUALS"


class NodeFilter(Filter):
    """A filter on a node's NodeId, Label or NodeType."""

    key: str = Field(
        description="NodeId, Label or NodeType",
        json_schema_extra=_bounds(enum=list(rules.NODE_FILTER_KEYS)),
    )


class SemanticQuery(WireRequest):
    query_text: str = Field(
        json_schema_extra=_bounds(
            minLength=1, maxLength=rules.MAX_QUERY_TEXT_LENGTH, pattern=NON_BLANK
        )
    )
    top_k: Int32 = Field(
        default=10,
        description="1-100 results, best first",
        json_schema_extra=_bounds(minimum=1, maximum=rules.MAX_TOP_K),
    )
    filters: list[Filter] = Field(
        default_factory=list,
        description="All must match",
        json_schema_extra=_bounds(maxItems=rules.MAX_FILTERS),
    )
    as_of_valid: Timestamp | None = Field(
        default=None, description="Answer as of this valid time instead of now"
    )
    mode: ModeName = Field(
        default="HYBRID",
        description=(
            "HYBRID (the default): by meaning and by words together, the word search "
            "tolerating small spelling differences, merged: the best few by meaning lead, "
            "the strong word matches follow, the rest by meaning fill in; when the query "
            'names a month or a year ("in July", "June 2023", "in 2022"), the '
            "results valid then come first; each result's score is 1 / its rank. "
            "SEMANTIC: by meaning alone; the score "
            "is the cosine similarity. LEXICAL: by words alone (stemmed words, then "
            "words with a typo), no embedding; the score is the store's word relevance. "
            "Filters and asOfValid apply to every part"
        ),
    )


class GraphStart(WireRequest):
    """Start nodes: filters on NodeId, Label or NodeType (all nodes when none)."""

    filters: list[NodeFilter] = Field(
        default_factory=list, json_schema_extra=_bounds(maxItems=rules.MAX_FILTERS)
    )


class Traversal(WireRequest):
    relations: list[str] = Field(default_factory=list)
    direction: DirectionName = "DIRECTION_OUTBOUND"
    depth: Int32 = Field(
        default=1,
        description="0-3 hops from the start nodes",
        json_schema_extra=_bounds(minimum=0, maximum=rules.MAX_DEPTH),
    )


class GraphQuery(WireRequest):
    start: GraphStart | None = None
    traversal: Traversal | None = None
    limit: Int32 = Field(
        default=100,
        description="At most this many nodes, 1-1000",
        json_schema_extra=_bounds(minimum=1, maximum=rules.MAX_GRAPH_LIMIT),
    )
    as_of_valid: Timestamp | None = Field(
        default=None, description="Follow edges valid at this instant instead of now"
    )


class QueryRequest(WireRequest):
    """A semantic section, a graph section, or both."""

    model_config = ConfigDict(json_schema_extra=_one_of_nonempty("semantic", "graph"))

    semantic: SemanticQuery | None = None
    graph: GraphQuery | None = None


class Chunk(WireResponse):
    """A stored chunk, which is a claim: its words (`text`, the body) and every claim
    field; `score` only on semantic results. `formedAt` is when it was first written
    (the same instant as `createdAt`)."""

    id: str
    text: str
    metadata: dict[str, str] = Field(default_factory=dict)
    valid_at: Timestamp | None = None
    invalid_at: Timestamp | None = None
    created_at: Timestamp | None = None
    score: float | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    type: MemoryTypeName = "fact"
    about: str = ""
    summary: str = ""
    when_to_use: str = ""
    applies_to: list[str] = Field(default_factory=list)
    strength: StrengthName = "soft"
    pin: bool = False
    authority: AuthorityName = "system"
    confidence: float = 1.0
    durability: DurabilityName = "durable"
    formed_at: Timestamp | None = None
    last_reinforced_at: Timestamp | None = None
    reinforcement_count: Int32 = 0
    valid_until: Timestamp | None = None
    status: StatusName = "active"
    related: list[str] = Field(default_factory=list)
    sensitivity: SensitivityName = "normal"
    revision: Int32 = 1
    needs_enrichment: bool = False
    extensions: dict[str, str] = Field(default_factory=dict)


class Node(WireResponse):
    """A graph node; nodeType is omitted when the node has no class; depth only on traversals."""

    node_id: str
    label: str = ""
    node_type: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    depth: int | None = None


class Edge(WireResponse):
    edge_id: str
    source: str
    relation: str
    target: str
    properties: dict[str, str] = Field(default_factory=dict)
    valid_at: Timestamp | None = None
    invalid_at: Timestamp | None = None
    supersedes: str | None = None
    superseded_by: str | None = None


class SemanticResults(WireResponse):
    results: list[Chunk] = Field(default_factory=list)


class GraphResults(WireResponse):
    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


class QueryResponse(WireResponse):
    """The sections the request asked for, and only those."""

    semantic: SemanticResults | None = None
    graph: GraphResults | None = None


# memory:search (jennah.domain.search)


class SearchRequest(WireRequest):
    """Turn-level retrieval, and the agent's search_memory tool: the same search."""

    model_config = ConfigDict(json_schema_extra={"required": ["query"]})

    query: str = Field(
        description="The user's message, or the question the agent writes",
        json_schema_extra=_bounds(
            minLength=1, maxLength=rules.MAX_QUERY_TEXT_LENGTH, pattern=NON_BLANK
        ),
    )
    max_items: Int32 = Field(
        default=search_rules.DEFAULT_MAX_ITEMS,
        description=f"At most this many candidates, 1-{search_rules.MAX_ITEMS}",
        json_schema_extra=_bounds(minimum=1, maximum=search_rules.MAX_ITEMS),
    )
    token_budget: Int32 = Field(
        default=search_rules.DEFAULT_TOKEN_BUDGET,
        description=(
            "At most this many tokens for the whole rendering (`text`, its frame included), "
            f"{search_rules.MIN_TOKEN_BUDGET}-{search_rules.MAX_TOKEN_BUDGET}"
        ),
        json_schema_extra=_bounds(
            minimum=search_rules.MIN_TOKEN_BUDGET, maximum=search_rules.MAX_TOKEN_BUDGET
        ),
    )


class SearchCandidate(WireResponse):
    """One active, unexpired claim: a candidate to weigh, not a fact to repeat."""

    ref: str = Field(description="memory://{scopeId}/{memoryId}: read the whole claim with it")
    summary: str = Field(
        description=f"The claim's summary (else its body), at most {QUOTE_CHARS} characters"
    )
    type: MemoryTypeName
    age: str = Field(description='How long it has been remembered: "today", "3 days", "2 weeks", …')
    sensitivity: SensitivityName = Field(
        description="health, finances or minors: use only for the task at hand"
    )


class SearchResponse(WireResponse):
    """The claims closest to the query by meaning and by words (typos tolerated), best
    first, capped by maxItems and tokenBudget; no related claim is added."""

    candidates: list[SearchCandidate] = Field(default_factory=list)
    token_count: Int32 = Field(
        description="What `text` costs, counted with the WordPiece tokenizer of "
        "all-MiniLM-L6-v2 (the brief's); 0 when nothing was found"
    )
    text: str = Field(
        description="The candidates rendered for the turn: a delimited block of data, "
        "labelled as candidates to weigh, not facts to repeat; each line the claim's type, "
        "age, sensitivity when sensitive, its summary quoted and escaped, and its "
        'memory:// reference. "" when nothing was found'
    )


# memory:inspect


class InspectParams(WireRequest):
    """Query parameters of memory:inspect."""

    graph: bool = Field(default=False, description="Also list nodes and their edges")
    as_of_valid: Timestamp | None = Field(
        default=None,
        description="List what was valid at this instant instead of now; not with allHistory",
    )
    all_history: bool = Field(
        default=False, description="List every row, valid or not; not with asOfValid"
    )
    page_size: Int32 = Field(
        default=0, description="0 means 50; at most 1000", json_schema_extra=_bounds(minimum=0)
    )
    page_token: str = Field(default="", description="nextPageToken of the previous page")


class InspectResponse(WireResponse):
    """One page of a scope's chunks (and, with graph, its nodes and their edges).

    `asOfValid` is the instant listed (absent with allHistory); pass
    `nextPageToken` as pageToken, with the same other parameters, for the next page.
    """

    chunks: list[Chunk] = Field(default_factory=list)
    nodes: list[Node] | None = None
    edges: list[Edge] | None = None
    as_of_valid: Timestamp | None = None
    next_page_token: str | None = None


# a claim's evidence


class EvidenceLine(WireResponse):
    """One line of a claim's evidence ledger: the cited turns and the words quoted."""

    ref: str = Field(
        description="conv://{scopeId}/{stepId}#turn=a-b: an execution-log step's turns; or, "
        "on a claim a person wrote by editing another, memory://{scopeId}/{memoryId}: the "
        "claim itself, its quote the person's words"
    )
    quote: str
    recorded_at: Timestamp | None = Field(default=None, description="When it was recorded")


class ListEvidenceResponse(WireResponse):
    """Every evidence line of the claim, oldest first (then by ref); lines are appended
    when the claim is reinforced, never changed."""

    evidence: list[EvidenceLine] = Field(default_factory=list)


# a claim's edit (edit = supersede)


class EditMemoryRequest(WireRequest):
    """A person's correction of one claim: its new words."""

    text: str = Field(
        description="The new claim's body: 1-16,000 characters, not blank",
        json_schema_extra=_bounds(minLength=1, maxLength=rules.MAX_TEXT_LENGTH, pattern=NON_BLANK),
    )
    summary: str | None = Field(
        default=None,
        description="Its one-line summary, up to 1,024 characters; absent or blank: the "
        "text's first line, at most 200 characters (as formation derives one)",
        json_schema_extra=_bounds(maxLength=claims.MAX_SUMMARY_LENGTH),
    )


class EditMemoryResponse(WireResponse):
    """The new claim (authority user_explicit, supersedes the old) and the old claim, now
    superseded (supersededBy the new one); both stay readable."""

    memory: Chunk
    superseded: Chunk


# memory:form

TurnRoleName = Literal[
    "TURN_ROLE_USER", "TURN_ROLE_ASSISTANT", "TURN_ROLE_TOOL_CALL", "TURN_ROLE_TOOL_RESULT"
]
CandidateKindName = Literal["CANDIDATE_KIND_FACT", "CANDIDATE_KIND_RELATIONSHIP"]
DecisionName = Literal[
    "MEMORY_DECISION_NEW",
    "MEMORY_DECISION_REVISED",
    "MEMORY_DECISION_KNOWN",
    "MEMORY_DECISION_REJECTED",
]


class FormTurn(WireRequest):
    """One turn of the conversation, in order."""

    role: TurnRoleName
    content: str = Field(
        default="",
        description="The turn's text; may be empty or absent (an assistant turn that only "
        "called a tool), but not in every turn. A blank turn is kept in the conversation "
        "and its numbering, and no formed fact is attributed to it",
    )


class FormRequest(WireRequest):
    """memory:form: a conversation to form memory from."""

    model_config = ConfigDict(json_schema_extra={"required": ["turns"]})

    turns: list[FormTurn] = Field(
        default_factory=list,
        description="1-200 turns; the rendered conversation must fit the input-token cap of "
        "the enterprise's plan (8,192 tokens on Free; 16,384 on the trial, Pro, Scale and "
        "Team; 100,000 on Enterprise; estimated as its UTF-8 bytes / 4)",
        json_schema_extra=_bounds(
            minItems=1,
            maxItems=MAX_TURNS,
            contains={"required": ["content"], "properties": {"content": {"pattern": NON_BLANK}}},
        ),
    )
    observed_at: Timestamp | None = Field(
        default=None,
        description="When the conversation took place: the validAt of formed memory and the "
        "boundary for revisions; absent means now (real-time formation). Up to 5 minutes "
        "ahead of the receipt time (clock skew) is read as the receipt time; later is refused",
    )
    formation_key: str | None = Field(
        default=None,
        description="1-256 characters: a retry under the same key (same turns and "
        "observedAt) returns the original receipt instead of forming twice",
        json_schema_extra=_bounds(minLength=1, maxLength=MAX_FORMATION_KEY_LENGTH),
    )
    run_async: bool = Field(
        default=False,
        alias="async",
        strict=True,
        description="Answer at once with the operation (name, done) instead of waiting for "
        "the receipt; read it with GET /v1/operations/{operationId}",
    )


class Operation(WireResponse):
    """A long-running memory:form (google.longrunning.Operation): `response` holds the
    receipt once done, `error` the google.rpc.Status it failed with."""

    name: str = Field(description="operations/{operationId}")
    done: bool
    metadata: OperationMetadata
    response: FormResponse | None = None
    error: Status | None = None


class ListOperationsParams(PageParams):
    """Query parameters of GET /v1/operations."""


class ListOperationsResponse(WireResponse):
    """A page of the memory:form operations the caller may read (its enterprise's, in
    the agent workspaces it reaches), newest first (google.longrunning
    ListOperationsResponse)."""

    operations: list[Operation] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


class OperationMetadata(WireResponse):
    state: Literal["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
    agent_instance_id: str
    caller: str
    formation_key: str | None = None
    attempts: Int32
    create_time: Timestamp
    update_time: Timestamp
    expire_time: Timestamp = Field(description="When the operation is deleted (7 days)")


class FormCandidate(WireResponse):
    """One candidate of the receipt. `candidateId` correlates within the receipt only."""

    candidate_id: str
    kind: CandidateKindName
    text: str
    decision: DecisionName
    matched_id: str | None = Field(
        default=None,
        description="The existing memory reconciled against: the superseded one for "
        "REVISED, the matching one for KNOWN",
    )
    rejection_reason: str | None = Field(default=None, description="Only on REJECTED")
    preserves_structure: bool | None = Field(
        default=None,
        description="Present, true, only when the fact keeps a table or code block of its "
        "turn verbatim",
    )


class SummarizedStructure(WireResponse):
    """Tables and code blocks of one turn summarized into prose rather than kept verbatim."""

    turn_index: Int32
    description: str = Field(description='Such as "1 table" or "1 table, 2 code blocks"')
    summarized_count: Int32


class FormResponse(WireResponse):
    """The formation receipt. On a replay (`replay: true`) it is the original receipt:
    its formationUnits are what the original formation consumed, not this request."""

    commit_timestamp: Timestamp | None = None
    candidates: list[FormCandidate] = Field(default_factory=list)
    chunk_supersessions: Int64 = 0
    edge_supersessions: Int64 = 0
    summarized_structures: list[SummarizedStructure] = Field(default_factory=list)
    candidates_dropped: Int64 = 0
    candidate_cap: Int32 = 64
    execution_log_rows: Int64 = Field(
        default=0, description="0 when nothing was written or the step already existed"
    )
    formation_units: Int64 = 0
    input_tokens: Int64 = Field(default=0, description="Reported by the model, summed")
    output_tokens: Int64 = Field(
        default=0, description="Reported by the model, summed, reasoning included"
    )
    replay: bool = False


# memory:dream


class DreamResponse(WireResponse):
    """What the lifecycle pass changed: claims expired (their validUntil arrived in the
    scope's time zone), promoted (passing, reinforced three times: now durable) and decayed
    (inferred, not reinforced for 180 days: now dormant), and whether the brief was
    recompiled to other bytes. All zero and false when nothing was due (a replay)."""

    expired: Int32 = 0
    promoted: Int32 = 0
    decayed: Int32 = 0
    brief_changed: bool = False


# execution-log steps


class ExecutionLogStep(WireResponse):
    """The rendered turns of a formation that wrote memory.

    Turn i of `toolInput` runs from byte offset i of `metadata["jennah.turn_offsets"]`
    (comma-joined UTF-8 byte offsets) to offset i+1, the last to the end. Slice by
    offset, never by parsing the turn headers.
    """

    name: str = Field(description="agents/{agentInstanceId}/memory/steps/{stepId}")
    step_id: str
    tool_input: str
    metadata: dict[str, str] = Field(default_factory=dict)
    create_time: Timestamp | None = None


# memory vocabulary

_LEVEL_HELP = (
    "The scope whose level this is (agent workspaces and subject scopes alike); "
    "absent means the enterprise level"
)
_NAME_HELP = "1-64 letters (of any script), digits, '_', '.' or '-'"
_NAME_BOUNDS = _bounds(minLength=1, maxLength=MAX_NAME_LENGTH)
_DESCRIPTION_HELP = (
    "Up to 200 characters, line breaks flattened; supplied to the extraction model beside the name"
)


class DeclaredEntityClass(WireRequest):
    """An entity class formed memory is classified against."""

    name: str = Field(description=_NAME_HELP, json_schema_extra=_NAME_BOUNDS)
    description: str = Field(default="", description=_DESCRIPTION_HELP)


class DeclaredSignature(WireRequest):
    """An expected (source class, target class) pair of a relation type; never enforced."""

    source_class: str = Field(description="An entity class this declaration declares")
    target_class: str = Field(description="An entity class this declaration declares")


class DeclaredRelationType(WireRequest):
    """A relation type formation is expected to use: guidance, not a closed set."""

    name: str = Field(description=_NAME_HELP, json_schema_extra=_NAME_BOUNDS)
    description: str = Field(default="", description=_DESCRIPTION_HELP)
    signatures: list[DeclaredSignature] = Field(
        default_factory=list,
        description="At most 6",
        json_schema_extra=_bounds(maxItems=MAX_SIGNATURES),
    )


class DeclaredVocabulary(WireRequest):
    """A whole declaration; one with no entity classes turns classification off."""

    entity_classes: list[DeclaredEntityClass] = Field(
        default_factory=list,
        description="At most 32, each name once",
        json_schema_extra=_bounds(maxItems=MAX_ENTITY_CLASSES),
    )
    relation_types: list[DeclaredRelationType] = Field(
        default_factory=list,
        description="At most 32, each name once",
        json_schema_extra=_bounds(maxItems=MAX_RELATION_TYPES),
    )


def _require_vocabulary(schema: dict[str, Any]) -> None:
    """`vocabulary` is required and not null in the document, as the service refuses a
    declaration without one (the model reads it as optional so that the service can say
    why)."""
    schema["required"] = ["vocabulary"]
    vocabulary = schema["properties"]["vocabulary"]
    del vocabulary["default"]
    vocabulary |= next(option for option in vocabulary.pop("anyOf") if "$ref" in option)


class DeclareVocabularyRequest(WireRequest):
    """PUT /v1/memory/vocabulary: replace one level's declaration whole (never merged).

    `vocabulary` is required: absent is refused, never read as an empty declaration
    or a removal. `scopeId` belongs here, in the body: a scopeId query parameter is
    ignored, so the declaration would land at the enterprise level.
    """

    model_config = ConfigDict(json_schema_extra=_require_vocabulary)

    scope_id: str | None = Field(
        default=None, description=_LEVEL_HELP, json_schema_extra=_identifier()
    )
    vocabulary: DeclaredVocabulary | None = Field(
        default=None,
        description="Required. {} (no entity classes) declares an empty vocabulary: "
        "classification off at this level; DELETE removes a declaration",
    )


class VocabularyParams(WireRequest):
    """Query parameters of GET and DELETE /v1/memory/vocabulary."""

    scope_id: str | None = Field(
        default=None, description=_LEVEL_HELP, json_schema_extra=_identifier()
    )


class EntityClass(WireResponse):
    name: str
    description: str = ""


class Signature(WireResponse):
    source_class: str
    target_class: str


class RelationType(WireResponse):
    name: str
    description: str = ""
    signatures: list[Signature] = Field(default_factory=list)


class Vocabulary(WireResponse):
    entity_classes: list[EntityClass] = Field(default_factory=list)
    relation_types: list[RelationType] = Field(default_factory=list)


class VocabularyDeclaration(Vocabulary):
    """What one level declares; with no entity classes, classification is off there."""

    update_time: Timestamp | None = Field(default=None, description="When it was last declared")


class VocabularyResponse(WireResponse):
    """`declaration`: what THIS level declares, absent when it declares nothing (a scope
    then inherits the enterprise default). `resolved`: what formation uses here,
    absent when nothing classifies (no vocabulary, or an empty one)."""

    declaration: VocabularyDeclaration | None = None
    resolved: Vocabulary | None = None


# administration: API keys, role bindings, users, scopes, the caller

ScopeKindName = Literal["AGENT", "SUBJECT"]
KeyState = Literal["ACTIVE", "REVOKED", "EXPIRED"]
CallerKindName = Literal["USER", "API_KEY"]
_DURATION = re.compile(r"^(\d{1,12})(\.\d{1,9})?s$")
_ROLE_HELP = "root, administrator or member"
_PRINCIPAL_HELP = "user:<id> or api_key:<keyId>"
_PRINCIPAL_BOUNDS = _bounds(pattern=_PRINCIPAL)
_SELECTOR_HELP = "Scope ids or patterns where '*' matches any run of characters, such as bot.*"


def parse_duration(value: object) -> timedelta:
    """A proto3 JSON Duration such as "3600s" or "1.5s"."""
    if isinstance(value, timedelta):
        return value
    found = _DURATION.match(value) if isinstance(value, str) else None
    if found is None:
        raise ValueError("must be a duration in seconds with the suffix 's', such as 3600s")
    return timedelta(seconds=int(found.group(1)), microseconds=_micros(found.group(2)))


def _micros(fraction: str | None) -> int:
    return 0 if not fraction else round(float(fraction) * 1_000_000)


def format_duration(value: timedelta) -> str:
    seconds = value.total_seconds()
    return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds:.6f}".rstrip("0") + "s"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "google-duration", "example": "86400s"}),
]


class CreateApiKeyRequest(WireRequest):
    """A new API key and its role binding; give expireTime or ttl, or neither (no expiry).
    expireTime must be in the future and ttl positive."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {"allOf": [_given("expireTime", "string"), _given("ttl", "string")]}
        }
    )

    display_name: str = Field(
        default="",
        description="Up to 128 characters",
        json_schema_extra=_bounds(maxLength=MAX_DISPLAY_NAME),
    )
    role: str = Field(description=_ROLE_HELP, json_schema_extra=_ROLE)
    agent_selectors: list[str] = Field(
        default_factory=list,
        description="Agent workspaces the key reaches. " + _SELECTOR_HELP,
        json_schema_extra=_SELECTORS,
    )
    subject_selectors: list[str] = Field(
        default_factory=list,
        description="Subject scopes the key reaches. " + _SELECTOR_HELP,
        json_schema_extra=_SELECTORS,
    )
    expire_time: Timestamp | None = Field(default=None, description="When the key stops working")
    ttl: Duration | None = Field(default=None, description="Lifetime from now, such as 86400s")


class ApiKeyResource(WireResponse):
    """An API key. `keyString` (the bearer credential) is in the answer to apiKeys.create
    only: the service keeps nothing but its hash."""

    name: str = Field(description="apiKeys/{keyId}")
    key_id: str
    display_name: str = ""
    roles: list[str] = Field(default_factory=list, description="The roles bound to the key")
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)
    created_by: str = Field(description="The principal that created it; the key acts as itself")
    create_time: Timestamp
    expire_time: Timestamp | None = None
    revoke_time: Timestamp | None = None
    state: KeyState
    key_string: str | None = Field(
        default=None, description="The bearer credential; shown once, at creation"
    )


class ListApiKeysParams(PageParams):
    """Query parameters of GET /v1/apiKeys."""


class ListApiKeysResponse(WireResponse):
    """A page of the enterprise's API keys, ordered by key id."""

    api_keys: list[ApiKeyResource] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


class GrantRoleRequest(WireRequest):
    """Bind a role (and reach) to a principal; replaces its binding of that role."""

    principal: str = Field(description=_PRINCIPAL_HELP, json_schema_extra=_PRINCIPAL_BOUNDS)
    role: str = Field(description=_ROLE_HELP, json_schema_extra=_ROLE)
    agent_selectors: list[str] = Field(
        default_factory=list, description=_SELECTOR_HELP, json_schema_extra=_SELECTORS
    )
    subject_selectors: list[str] = Field(
        default_factory=list, description=_SELECTOR_HELP, json_schema_extra=_SELECTORS
    )


class RevokeRoleRequest(WireRequest):
    principal: str = Field(description=_PRINCIPAL_HELP, json_schema_extra=_PRINCIPAL_BOUNDS)
    role: str = Field(description=_ROLE_HELP, json_schema_extra=_ROLE)


class RoleBindingResource(WireResponse):
    principal: str
    role: str
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)


class ListRoleBindingsParams(PageParams):
    principal: str | None = Field(
        default=None,
        description="Only this principal's bindings",
        json_schema_extra=_PRINCIPAL_BOUNDS,
    )


class ListRoleBindingsResponse(WireResponse):
    """A page of the enterprise's role bindings, ordered by principal, then role."""

    role_bindings: list[RoleBindingResource] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


class Empty(WireResponse):
    """An empty answer, as google.protobuf.Empty prints."""


class CreateUserRequest(WireRequest):
    principal: str = Field(
        description="user:<id>, such as user:ana@example.com",
        json_schema_extra=_bounds(pattern=USER_PRINCIPAL.pattern),
    )


class UserResource(WireResponse):
    """A user; `token` (a development credential) is in the answer to users.create only."""

    principal: str
    create_time: Timestamp | None = None
    token: str | None = Field(default=None, description="The bearer credential; shown once")


_TIME_ZONE_HELP = (
    "The IANA time zone the scope's own calendar is judged in (a claim's validUntil "
    "expires it at the scope's local time), such as Europe/Lisbon; default (absent or empty) UTC"
)
UPDATABLE_SCOPE_FIELDS = ("timeZone",)  # the updateMask paths PATCH takes ("*": all)
_UPDATE_MASK = r"^(\*|timeZone|time_zone)(,(\*|timeZone|time_zone))*$"


class CreateScopeRequest(WireRequest):
    scope_id: str = Field(
        description="1-128 letters, digits, '_', '.', ':' or '-'", json_schema_extra=_identifier()
    )
    kind: ScopeKindName = Field(description="AGENT (an agent workspace) or SUBJECT")
    time_zone: str | None = Field(default=None, description=_TIME_ZONE_HELP)


class UpdateScopeRequest(WireRequest):
    """PATCH /v1/scopes/{scopeId}: the fields to change (all the updateMask names, or
    every field given when there is no updateMask)."""

    time_zone: str | None = Field(default=None, description=_TIME_ZONE_HELP)


class UpdateScopeParams(WireRequest):
    """Query parameters of PATCH /v1/scopes/{scopeId} (AIP-134)."""

    update_mask: str | None = Field(
        default=None,
        description="Comma-separated fields to update: timeZone (or *, every updatable "
        "field). A field named but absent from the body is reset to its default (UTC). "
        "Absent: every field the body gives",
        json_schema_extra=_bounds(pattern=_UPDATE_MASK),
    )


class ScopeResource(WireResponse):
    name: str = Field(description="scopes/{scopeId} or agents/{agentInstanceId}")
    scope_id: str
    kind: ScopeKindName
    create_time: Timestamp | None = None
    created_by: str = ""
    time_zone: str = Field(
        default="UTC", description="The IANA time zone its calendar is judged in"
    )


class ListScopesParams(PageParams):
    kind: ScopeKindName | None = Field(default=None, description="Only scopes of this kind")


class ListScopesResponse(WireResponse):
    """A page of the scopes the caller reaches, ordered by id."""

    scopes: list[ScopeResource] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


class ListAgentsParams(PageParams):
    """Query parameters of GET /v1/agents."""


class ListAgentsResponse(WireResponse):
    """A page of the agent workspaces the caller reaches, ordered by id."""

    agents: list[ScopeResource] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


class DestroyScopeResponse(WireResponse):
    scope_id: str
    rows_erased: Int64 = Field(default=0, description="Rows erased from the store")


class CallerResponse(WireResponse):
    """Who the credential proves, and what it may do."""

    enterprise: str
    principal: str
    kind: CallerKindName
    roles: list[str] = Field(default_factory=list)
    permissions: list[str] = Field(
        default_factory=list,
        description="Usable permissions: an API key never has management-class ones",
    )
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)


# errors


class ErrorInfo(WireResponse):
    type: Literal["type.googleapis.com/google.rpc.ErrorInfo"] = Field(
        default="type.googleapis.com/google.rpc.ErrorInfo", alias="@type"
    )
    reason: str
    domain: str = "jennah"
    metadata: dict[str, str] = Field(default_factory=dict)


class FieldViolation(WireResponse):
    field: str
    description: str


class BadRequest(WireResponse):
    type: Literal["type.googleapis.com/google.rpc.BadRequest"] = Field(
        default="type.googleapis.com/google.rpc.BadRequest", alias="@type"
    )
    field_violations: list[FieldViolation] = Field(default_factory=list)


# billing and usage

PlanName = Literal["FREE", "TRIAL", "PRO", "SCALE", "TEAM", "ENTERPRISE"]
AllowanceMeasureName = Literal["FORMATION_UNITS", "OUTPUT_TOKENS"]
ResetName = Literal["DAILY", "MONTHLY", "NOT_BEFORE_TRIAL_ENDS"]
PerName = Literal["day", "week", "month"]
DimensionName = Literal["scope", "caller", "model", "region"]


class BillingState(WireResponse):
    """The billing state of the current allowance period, in formation units (on Free
    the allowance is in output tokens per day: allowanceMeasure OUTPUT_TOKENS)."""

    plan: PlanName
    billable: bool = Field(
        description="Holds an active marketplace subscription (overage needs it and a plan "
        "with overage: Pro, Scale or Team)"
    )
    allowance: Int64
    allowance_measure: AllowanceMeasureName
    resets: ResetName
    period_start_time: Timestamp
    period_end_time: Timestamp = Field(description="When the allowance resets (or the trial ends)")
    units_used: Int64
    output_tokens_used: Int64
    overage_units: Int64 = Field(description="Units past the allowance, billed as overage")
    overage_multiple: float = Field(description="0 to 10 in steps of 0.5; 0 turns overage off")
    overage_band: Int64 = Field(description="multiple x the plan's monthly fee, in units")
    overage_limit: Int64 = Field(
        description="Formations are refused from here: the allowance, plus the band when "
        "overage is on"
    )
    formations_in_progress: Int32


class SetOverageMultipleRequest(WireRequest):
    overage_multiple: float = Field(
        description="0 to 10 in steps of 0.5; 0 turns overage off; applies to the next formation",
        json_schema_extra=_bounds(
            minimum=0, maximum=MAX_OVERAGE_MULTIPLE, multipleOf=OVERAGE_MULTIPLE_STEP
        ),
    )


class FormationTokensParams(WireRequest):
    """Query parameters of GET /v1/billing/usage/formation-tokens."""

    start_time: Timestamp = Field(description="Required; at most 400 days back")
    end_time: Timestamp | None = Field(default=None, description="After startTime; default: now")
    per: PerName = Field(default="day", description="day, week (ISO, Monday start) or month")
    time_zone: str = Field(default="UTC", description="IANA name the calendar is taken in")
    group_by: DimensionName | None = Field(default=None, description="One of the dimensions")
    scope: str | None = Field(default=None, description="Count only this scope")
    caller: str | None = Field(default=None, description="Only user:<id> or api_key:<id>")
    model: str | None = Field(default=None, description="Only this model")
    region: str | None = Field(default=None, description="Only this region")


class TokenBucket(WireResponse):
    start_time: Timestamp
    end_time: Timestamp
    key: str | None = Field(default=None, description="The group's value, with groupBy")
    input_tokens: Int64
    output_tokens: Int64
    units: Int64 = Field(description="Formation units of the bucket's formations")


class FormationTokensResponse(WireResponse):
    """Aggregated usage, never per formation: buckets ordered by start time, then key;
    a bucket or group with nothing counted is absent."""

    buckets: list[TokenBucket] = Field(default_factory=list)
    per: PerName
    time_zone: str
    group_by: DimensionName | None = None
    start_time: Timestamp
    end_time: Timestamp


class RetryInfo(WireResponse):
    """google.rpc.RetryInfo: retry no sooner than `retryDelay` (a Duration, e.g. "5s")."""

    type: Literal["type.googleapis.com/google.rpc.RetryInfo"] = Field(
        default="type.googleapis.com/google.rpc.RetryInfo", alias="@type"
    )
    retry_delay: str


class BriefParams(WireRequest):
    """Query parameters of GET .../memory/brief."""

    variant: Literal["full", "shared"] = Field(
        default="full",
        description=(
            "full (the default): every section; shared: without Last conversation, for a "
            "thread several people read"
        ),
    )


class BriefResponse(WireResponse):
    """The scope's brief: what its agent starts every conversation with.

    A block of data (never instructions) of at most 2,000 tokens: Identity, Directives
    (hard rules first), Topic index (what the scope holds, with counts) and, in the full
    variant, Last conversation. Each line quotes one claim, escaped and length-capped, and
    ends with its `memory://{scope}/{memoryId}` reference. The same memory always gives
    the same bytes; lines whose claim's validUntil has passed are left out when served.
    """

    brief: str
    token_count: Int32 = Field(
        description="Its tokens, counted with the WordPiece tokenizer of all-MiniLM-L6-v2"
    )


class Status(WireResponse):
    """google.rpc.Status as Google's REST APIs print it."""

    code: int
    status: str
    message: str
    details: list[ErrorInfo | BadRequest | RetryInfo] = Field(default_factory=list)


class ErrorResponse(WireResponse):
    error: Status


# reading memory: a whole claim, a conversation excerpt, the memory card


class LineageLink(WireResponse):
    """A claim in another's lineage."""

    ref: str = Field(description="memory://{scopeId}/{memoryId}")
    memory_id: str
    summary: str = ""
    status: StatusName = "active"
    formed_at: Timestamp | None = None


class ClaimLineage(WireResponse):
    """A claim's corrections, both ways, each chain nearest first (at most 32 each way)."""

    supersedes: list[LineageLink] = Field(
        default_factory=list,
        description="The claim this one replaced, then the one that one replaced, ...",
    )
    superseded_by: list[LineageLink] = Field(
        default_factory=list,
        description="The claim that replaced this one, then the one that replaced it, ...",
    )


class ClaimResponse(WireResponse):
    """One whole claim (read_memory), whatever its status: the claim as memory:query and
    memory:inspect show it, its reference, its lineage and its OKF file."""

    ref: str = Field(description="memory://{scopeId}/{memoryId}")
    claim: Chunk
    lineage: ClaimLineage
    okf: str = Field(
        description="The claim's OKF file as memory:export writes it: YAML front matter "
        "between --- lines, then the body"
    )


class ReadExcerptRequest(WireRequest):
    ref: str = Field(
        description="conv://{scopeId}/{stepId}#turn=a-b (turns numbered from 0, as "
        "evidence lines cite them; #turn=a for one turn; no fragment: every turn of the "
        "step, at most 200). The scope must be the one read",
        json_schema_extra=_bounds(maxLength=1000),
    )


class ExcerptTurnOut(WireResponse):
    number: Int32 = Field(description="The turn's number in its step, from 0")
    role: TurnRoleName
    text: str = Field(description="The turn's words, as they were sent")


class ReadExcerptResponse(WireResponse):
    """Exactly the cited turns of the execution-log step, in order."""

    ref: str
    step_id: str
    turns: list[ExcerptTurnOut] = Field(default_factory=list)
    turn_count: Int32 = Field(description="How many turns the step holds")


class ListMemoriesParams(PageParams):
    """Query parameters of the memory card."""

    filter: str = Field(
        default="",
        description='AIP-160 subset: terms joined with AND, each status = "active", '
        'type = "directive", sensitivity = "health" or appliesTo = "NODE_ID", each field '
        "once. Without a status term every status but retracted is listed",
        json_schema_extra=_bounds(maxLength=1000),
    )


class MemoryCardItem(WireResponse):
    """One claim of the card: what it says, what it concerns, and how long it has been
    remembered."""

    ref: str = Field(description="memory://{scopeId}/{memoryId}")
    memory_id: str
    summary: str = ""
    about: str = ""
    applies_to: list[str] = Field(default_factory=list)
    type: MemoryTypeName = "fact"
    status: StatusName = "active"
    sensitivity: SensitivityName = "normal"
    formed_at: Timestamp | None = None
    age: str = Field(
        description='How long it has been remembered: "today", "3 days", "2 weeks", ...'
    )


class ListMemoriesResponse(WireResponse):
    """A page of the memory card: newest first (by when the claim was written, then id)."""

    memories: list[MemoryCardItem] = Field(default_factory=list)
    next_page_token: str | None = Field(default=None, description=_NEXT_PAGE_HELP)


# forget = retract + suppress (api/forgetting.py serves them)


class ForgetRequest(WireRequest):
    """memory:forget takes no field; an empty body (or none) is the request."""


class SuppressionResource(WireResponse):
    """A suppression rule: formation answers a candidate with the same words as the
    forgotten claim, or a paraphrase of it, as REJECTED naming this rule."""

    id: str = Field(description="sup_ and 16 hex digits")
    memory_id: str = Field(description="The forgotten (retracted) claim")
    about: str = ""
    summary: str = ""
    text: str = Field(description="The forgotten claim's body")
    created_at: Timestamp | None = None
    created_by: str = Field(default="", description="The principal who forgot it")


class ForgetResponse(WireResponse):
    memory: Chunk = Field(description="The claim as stored now: status retracted")
    suppression: SuppressionResource


class ForgetGroupRequest(WireRequest):
    """Exactly one of appliesTo, about or type picks the group."""

    applies_to: str | None = Field(
        default=None, description="A graph node id: the claims whose appliesTo names it"
    )
    about: str | None = Field(
        default=None,
        description="The claims about this (compared ignoring case and spacing)",
        max_length=2000,
    )
    type: MemoryType | None = Field(default=None, description="The claims of this type")
    validate_only: bool = Field(default=False, description="Count the group and write nothing")
    expected_count: Int32 | None = Field(
        default=None,
        description="Required unless validateOnly: the count a validateOnly call answered; "
        "another count now is FAILED_PRECONDITION GROUP_CHANGED and nothing is written",
        json_schema_extra={"minimum": 0},
    )


class ForgetGroupResponse(WireResponse):
    count: Int32 = Field(
        description="The active, dormant and expired claims of the group (retracted now, "
        "unless validateOnly)"
    )
    max_count: Int32 = Field(
        default=MAX_GROUP_CLAIMS, description="The most claims one forgetGroup retracts"
    )
    validate_only: bool = False
    memory_ids: list[str] = Field(
        default_factory=list, description="The group's claims by id (at most maxCount)"
    )
    suppressions: list[SuppressionResource] = Field(
        default_factory=list, description="One per retracted claim; none for validateOnly"
    )


class ListSuppressionsParams(PageParams):
    """pageSize and pageToken (AIP-158)."""


class ListSuppressionsResponse(WireResponse):
    """A page of the scope's suppression rules, ordered by id."""

    suppressions: list[SuppressionResource] = Field(default_factory=list)
    next_page_token: str | None = Field(
        default=None, description="Pass as pageToken for the next page; absent on the last page"
    )


# keyed memory: …/keyedMemories (api/keyed.py serves them; jennah.domain.keyed has the bounds)


_KEY_HELP = (
    f"Lowercase letters, digits, '-' and '_'; 1-{keyed_rules.MAX_KEY_CHARS} characters. Names the "
    "subject (harbor-status-reports), not the date"
)


class RememberRequest(WireRequest):
    """PUT …/keyedMemories/{key}: create (expectedVersion 0) or update an entry."""

    content: str = Field(
        description=f"Non-empty text, at most {keyed_rules.MAX_CONTENT_CHARS:,} characters",
        json_schema_extra={"minLength": 1, "maxLength": keyed_rules.MAX_CONTENT_CHARS,
                           "pattern": r"\S"},
    )  # fmt: skip
    expected_version: VersionIn = Field(
        description="0 creates the key (ALREADY_EXISTS when it exists); N updates only "
        "while the stored version is N, else ABORTED with reason "
        f"{keyed_rules.VERSION_MISMATCH} and currentVersion in the error details. A JSON "
        "number or, as int64 values travel in proto3 JSON, a decimal string",
    )


class LinkRequest(WireRequest):
    """POST …/keyedMemories/{key}:link or :unlink."""

    target: str = Field(
        description=f"The other entry's key. {_KEY_HELP}",
        json_schema_extra={"pattern": keyed_rules.KEY_PATTERN.pattern},
    )


class RecallRequest(WireRequest):
    """POST …/keyedMemories:recall."""

    request: str = Field(
        description="The current request: its words (at least one that is not a stop "
        "word) are compared with keys and contents "
        f"(at most {keyed_rules.MAX_REQUEST_CHARS:,} characters)",
        json_schema_extra={"maxLength": keyed_rules.MAX_REQUEST_CHARS, "pattern": "[A-Za-z0-9]"},
    )
    token_budget: Int32 = Field(
        description=f"Tokens the answer may hold, 1-{keyed_rules.MAX_TOKEN_BUDGET:,} (the brief's "
        "WordPiece tokenizer over each entry's key and content); never exceeded",
        json_schema_extra={"minimum": 1, "maximum": keyed_rules.MAX_TOKEN_BUDGET},
    )


class SearchKeyedMemoriesRequest(PageParams):
    """POST …/keyedMemories:search (read_memories): the query, and the page (pageSize,
    pageToken) in the body."""

    query: str = Field(
        description="Words to look for in keys and contents (at least one that is not a "
        f"stop word; at most {keyed_rules.MAX_REQUEST_CHARS:,} characters)",
        json_schema_extra={"maxLength": keyed_rules.MAX_REQUEST_CHARS, "pattern": "[A-Za-z0-9]"},
    )


class KeyedMemoryParams(PageParams):
    """Query parameters of GET …/keyedMemories and POST …/keyedMemories:search."""


class KeyedMemoryResource(WireResponse):
    key: str = Field(description=_KEY_HELP)
    content: str
    version: Int64 = Field(description="1 on create, one more on each update")
    links: list[str] = Field(
        default_factory=list,
        description=f"Keys of the linked entries (symmetric; at most {keyed_rules.MAX_LINKS})",
    )
    create_time: Timestamp
    update_time: Timestamp


class ListKeyedMemoriesResponse(WireResponse):
    """A page of entries, most recently updated first."""

    keyed_memories: list[KeyedMemoryResource] = Field(default_factory=list)
    next_page_token: str | None = None


class SearchHit(WireResponse):
    key: str
    content: str
    version: Int64
    update_time: Timestamp
    matched_words: Int32 = Field(description="How many distinct query words the entry holds")


class SearchKeyedMemoriesResponse(WireResponse):
    """Entries holding the query's words: most words first, then most recently updated."""

    results: list[SearchHit] = Field(default_factory=list)
    next_page_token: str | None = None


class RecalledMemory(WireResponse):
    key: str
    content: str
    version: Int64
    via: Literal["MATCH", "LINK"] = Field(
        description="MATCH: its words matched the request; LINK: linked with a match"
    )


class RecallResponse(WireResponse):
    memories: list[RecalledMemory] = Field(default_factory=list)
    token_count: Int32 = Field(description="Tokens of the memories, never over tokenBudget")


def dump(model: BaseModel) -> dict[str, object]:
    """A response model as its JSON object, absent optional fields omitted."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


Operation.model_rebuild()  # it names models defined after it
