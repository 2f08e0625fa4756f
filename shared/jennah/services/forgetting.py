"""Forget = retract + suppress (issue 17, design §10 "Forgetting a claim for good").

- `forget`: one claim becomes retracted (a ClaimUpdate under its revision: status
  retracted, its validity window closed at the request time; the row and its evidence
  stay) and ONE suppression rule (`domain.suppression`) is recorded, with a "retracted"
  change-log line, all in one CommitPlan, one transaction. Then the scope's lifecycle
  pass (`Passes`, as memory:commit), so the brief drops the line at once.
  A claim that is active, dormant or expired can be forgotten. One already retracted is
  FAILED_PRECONDITION ALREADY_RETRACTED (not idempotent: the answer says it was forgotten
  before, and a retry of a lost answer reads the claim and its suppression instead); a
  superseded one is FAILED_PRECONDITION MEMORY_SUPERSEDED naming the claim that replaced
  it (forget that one).
- `forget_group`: every forgettable claim (active, dormant or expired) of a group, picked
  by exactly one of appliesTo (a node id in its applies_to), about (its about, compared
  case- and spacing-insensitively) or type. `validate_only` answers the count and writes
  nothing; the real call must carry `expected_count` equal to the count now (else
  FAILED_PRECONDITION GROUP_CHANGED with both counts) and retracts them all with a
  suppression each in ONE transaction. At most MAX_GROUP_CLAIMS claims (else
  FAILED_PRECONDITION GROUP_TOO_LARGE naming the bound; a dry run still counts them).
- `list_suppressions` (a page, AIP-158, by id) and `delete_suppression` (the person
  "says otherwise": the fact may be formed again; the retracted claim stays retracted).

Suppression rules travel in OKF export/import (services/okf.py, `suppressions.jsonl`): a
forgotten fact stays forgotten in the imported scope.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from jennah.domain.lifecycle import scope_zone
from jennah.domain.models import (
    ChangeLogEntry,
    ClaimUpdate,
    CommitPlan,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Status,
)
from jennah.domain.suppression import (
    ALREADY_RETRACTED,
    GROUP_CHANGED,
    GROUP_TOO_LARGE,
    MAX_GROUP_CLAIMS,
    MEMORY_SUPERSEDED,
    Suppression,
    normalized,
    suppression_id,
)
from jennah.errors import FailedPrecondition, InvalidArgument, InvalidFields, NotFound
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle, paging

FORGETTABLE = (Status.ACTIVE, Status.DORMANT, Status.EXPIRED)
_READ_PAGE = 1000  # claims and suppression rules read per store call


@dataclass(frozen=True)
class Forgetting:
    """Who forgets, where, when, and what follows the write."""

    store: MemoryStore
    embedder: Embedder
    scope: ScopeRef
    principal: str
    now: Callable[[], datetime]
    passes: lifecycle.Passes = lifecycle.INLINE


@dataclass(frozen=True)
class Forgotten:
    memory: MemoryRecord  # as stored after the retraction
    suppression: Suppression


@dataclass(frozen=True)
class GroupSelector:
    """Exactly one of them is set (`check_selector`)."""

    applies_to: str | None = None
    about: str | None = None
    type: MemoryType | None = None

    def picks(self, claim: MemoryRecord) -> bool:
        if self.applies_to is not None:
            return self.applies_to in claim.applies_to
        if self.about is not None:
            return normalized(claim.about) == normalized(self.about)
        return claim.type is self.type


@dataclass(frozen=True)
class GroupForgotten:
    count: int
    memory_ids: list[str]  # at most MAX_GROUP_CLAIMS, by id
    suppressions: list[Suppression]  # empty for a dry run


def forget(ctx: Forgetting, memory_id: str) -> Forgotten:
    """Retract claim `memory_id` and record its suppression (see the module doc)."""
    found = ctx.store.get_chunks(ctx.scope, [memory_id])
    if not found:
        raise NotFound(
            f"memory {memory_id!r} was not found in scope {ctx.scope.scope_id!r}",
            metadata={"memoryId": memory_id},
        )
    claim = found[0]
    _check_forgettable(claim)
    (suppression,) = _retract(ctx, [claim])
    (stored,) = ctx.store.get_chunks(ctx.scope, [memory_id])
    return Forgotten(stored.model_copy(update={"embedding": None}), suppression)


def check_selector(selector: GroupSelector) -> None:
    """INVALID_ARGUMENT naming the three fields unless exactly one is given (non-empty)."""
    given = [
        name
        for name, value in (
            ("appliesTo", selector.applies_to),
            ("about", selector.about),
            ("type", selector.type),
        )
        if value is not None
    ]
    if len(given) == 1 and (selector.type is not None or str(_value(selector)).strip()):
        return
    names = given or ["appliesTo", "about", "type"]
    raise InvalidFields(
        "forgetGroup picks its group by exactly one of appliesTo, about or type "
        f"(non-empty); got {', '.join(given) or 'none'}",
        [(name, "give exactly one of appliesTo, about or type") for name in names],
    )


def forget_group(
    ctx: Forgetting,
    selector: GroupSelector,
    *,
    validate_only: bool,
    expected_count: int | None,
) -> GroupForgotten:
    """Count (validate_only) or retract and suppress the group (see the module doc)."""
    check_selector(selector)
    if not validate_only and expected_count is None:
        raise InvalidArgument(
            "expectedCount is required unless validateOnly is true: send the count a "
            "validateOnly call answered",
            field="expectedCount",
        )
    group = _group(ctx, selector)
    ids = [claim.id for claim in group[:MAX_GROUP_CLAIMS]]
    if validate_only:
        return GroupForgotten(len(group), ids, [])
    if expected_count != len(group):
        raise FailedPrecondition(
            f"the group changed: expectedCount is {expected_count} but it holds "
            f"{len(group)} claims now; count it again (validateOnly) and confirm",
            reason=GROUP_CHANGED,
            metadata={"expectedCount": str(expected_count), "actualCount": str(len(group))},
        )
    if len(group) > MAX_GROUP_CLAIMS:
        raise FailedPrecondition(
            f"one forgetGroup retracts at most {MAX_GROUP_CLAIMS} claims; this group holds "
            f"{len(group)}: narrow it, or forget it in parts",
            reason=GROUP_TOO_LARGE,
            metadata={"maxCount": str(MAX_GROUP_CLAIMS), "actualCount": str(len(group))},
        )
    suppressions = _retract(ctx, group) if group else []
    return GroupForgotten(len(group), ids, suppressions)


def list_suppressions(
    store: MemoryStore, scope: ScopeRef, paged: paging.Paging, caller: str
) -> paging.Page[Suppression]:
    """A page of the scope's suppression rules, by id (embeddings left out)."""
    request = paging.page_request(
        "suppressions", {"enterprise": scope.enterprise_id, "scope": scope.scope_id,
                         "caller": caller}, paged,
    )  # fmt: skip

    def fetch(after: paging.Key | None, limit: int) -> list[Suppression]:
        rules = store.list_suppressions(scope, None if after is None else after[0], limit)
        return [rule.model_copy(update={"embedding": None}) for rule in rules]

    return paging.fill(request, fetch, lambda rule: (rule.id,))


