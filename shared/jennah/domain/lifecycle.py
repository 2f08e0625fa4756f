"""The lifecycle ("dream") pass's rules: which claims change state, judged in the scope's
own calendar. Pure and deterministic: the same claims, `now` and zone give the same
transitions, and a claim's words are never touched (a ClaimUpdate cannot change them).

Each transition is a ClaimUpdate under the claim's current revision and one change-log
line dated with the scope-local day of `now` (the day of the pass). At most one
transition per claim per pass, in this order of precedence:

- **Expire.** An active claim whose `valid_until` has arrived: status expired, and its
  validity window closed at `valid_until` (when still open), so an as-of query for a time
  it was valid still finds it. `valid_until` is the first instant the claim no longer
  holds. A claim "valid until the 17th" carries the instant the 17th BEGINS in the scope's
  zone (`start_of_local_day`), so it is retired exactly at that local midnight: not at UTC
  midnight, and not an hour early or late across a DST change (a zone one hour behind UTC
  retires it at 01:00Z, not at 00:00Z). An instant that is not a local midnight is
  respected as given, never rounded to a day: rounding down would retire a claim that still
  holds, rounding up would let it linger into a time it no longer applies.
- **Decay.** An active claim with authority `inferred`, not pinned, whose last
  reinforcement (its formation, `created_at`, when never reinforced) is DECAY_DAYS or
  more scope-local calendar days before the local day of `now`: status dormant.
- **Promote.** An active `passing` claim reinforced PROMOTION_REINFORCEMENTS times or
  more: durability durable. Pinned claims and `user_explicit` claims are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict

from jennah.domain.claim_state import Claim, ClaimState
from jennah.domain.models import (
    Authority,
    ChangeLogEntry,
    ClaimUpdate,
    Durability,
    MemoryRecord,
    ScopeRef,
    Status,
)
from jennah.domain.rules import is_valid_at
from jennah.errors import InvalidArgument

# A passing claim confirmed this many times becomes durable (design §5: "three by default").
PROMOTION_REINFORCEMENTS = 3
# An inferred claim not reinforced for this many local calendar days goes dormant.
DECAY_DAYS = 180


class Change(StrEnum):
    """What a transition did: the change-log line's `change`."""

    EXPIRED = "expired"
    DECAYED = "decayed"
    PROMOTED = "promoted"


class Transition(BaseModel):
    """One claim's state change: the update to apply and the change-log line to append."""

    model_config = ConfigDict(frozen=True)

    change: Change
    update: ClaimUpdate
    entry: ChangeLogEntry


