"""Edit = supersede (family-memory-design.md §10, "Correcting one claim"): pure rules.

A person's correction never overwrites a claim. Their words become a NEW claim and the
old one is superseded, pointing at it; both stay readable, linked both ways
(`supersedes` on the new, `supersededBy` on the old).

The new claim (`edited_claim`):
- its words: the `text` given (the body, bounded like any claim body: 1 to
  rules.MAX_TEXT_LENGTH characters, not blank) and the `summary` given (at most
  claims.MAX_SUMMARY_LENGTH); an absent or blank summary is derived from the text as
  formation derives one (claims.summary_line: the first line, at most SUMMARY_CHARS);
- what it is and how it binds, from the old claim: type, about, whenToUse, appliesTo,
  strength, pin, durability, validUntil, related, metadata and extensions (less the
  service's own keys: `jennah.`-prefixed metadata such as formation's source step,
  which would make the edit part of that conversation, and `jennah_` extensions such as
  an import's formedAt). So an edited claim is never a line of the brief's Last
  conversation: the person's words did not come from it;
- sensitivity: the old claim's; when that is normal, the new words are judged as
  formation judges words (given by the caller as `judged`), so an edit can make a claim
  sensitive but never carry health, finances or minors words into the brief under a
  normal label;
- who said it: authority user_explicit, confidence 1.0 (the person wrote it);
  reinforcementCount 0, needsEnrichment false, no key (a key is unique in a scope and
  stays with the old claim);
- when: formedAt is the commit time; its validity window opens at the edit's
  `boundary`, the instant the old one's closes (`supersession`).

Its id derives from its text and validAt like every claim's (rules.chunk_id), so the
boundary is the receipt time, moved on by a microsecond while that id is taken
(`boundaries`): a new claim never replaces a stored one.

Evidence: the new claim gets ONE line recording the person's own words:
`{"ref": "memory://{scope}/{newId}", "quote": text, "recordedAt": boundary}`. The ref
is the claim's own reference (the words came from the person, straight into this
claim, not from a conversation): it is never a conv:// reference, so no excerpt is
invented and the brief's last conversation (found from conv:// lines) ignores it.

Only an ACTIVE claim that is still current can be edited (`check_editable`); any other
is FAILED_PRECONDITION with reason CLAIM_NOT_ACTIVE naming its status (and, when
superseded, its successor).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from jennah.domain import claims, rules
from jennah.domain.models import (
    Authority,
    ClaimUpdate,
    Evidence,
    MemoryRecord,
    Sensitivity,
    Status,
)
from jennah.domain.references import memory_ref
from jennah.errors import FailedPrecondition, InvalidArgument

CLAIM_NOT_ACTIVE = "CLAIM_NOT_ACTIVE"
# Boundaries tried for the new claim's id (one microsecond apart): ids derive from the
# text and validAt, so two edits to the same words in one microsecond would share one.
BOUNDARY_TRIES = 4
_PLATFORM_METADATA = "jennah."


def check_text(text: str, summary: str | None) -> None:
    """InvalidArgument naming `text` or `summary` and the bound it breaks."""
    if not text.strip():
        raise InvalidArgument("text must not be empty", field="text")
    claims.check_length(text, rules.MAX_TEXT_LENGTH, "text")
    if summary is not None:
        claims.check_length(summary, claims.MAX_SUMMARY_LENGTH, "summary")


def check_editable(claim: MemoryRecord, now: datetime) -> None:
    """FailedPrecondition (CLAIM_NOT_ACTIVE) unless `claim` is active and current: its
    validUntil and its validity window's end not reached (a claim whose validUntil
    passed is expired, though the lifecycle pass has not marked it yet)."""
    status = claim.status
    if status is Status.ACTIVE and claim.valid_until is not None and claim.valid_until <= now:
        status = Status.EXPIRED
    if status is Status.ACTIVE and claim.invalid_at is not None and claim.invalid_at <= now:
        status = Status.SUPERSEDED if claim.superseded_by else Status.EXPIRED
    if status is Status.ACTIVE and claim.retired_at is None:
        return
    metadata = {"memoryId": claim.id, "status": status.value}
    why = f"memory {claim.id!r} is {status.value}"
    if status is Status.SUPERSEDED and claim.superseded_by:
        metadata["supersededBy"] = claim.superseded_by
        why += f" by {claim.superseded_by!r}; edit that claim instead"
    else:
        why += "; only an active claim can be edited"
    raise FailedPrecondition(why, reason=CLAIM_NOT_ACTIVE, metadata=metadata)


def boundaries(claim: MemoryRecord, now: datetime) -> list[datetime]:
    """The instants the new claim may become valid at, in order of preference: `now`
    (or the old claim's validAt when that is later: its window then closes empty),
    then a microsecond later, and so on."""
    start = max(now, claim.valid_at) if claim.valid_at is not None else now
    return [start + timedelta(microseconds=i) for i in range(BOUNDARY_TRIES)]


def edited_claim(
    old: MemoryRecord,
    text: str,
    summary: str | None,
    boundary: datetime,
    judged: Sensitivity,
) -> MemoryRecord:
    """The new claim an edit writes (see the module doc); no embedding yet."""
    sensitivity = old.sensitivity if old.sensitivity is not Sensitivity.NORMAL else judged
    return MemoryRecord(
        id=rules.chunk_id(text, boundary),
        scope=old.scope,
        content_hash=rules.content_hash(text),
        text=text,
        summary=summary if summary is not None and summary.strip() else claims.summary_line(text),
        about=old.about,
        when_to_use=old.when_to_use,
        type=old.type,
        metadata={k: v for k, v in old.metadata.items() if not k.startswith(_PLATFORM_METADATA)},
        strength=old.strength,
        pin=old.pin,
        authority=Authority.USER_EXPLICIT,
        confidence=1.0,
        sensitivity=sensitivity,
        valid_at=boundary,
        valid_until=old.valid_until,
        durability=old.durability,
        supersedes=old.id,
        applies_to=list(old.applies_to),
        related=list(old.related),
        extensions={
            k: v for k, v in old.extensions.items() if not k.startswith(claims.RESERVED_PREFIX)
        },
    )


def supersession(old: MemoryRecord, new: MemoryRecord) -> ClaimUpdate:
    """The old claim superseded by `new`: its window closed where the new one's opens,
    under the revision it was read at (a concurrent change aborts the whole edit)."""
    return ClaimUpdate(
        memory_id=old.id,
        expected_revision=old.revision,
        status=Status.SUPERSEDED,
        superseded_by=new.id,
        invalid_at=new.valid_at,
    )


def edit_evidence(new: MemoryRecord) -> Evidence:
    """The new claim's one evidence line: the person's words, under its own reference."""
    assert new.valid_at is not None
    return Evidence(
        memory_id=new.id,
        ref=memory_ref(new.scope.scope_id, new.id),
        quote=new.text,
        recorded_at=new.valid_at,
    )
