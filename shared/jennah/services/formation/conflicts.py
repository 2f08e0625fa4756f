"""The formation's one commit, and the conflicts it can lose.

When another write commits first, the plan's transaction fails as a whole, so
the losing formation has written nothing, and it answers ABORTED (HTTP 409)
with the spec's reason:

- FORMATION_KEY_CLAIMED: another request with the same formationKey committed
  first (the store raises it when the key record exists at commit time);
- FORMATION_SUPERSEDED_FIRST: a memory this formation retires was superseded by
  someone else in between (the store's FAILED_PRECONDITION ALREADY_SUPERSEDED);
- FORMATION_WRITE_CONFLICT: any other concurrent-write failure: the store gave
  up on a contended transaction, a memory the plan closes was erased, or a row
  it writes clashed with one written in between. A claim the plan updates whose
  revision changed in between (the store's ABORTED REVISION_CHANGED) is passed
  on as it is: the pipeline re-reads and re-plans (`pipeline.MAX_REPLANS`), and
  answers FORMATION_WRITE_CONFLICT (`write_conflict`) when the claim keeps changing.
"""

from __future__ import annotations

from jennah.domain import rules
from jennah.domain.models import CommitPlan, CommitResult
from jennah.errors import Aborted, AlreadyExists, FailedPrecondition, JennahError, NotFound
from jennah.ports.store import MemoryStore

KEY_CLAIMED = "FORMATION_KEY_CLAIMED"
SUPERSEDED_FIRST = "FORMATION_SUPERSEDED_FIRST"
WRITE_CONFLICT = "FORMATION_WRITE_CONFLICT"


def commit_plan(store: MemoryStore, plan: CommitPlan) -> CommitResult:
    """Apply the plan in one transaction; a lost conflict raises ABORTED with its reason."""
    try:
        return store.apply(plan)
    except Aborted as exc:
        if exc.reason in (KEY_CLAIMED, rules.REVISION_CHANGED):
            raise  # REVISION_CHANGED: the pipeline re-plans (`pipeline.run`)
        raise write_conflict(exc) from exc
    except FailedPrecondition as exc:
        if exc.reason == "ALREADY_SUPERSEDED":
            raise _superseded_first(exc) from exc
        raise write_conflict(exc) from exc
    except (NotFound, AlreadyExists) as exc:
        raise write_conflict(exc) from exc


def _superseded_first(exc: FailedPrecondition) -> Aborted:
    memory = exc.metadata.get("id", "a memory this formation revises")
    return Aborted(
        f"another write superseded {memory} first, while this formation was revising it; "
        "nothing was written. Resend: the retry reconciles against the current memory",
        reason=SUPERSEDED_FIRST,
        metadata={"id": memory} if "id" in exc.metadata else None,
    )


def write_conflict(exc: JennahError) -> Aborted:
    return Aborted(
        f"another write to this agent conflicted with this formation ({exc.message}); "
        "nothing was written. Resend",
        reason=WRITE_CONFLICT,
        metadata={k: v for k, v in exc.metadata.items() if k == "id"},
    )