def scope_zone(name: str) -> ZoneInfo:
    """The IANA zone a scope's calendar is judged in; InvalidArgument naming timeZone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(
            f"timeZone {name[:80]!r} is not an IANA time zone (such as Europe/Lisbon or UTC)",
            field="timeZone",
        ) from None


def local_day(instant: datetime, zone: tzinfo) -> date:
    """The calendar date of an (aware) instant in the zone."""
    return instant.astimezone(zone).date()


def start_of_local_day(day: date, zone: tzinfo) -> datetime:
    """The instant (UTC) the day begins in the zone: what "valid until `day`" means.

    When a DST change skips local midnight, the day begins at the first local time that
    exists (zoneinfo's fold=0 reading of the missing midnight is that same instant)."""
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


# The rules read a ClaimState (what the pass reads) or a full MemoryRecord alike.
C = TypeVar("C", ClaimState, MemoryRecord)


def is_expired(claim: Claim, now: datetime) -> bool:
    return claim.valid_until is not None and now >= claim.valid_until


def is_decayed(claim: Claim, now: datetime, zone: tzinfo) -> bool:
    return _decayed(claim, local_day(now, zone), zone)


def _decayed(claim: Claim, today: date, zone: tzinfo) -> bool:
    """is_decayed with the local day of `now` worked out once (`today`)."""
    if claim.authority is not Authority.INFERRED or claim.pin:
        return False
    last = claim.last_reinforced_at or claim.created_at
    if last is None:  # never committed: no age to judge
        return False
    return today - local_day(last, zone) >= timedelta(days=DECAY_DAYS)


def is_promoted(claim: Claim) -> bool:
    return (
        claim.durability is Durability.PASSING
        and claim.reinforcement_count >= PROMOTION_REINFORCEMENTS
        and not claim.pin
        and claim.authority is not Authority.USER_EXPLICIT
    )


def transition(claim: Claim, now: datetime, zone: tzinfo) -> Transition | None:
    """The one transition due for the claim at `now`, or None (see the module doc)."""
    return _transition(claim, now, local_day(now, zone), zone)


def _transition(claim: Claim, now: datetime, today: date, zone: tzinfo) -> Transition | None:
    """transition with the local day of `now` worked out once (`today`)."""
    if claim.status is not Status.ACTIVE:
        return None
    day = today.isoformat()
    if is_expired(claim, now):
        closes = claim.valid_until if claim.invalid_at is None else None
        update = _update(claim, status=Status.EXPIRED, invalid_at=closes)
        return _made(Change.EXPIRED, update, day, Status.ACTIVE.value, Status.EXPIRED.value)
    if _decayed(claim, today, zone):
        update = _update(claim, status=Status.DORMANT)
        return _made(Change.DECAYED, update, day, Status.ACTIVE.value, Status.DORMANT.value)
    if is_promoted(claim):
        update = _update(claim, durability=Durability.DURABLE)
        return _made(
            Change.PROMOTED, update, day, Durability.PASSING.value, Durability.DURABLE.value
        )
    return None


def transitions(claims: Iterable[Claim], now: datetime, zone: tzinfo) -> list[Transition]:
    """Every transition due at `now`, in claim id order."""
    today = local_day(now, zone)
    due = (_transition(c, now, today, zone) for c in sorted(claims, key=lambda c: c.id))
    return [t for t in due if t is not None]


def after_moves(claims: Sequence[C], moves: Sequence[Transition]) -> list[C]:
    """The claims as they stand once `moves` are applied (state and revision), in id order."""
    changed = {move.update.memory_id: move.update for move in moves}
    after = []
    for claim in sorted(claims, key=lambda c: c.id):
        update = changed.get(claim.id)
        after.append(claim if update is None else _applied(claim, update))
    return after


def active_after(claims: Sequence[C], moves: Sequence[Transition], now: datetime) -> list[C]:
    """The claims that are active and valid at `now` once `moves` are applied (the
    brief's input), in id order."""
    return [
        claim
        for claim in after_moves(claims, moves)
        if claim.status is Status.ACTIVE
        and is_valid_at(claim.valid_at, claim.invalid_at, claim.retired_at, now)
    ]


class WalkCursor(BaseModel):
    """Where the nightly pass's walk over every scope stands.

    `after` is the last scope whose pass finished (None: the walk starts from the first
    scope); `started_at` is when the walk began; `finished_at` is set when it reached
    the last scope (the next run then starts a new walk).
    """

    model_config = ConfigDict(frozen=True)

    after: ScopeRef | None = None
    started_at: datetime
    finished_at: datetime | None = None


# The longest an unfinished walk is resumed: a run killed mid-walk is continued by the
# scheduler's retries (minutes later); a walk left unfinished longer is started afresh,
# so the scopes before its cursor are not skipped for a night.
RESUME_WINDOW = timedelta(hours=12)


def walk_start(cursor: WalkCursor | None, now: datetime) -> WalkCursor:
    """The walk to do at `now`: the stored one resumed when it is unfinished and recent,
    otherwise a new one from the first scope."""
    if (
        cursor is not None
        and cursor.finished_at is None
        and now - cursor.started_at < RESUME_WINDOW
    ):
        return cursor
    return WalkCursor(started_at=now)


def _update(claim: Claim, **fields: object) -> ClaimUpdate:
    return ClaimUpdate.model_validate(
        {"memory_id": claim.id, "expected_revision": claim.revision, **fields}
    )


def _made(change: Change, update: ClaimUpdate, day: str, was: str, becomes: str) -> Transition:
    entry = ChangeLogEntry(
        memory_id=update.memory_id, day=day, change=change.value, from_value=was, to_value=becomes
    )
    return Transition(change=change, update=update, entry=entry)


_STATE_FIELDS = frozenset(ClaimState._fields)


def _applied(claim: C, update: ClaimUpdate) -> C:
    fields = update.model_dump(exclude={"memory_id", "expected_revision"}, exclude_none=True)
    if claim.invalid_at is not None:
        fields.pop("invalid_at", None)
    fields["revision"] = claim.revision + 1
    if isinstance(claim, ClaimState):  # a transition changes only fields a state holds
        return claim._replace(**{k: v for k, v in fields.items() if k in _STATE_FIELDS})
    return claim.model_copy(update=fields)
