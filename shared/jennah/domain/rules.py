"""Pure rules shared by every adapter: content-derived ids, validity, metadata bounds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime

from jennah.domain.access import ScopeKind
from jennah.domain.models import ClaimUpdate, CommitPlan, FilterOperator, MetadataFilter
from jennah.errors import InvalidArgument

# Metadata bounds (documented in README "Limits"). Platform keys such as
# `jennah.source_step` count toward MAX_METADATA_KEYS like any other key.
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_LENGTH = 64
MAX_METADATA_VALUE_LENGTH = 1024
METADATA_KEY_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")

MAX_TEXT_LENGTH = 16_000
MAX_LABEL_LENGTH = 256  # of a graph node
MAX_IDENTIFIER_LENGTH = 128
IDENTIFIER_PATTERN = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")

# memory:query bounds.
MAX_TOP_K = 100
MAX_GRAPH_LIMIT = 1000
MAX_DEPTH = 3
MAX_QUERY_TEXT_LENGTH = 4000
MAX_FILTERS = 16
MAX_FILTER_VALUES = 100  # values of one OPERATOR_IN filter
NODE_FILTER_KEYS = ("NodeId", "Label", "NodeType")  # what graph.start filters on

# One memory:commit writes at most this many chunks, nodes, edges and supersessions each.
MAX_COMMIT_ITEMS = 500

# The ErrorInfo reason (with Aborted, 409) when a claim update names a revision that is
# no longer the claim's: another writer (formation, the lifecycle pass, an edit or an
# import) changed it first. The writer re-reads and retries, or fails; never overwrites.
REVISION_CHANGED = "REVISION_CHANGED"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def _instant(value: datetime | None) -> str:
    return "" if value is None else value.isoformat()


def content_hash(text: str) -> str:
    """Hash of the text alone: identical wording has the same hash in any window."""
    return _digest(text)


def chunk_id(text: str, valid_at: datetime | None) -> str:
    """A chunk is identified by its text and the start of its validity window."""
    return "chk_" + _digest(text, _instant(valid_at))


def edge_id(source: str, relation: str, target: str, valid_at: datetime | None) -> str:
    return "edg_" + _digest(source, relation, target, _instant(valid_at))


def is_valid_at(
    valid_at: datetime | None,
    invalid_at: datetime | None,
    retired_at: datetime | None,
    instant: datetime,
) -> bool:
    """Valid at `instant` in valid time, and not retired in transaction time."""
    if retired_at is not None:
        return False
    if valid_at is not None and valid_at > instant:
        return False
    return invalid_at is None or invalid_at > instant


def validate_metadata(metadata: Mapping[str, str], field: str) -> None:
    """Raise InvalidArgument naming the field and the bound a metadata map breaks."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidArgument(
            f"{field} has {len(metadata)} keys; at most {MAX_METADATA_KEYS} are allowed",
            field=field,
        )
    for key, value in metadata.items():
        if not METADATA_KEY_PATTERN.match(key):
            raise InvalidArgument(
                f"{field} key {key!r} must be 1-{MAX_METADATA_KEY_LENGTH} characters of "
                "letters, digits, '_', '.' and '-'",
                field=f"{field}.{key}"[:200],
            )
        if len(value) > MAX_METADATA_VALUE_LENGTH:
            raise InvalidArgument(
                f"{field}.{key} is {len(value)} characters; at most "
                f"{MAX_METADATA_VALUE_LENGTH} are allowed",
                field=f"{field}.{key}",
            )


def validate_identifier(value: str, field: str) -> None:
    if not IDENTIFIER_PATTERN.match(value):
        raise InvalidArgument(
            f"{field} {value[:80]!r} must be 1-{MAX_IDENTIFIER_LENGTH} characters of "
            "letters, digits, '_', '.', ':' and '-'",
            field=field,
        )


def matches_filter(values: Mapping[str, str], flt: MetadataFilter) -> bool:
    """The one definition of filter semantics; adapters' SQL must agree with it."""
    present = flt.key in values
    if flt.operator is FilterOperator.NOT_EQUALS:
        return not present or values[flt.key] not in flt.values
    return present and values[flt.key] in flt.values


def check_supersession(
    target_id: str,
    target_valid_at: datetime | None,
    target_invalid_at: datetime | None,
    target_superseded_by: str | None,
    invalid_at: datetime,
    superseded_by: str,
) -> bool:
    """Decide whether a supersession may be applied to a row as it now stands.

    Returns True when it must be written, False when it was already applied
    identically (an idempotent retry). Raises FailedPrecondition when the row
    is already closed otherwise, or when the window would close before it opens.
    Every store adapter calls this inside its transaction.
    """
    from jennah.errors import FailedPrecondition

    if target_invalid_at is not None:
        if target_invalid_at == invalid_at and target_superseded_by == superseded_by:
            return False
        raise FailedPrecondition(
            f"{target_id} is no longer valid: its validity window closed at "
            f"{target_invalid_at.isoformat()}",
            reason="ALREADY_SUPERSEDED",
            metadata={"id": target_id},
        )
    if target_valid_at is not None and invalid_at <= target_valid_at:
        raise FailedPrecondition(
            f"the replacement for {target_id} must become valid after "
            f"{target_valid_at.isoformat()}, when {target_id} became valid",
            reason="SUPERSESSION_BEFORE_VALID_AT",
            metadata={"id": target_id},
        )
    return True


def check_claim_revision(update: ClaimUpdate, stored_revision: int | None) -> None:
    """Allow a claim update only while the claim's stored revision (None: no such claim)
    is the one the update expects: NotFound, or Aborted with REVISION_CHANGED (the whole
    plan then fails). Every store adapter calls this inside its transaction."""
    from jennah.errors import Aborted, NotFound

    if stored_revision is None:
        raise NotFound(
            f"the claim update names {update.memory_id}, which does not exist in this scope",
            metadata={"id": update.memory_id},
        )
    if stored_revision != update.expected_revision:
        raise Aborted(
            f"{update.memory_id} changed under this writer: revision {stored_revision}, "
            f"expected {update.expected_revision}; re-read it and retry",
            reason=REVISION_CHANGED,
            metadata={"id": update.memory_id},
        )


def check_registration(plan: CommitPlan) -> None:
    """InvalidArgument unless `plan.registration` names the plan's scope and a scope kind."""
    record = plan.registration
    if record is None:
        return
    if record.scope != plan.scope:
        raise InvalidArgument(
            f"registration names scope {record.scope.scope_id!r} of enterprise "
            f"{record.scope.enterprise_id!r}; the commit writes {plan.scope.scope_id!r} "
            f"of {plan.scope.enterprise_id!r}",
            field="registration.scope",
        )
    if record.kind not in {kind.value for kind in ScopeKind}:
        raise InvalidArgument(
            f"registration.kind {record.kind!r} must be one of "
            + ", ".join(kind.value for kind in ScopeKind),
            field="registration.kind",
        )
