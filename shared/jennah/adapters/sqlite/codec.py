"""Conversions between domain models and SQLite column values.

Timestamps are stored as integer microseconds since the Unix epoch (UTC); a
naive datetime is taken to be UTC. Maps are JSON text with sorted keys.
Embeddings are sqlite-vec float32 BLOBs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from jennah.domain.claim_state import ClaimState
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    EMBEDDING_DIMENSIONS,
    Authority,
    Durability,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.errors import InvalidArgument

if TYPE_CHECKING:
    from sqlite3 import Row

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(value: datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - _EPOCH) // _MICROSECOND


def required_micros(value: datetime) -> int:
    micros = to_micros(value)
    assert micros is not None
    return micros


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + timedelta(microseconds=value)


def required_datetime(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def to_json(values: Mapping[str, str]) -> str:
    if not values:  # most records' metadata and extensions: skip the encoder
        return "{}"
    return json.dumps(dict(values), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def from_json(text: str) -> dict[str, str]:
    if text == "{}":  # most records' metadata and extensions: skip the parser
        return {}
    loaded: dict[str, str] = json.loads(text)
    return loaded


def list_to_json(values: Sequence[str]) -> str:
    if not values:
        return "[]"
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)


def list_from_json(text: str) -> list[str]:
    if text == "[]":
        return []
    loaded: list[str] = json.loads(text)
    return loaded


def times_to_json(values: Mapping[str, datetime]) -> str:
    """{key: epoch microseconds} as JSON text (a brief's expiries)."""
    return json.dumps({k: required_micros(v) for k, v in sorted(values.items())})


def times_from_json(text: str) -> dict[str, datetime]:
    return {k: required_datetime(int(v)) for k, v in json.loads(text).items()}


def embedding_blob(vector: Sequence[float] | None, field: str) -> bytes | None:
    """float32 bytes of a 384-d vector, or None; InvalidArgument on another length."""
    if vector is None:
        return None
    if len(vector) != EMBEDDING_DIMENSIONS:
        raise InvalidArgument(
            f"{field} has {len(vector)} dimensions; the store holds "
            f"{EMBEDDING_DIMENSIONS}-dimensional embeddings",
            field=field,
        )
    return np.asarray(vector, dtype=np.float32).tobytes()


def embedding_list(blob: bytes | None) -> list[float] | None:
    if blob is None:
        return None
    values: list[float] = np.frombuffer(blob, dtype=np.float32).tolist()
    return values


def record_params(record: MemoryRecord, scope: ScopeRef, commit_us: int) -> dict[str, Any]:
    """Named parameters for one memory_records row; created_at/updated_at = the commit."""
    return {
        "enterprise_id": scope.enterprise_id,
        "scope_id": scope.scope_id,
        "id": record.id,
        "key": record.key,
        "revision": record.revision,
        "content_hash": record.content_hash,
        "text": record.text,
        "summary": record.summary,
        "about": record.about,
        "when_to_use": record.when_to_use,
        "type": record.type.value,
        "metadata": to_json(record.metadata),
        "strength": record.strength.value,
        "pin": int(record.pin),
        "authority": record.authority.value,
        "confidence": record.confidence,
        "sensitivity": record.sensitivity.value,
        "valid_at": to_micros(record.valid_at),
        "invalid_at": to_micros(record.invalid_at),
        "valid_until": to_micros(record.valid_until),
        "created_at": commit_us,
        "updated_at": commit_us,
        "retired_at": to_micros(record.retired_at),
        "status": record.status.value,
        "supersedes": record.supersedes,
        "superseded_by": record.superseded_by,
        "durability": record.durability.value,
        "reinforcement_count": record.reinforcement_count,
        "last_reinforced_at": to_micros(record.last_reinforced_at),
        "applies_to": list_to_json(record.applies_to),
        "related": list_to_json(record.related),
        "needs_enrichment": int(record.needs_enrichment),
        "extensions": to_json(record.extensions),
        "embedding": embedding_blob(record.embedding, f"chunks[{record.id}].embedding"),
    }


RECORD_COLUMNS = (
    "enterprise_id, scope_id, id, key, revision, content_hash, text, summary, about, "
    "when_to_use, type, metadata, strength, pin, authority, confidence, sensitivity, "
    "valid_at, invalid_at, valid_until, created_at, updated_at, retired_at, status, "
    "supersedes, superseded_by, durability, reinforcement_count, last_reinforced_at, "
    "applies_to, related, needs_enrichment, extensions, embedding"
)
# The same columns with NULL for the embedding (reads of many claims that rank nothing).
RECORD_COLUMNS_WITHOUT_EMBEDDING = RECORD_COLUMNS.removesuffix("embedding") + "NULL"


# Read back on every search and by the hundreds by list_claims: converted by position (the
# columns of RECORD_COLUMNS, in order), enums through dicts and the record's ScopeRef
# (frozen) shared per scope, and restored the way pydantic unpickles a model (its
# __setstate__: the fields' dict, the fields set, no extra, no private attributes),
# several times faster than model_construct, which walks every field for defaults.
_RECORD_FIELDS = frozenset(MemoryRecord.model_fields)
_TYPES = {member.value: member for member in MemoryType}
_STRENGTHS = {member.value: member for member in Strength}
_AUTHORITIES = {member.value: member for member in Authority}
_SENSITIVITIES = {member.value: member for member in Sensitivity}
_STATUSES = {member.value: member for member in Status}
_DURABILITIES = {member.value: member for member in Durability}


@functools.lru_cache(maxsize=4096)
def _scope_ref(enterprise_id: str, scope_id: str) -> ScopeRef:
    return ScopeRef(enterprise_id=enterprise_id, scope_id=scope_id)


_NEW_RECORD = MemoryRecord.__new__


def _restored(fields: dict[str, Any]) -> MemoryRecord:
    """A MemoryRecord of `fields` (every field's value, taken as is), not validated again
    (see above)."""
    record = _NEW_RECORD(MemoryRecord)
    record.__setstate__(
        {
            "__dict__": fields,
            "__pydantic_fields_set__": set(_RECORD_FIELDS),  # its own: setting a field adds
            "__pydantic_extra__": None,
            "__pydantic_private__": None,
        }
    )
    return record


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """The record a memory_records row (RECORD_COLUMNS, in order) holds. Every row was
    validated as a MemoryRecord when it was written, so it is constructed without
    validating again (the columns' types are the fields'; enums are converted here, as
    validation would)."""
    (
        enterprise_id, scope_id, record_id, key, revision, content_hash, text, summary,
        about, when_to_use, type_, metadata, strength, pin, authority, confidence,
        sensitivity, valid_at, invalid_at, valid_until, created_at, updated_at, retired_at,
        status, supersedes, superseded_by, durability, reinforcement_count,
        last_reinforced_at, applies_to, related, needs_enrichment, extensions, embedding,
    ) = row  # fmt: skip
    return _restored(
        {
            "id": record_id,
            "scope": _scope_ref(enterprise_id, scope_id),
            "key": key,
            "revision": revision,
            "content_hash": content_hash,
            "text": text,
            "summary": summary,
            "about": about,
            "when_to_use": when_to_use,
            "type": _TYPES[type_],
            "metadata": from_json(metadata),
            "strength": _STRENGTHS[strength],
            "pin": bool(pin),
            "authority": _AUTHORITIES[authority],
            "confidence": float(confidence),
            "sensitivity": _SENSITIVITIES[sensitivity],
            "valid_at": from_micros(valid_at),
            "invalid_at": from_micros(invalid_at),
            "valid_until": from_micros(valid_until),
            "created_at": from_micros(created_at),
            "updated_at": from_micros(updated_at),
            "retired_at": from_micros(retired_at),
            "status": _STATUSES[status],
            "supersedes": supersedes,
            "superseded_by": superseded_by,
            "durability": _DURABILITIES[durability],
            "reinforcement_count": reinforcement_count,
            "last_reinforced_at": from_micros(last_reinforced_at),
            "applies_to": list_from_json(applies_to),
            "related": list_from_json(related),
            "needs_enrichment": bool(needs_enrichment),
            "extensions": from_json(extensions),
            "embedding": embedding_list(embedding),
        }
    )


# A ClaimState's columns, in its fields' order; the source step read out of the metadata
# by SQLite (no JSON parsed in Python). The key holds a '.': quoted as a JSON path label.
CLAIM_STATE_COLUMNS = (
    "id, revision, status, type, about, summary, text, strength, pin, authority, "
    "sensitivity, durability, reinforcement_count, valid_at, invalid_at, valid_until, "
    f"retired_at, created_at, last_reinforced_at, json_extract(metadata, '$.\"{SOURCE_STEP}\"')"
)


def claim_state_from_row(row: Sequence[Any]) -> ClaimState:
    """The ClaimState of a row of CLAIM_STATE_COLUMNS (validated when written: built
    field by field, enums through dicts, as record_from_row does)."""
    (
        record_id, revision, status, type_, about, summary, text, strength, pin, authority,
        sensitivity, durability, reinforcement_count, valid_at, invalid_at, valid_until,
        retired_at, created_at, last_reinforced_at, source_step,
    ) = row  # fmt: skip
    return ClaimState(
        record_id,
        revision,
        _STATUSES[status],
        _TYPES[type_],
        about,
        summary,
        text,
        _STRENGTHS[strength],
        bool(pin),
        _AUTHORITIES[authority],
        _SENSITIVITIES[sensitivity],
        _DURABILITIES[durability],
        reinforcement_count,
        None if valid_at is None else _EPOCH + timedelta(microseconds=valid_at),
        None if invalid_at is None else _EPOCH + timedelta(microseconds=invalid_at),
        None if valid_until is None else _EPOCH + timedelta(microseconds=valid_until),
        None if retired_at is None else _EPOCH + timedelta(microseconds=retired_at),
        None if created_at is None else _EPOCH + timedelta(microseconds=created_at),
        None if last_reinforced_at is None else _EPOCH + timedelta(microseconds=last_reinforced_at),
        source_step or None,
    )


def node_from_row(row: Row) -> GraphNode:
    return GraphNode(
        node_id=row["node_id"],
        label=row["label"],
        node_type=row["node_type"],
        properties=from_json(row["properties"]),
        created_at=from_micros(row["created_at"]),
        updated_at=from_micros(row["updated_at"]),
    )


def edge_from_row(row: Row) -> GraphEdge:
    return GraphEdge(
        edge_id=row["edge_id"],
        source=row["source"],
        relation=row["relation"],
        target=row["target"],
        properties=from_json(row["properties"]),
        valid_at=from_micros(row["valid_at"]),
        invalid_at=from_micros(row["invalid_at"]),
        created_at=from_micros(row["created_at"]),
        retired_at=from_micros(row["retired_at"]),
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
    )


def step_from_row(row: Row) -> ExecutionLogStep:
    return ExecutionLogStep(
        step_id=row["step_id"],
        tool_input=row["tool_input"],
        metadata=from_json(row["metadata"]),
        created_at=from_micros(row["created_at"]),
    )


def scope_record_from_row(row: Row) -> ScopeRecord:
    return ScopeRecord(
        scope=ScopeRef(enterprise_id=row["enterprise_id"], scope_id=row["scope_id"]),
        kind=row["kind"],
        created_at=from_micros(row["created_at"]),
        created_by=row["created_by"],
        time_zone=row["time_zone"],
    )