def delete_suppression(store: MemoryStore, scope: ScopeRef, suppression_id: str) -> None:
    """Remove one rule (NotFound naming it when the scope has none of that id)."""
    store.apply(CommitPlan(scope=scope, suppressions_removed=[suppression_id]))


def _value(selector: GroupSelector) -> str | None:
    return selector.applies_to if selector.applies_to is not None else selector.about


def _check_forgettable(claim: MemoryRecord) -> None:
    if claim.status is Status.RETRACTED:
        raise FailedPrecondition(
            f"memory {claim.id} was forgotten already (it is retracted); its suppression "
            f"is {suppression_id(claim.id)}",
            reason=ALREADY_RETRACTED,
            metadata={"memoryId": claim.id, "suppressionId": suppression_id(claim.id)},
        )
    if claim.status is Status.SUPERSEDED:
        raise FailedPrecondition(
            f"memory {claim.id} is superseded by {claim.superseded_by}: forget the current version",
            reason=MEMORY_SUPERSEDED,
            metadata={"memoryId": claim.id, "supersededBy": claim.superseded_by or ""},
        )


def _group(ctx: Forgetting, selector: GroupSelector) -> list[MemoryRecord]:
    picked: list[MemoryRecord] = []
    after: str | None = None
    while True:
        batch = ctx.store.list_claims(ctx.scope, FORGETTABLE, after, _READ_PAGE)
        picked.extend(claim for claim in batch if selector.picks(claim))
        if len(batch) < _READ_PAGE:
            return picked
        after = batch[-1].id


def _retract(ctx: Forgetting, claims: Sequence[MemoryRecord]) -> list[Suppression]:
    """ONE plan: each claim retracted under its revision, its suppression, a change-log
    line; then the lifecycle pass. Returns the suppressions as written."""
    at = ctx.now()
    registration = ctx.store.get_scope(ctx.scope)
    day = at.astimezone(scope_zone(registration.time_zone if registration else "UTC")).date()
    vectors = ctx.embedder.embed_batch([claim.text for claim in claims])
    suppressions = [
        Suppression(
            id=suppression_id(claim.id),
            memory_id=claim.id,
            about=claim.about,
            summary=claim.summary,
            text=claim.text,
            embedding=vector,
            created_by=ctx.principal,
        )
        for claim, vector in zip(claims, vectors, strict=True)
    ]
    plan = CommitPlan(
        scope=ctx.scope,
        claim_updates=[
            ClaimUpdate(
                memory_id=claim.id,
                expected_revision=claim.revision,
                status=Status.RETRACTED,
                invalid_at=max(at, claim.valid_at) if claim.valid_at else at,
            )
            for claim in claims
        ],
        change_log=[
            ChangeLogEntry(
                memory_id=claim.id,
                day=day.isoformat(),
                change="retracted",
                from_value=claim.status.value,
                to_value=Status.RETRACTED.value,
            )
            for claim in claims
        ],
        suppressions=suppressions,
    )
    result = ctx.store.apply(plan)
    ctx.passes(ctx.store, ctx.scope, at)
    return [
        rule.model_copy(update={"created_at": result.commit_timestamp, "embedding": None})
        for rule in suppressions
    ]
