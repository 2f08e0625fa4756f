"""ClaimState: what the lifecycle pass and the brief read of a claim, and nothing else.

Both read EVERY active claim of a scope, after every write that changed claims, so the
read is on the write path: a full MemoryRecord (34 fields, pydantic, maps and lists to
parse and copy) per claim cost most of a 5,000-claim compile. A ClaimState holds only the
fields the pass's rules (`jennah.domain.lifecycle`) and the brief
(`jennah.domain.brief`) look at, as a named tuple: built without validation from a store
row (the row was validated when it was written; a tuple is built ten times faster than a
frozen dataclass), immutable, so a store may hand the same object out again until the
claim changes (SQLite's claim cache does).

`source_step` is the claim's metadata `jennah.source_step` (the formation that formed
it, None for a claim memory:commit wrote), the one metadata key the brief reads.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    Durability,
    MemoryRecord,
    MemoryType,
    Sensitivity,
    Status,
    Strength,
)


class ClaimState(NamedTuple):
    """A claim's identity and revision, state, weight, validity, and the words a brief
    line quotes (`summary`, else `text`): MemoryStore.list_claim_states."""

    id: str
    revision: int
    status: Status
    type: MemoryType
    about: str
    summary: str
    text: str
    strength: Strength
    pin: bool
    authority: Authority
    sensitivity: Sensitivity
    durability: Durability
    reinforcement_count: int
    valid_at: datetime | None
    invalid_at: datetime | None
    valid_until: datetime | None
    retired_at: datetime | None
    created_at: datetime | None
    last_reinforced_at: datetime | None
    source_step: str | None

    @classmethod
    def of(cls, record: MemoryRecord) -> ClaimState:
        """The state of a full record (a store without a narrower read, tests)."""
        return cls(
            id=record.id,
            revision=record.revision,
            status=record.status,
            type=record.type,
            about=record.about,
            summary=record.summary,
            text=record.text,
            strength=record.strength,
            pin=record.pin,
            authority=record.authority,
            sensitivity=record.sensitivity,
            durability=record.durability,
            reinforcement_count=record.reinforcement_count,
            valid_at=record.valid_at,
            invalid_at=record.invalid_at,
            valid_until=record.valid_until,
            retired_at=record.retired_at,
            created_at=record.created_at,
            last_reinforced_at=record.last_reinforced_at,
            source_step=record.metadata.get(SOURCE_STEP) or None,
        )


# What the brief's and the lifecycle's rules accept: the narrow state, or a full record
# (which carries every field a ClaimState has but `source_step`).
Claim = ClaimState | MemoryRecord
