"""Formation admission and settlement, the billing state, and the overage multiple.

A memory:form request is metered in two calls around `formation.form`:

    admitted = admit_formation(ledger, caller, now())          # may refuse: nothing spent
    usage = FormationUsage()
    try:
        receipt = form(command bounded by admitted, ..., usage=usage)
    finally:
        settle_formation(ledger, admitted, scope_id, caller, usage, formation_key, now())

Admission happens before the first model call; a formation admitted below its
limit runs to completion and consumes all of its units. Settlement records the
formation when it reached the model (even if it then failed) and releases its
reservation either way: a replay, a request refused for its size and a
formation that never reached the model record nothing.

A formation the platform runs again (its worker crashed or failed transiently)
is admitted again for every attempt after the first (`admit_attempt`), and
each attempt records under its own id (`attempt_id`): "<formation_id>" for the
first, "<formation_id>.n" for attempt n. `spent_before` adds up what the
earlier attempts recorded, for the receipt.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from jennah.domain.access import Caller, Permission
from jennah.domain.billing import (
    Admission,
    AllowanceMeasure,
    AllowanceReset,
    Plan,
    Spent,
    UsageRecord,
    spent,
)
from jennah.ports.ledger import BillingSnapshot, UsageLedger
from jennah.services.access import Access

if TYPE_CHECKING:  # at run time the formation package imports this module
    from jennah.services.formation.model_calls import FormationUsage

FORMATION_ID_PREFIX = "fu_"


class AdmittedFormation(BaseModel):
    """A formation admitted by `admit_formation`: its id in the ledger and its bounds.
    Build the FormationCommand with `input_token_cap`, `max_output_tokens` and
    `output_token_budget`."""

    enterprise_id: str
    formation_id: str
    admission: Admission

    @property
    def input_token_cap(self) -> int:
        return self.admission.input_token_cap

    @property
    def max_output_tokens(self) -> int:
        """The bound of each model call (on Free, at most what is left of the day)."""
        return self.admission.max_output_tokens

    @property
    def output_token_budget(self) -> int | None:
        """The bound of all its model calls together (on Free, what it reserved of the
        day); None when only each call is bounded."""
        return self.admission.output_token_budget


def admit_formation(ledger: UsageLedger, caller: Caller, now: datetime) -> AdmittedFormation:
    """Admit one formation of the caller's enterprise and reserve its units.

    Raises RESOURCE_EXHAUSTED (nothing reserved, nothing spent): past the
    allowance (reason FORMATION_ALLOWANCE_EXHAUSTED), past the overage limit
    (FORMATION_OVERAGE_LIMIT), or with formations in progress holding what is
    left or too many at once (FORMATIONS_IN_PROGRESS, metadata retryDelay).
    Every admitted formation must be settled with `settle_formation`; a
    reservation never settled stops counting after RESERVATION_LIFETIME.
    """
    formation_id = FORMATION_ID_PREFIX + uuid.uuid4().hex
    admission = ledger.admit(caller.enterprise_id, formation_id, now)
    return AdmittedFormation(
        enterprise_id=caller.enterprise_id, formation_id=formation_id, admission=admission
    )


def settle_formation(
    ledger: UsageLedger,
    admitted: AdmittedFormation,
    *,
    scope_id: str,
    caller: Caller,
    usage: FormationUsage,
    formation_key: str | None,
    now: datetime,
) -> UsageRecord | None:
    """Record what the formation (or one attempt of it, admitted by `admit_attempt`)
    spent, when it reached the model, and release its reservation; the record, or
    None when nothing was spent. Call it whether `form` returned or raised.
    `caller` is the principal that formed: an API key is recorded as itself, never
    as the user who created it. Idempotent."""
    record = usage_record(admitted, scope_id, caller, usage, formation_key, now)
    ledger.settle(admitted.enterprise_id, admitted.formation_id, record)
    return record


def attempt_id(formation_id: str, attempt: int) -> str:
    """The ledger id of attempt `attempt` of a formation: its own id for the first,
    "<formation_id>.n" for attempt n."""
    return formation_id if attempt <= 1 else f"{formation_id}.{attempt}"


def admit_attempt(
    ledger: UsageLedger, admitted: AdmittedFormation, attempt: int, now: datetime
) -> AdmittedFormation:
    """Attempt `attempt` of the formation `admit_formation` admitted, admitted: the
    first as it was; a later one passes admission again (the allowance and the
    overage limit as they stand now), under `attempt_id`, once the reservations the
    earlier attempts may still hold are released. Raises what `admit_formation`
    raises (RESOURCE_EXHAUSTED: nothing reserved, nothing spent)."""
    if attempt <= 1:
        return admitted
    release(ledger, admitted, attempt - 1)
    formation_id = attempt_id(admitted.formation_id, attempt)
    return AdmittedFormation(
        enterprise_id=admitted.enterprise_id,
        formation_id=formation_id,
        admission=ledger.admit(admitted.enterprise_id, formation_id, now),
    )


def release(ledger: UsageLedger, admitted: AdmittedFormation, attempts: int) -> None:
    """Release the reservations of the formation's first `attempts` attempts (at least
    the first), recording nothing: for a formation answered without forming."""
    for attempt in range(1, max(attempts, 1) + 1):
        ledger.settle(admitted.enterprise_id, attempt_id(admitted.formation_id, attempt), None)


def spent_before(ledger: UsageLedger, admitted: AdmittedFormation, attempt: int) -> Spent:
    """What the attempts of the formation before `attempt` recorded, added up."""
    earlier = [attempt_id(admitted.formation_id, n) for n in range(1, attempt)]
    return spent(ledger.recorded(admitted.enterprise_id, earlier)) if earlier else Spent()


def usage_record(
    admitted: AdmittedFormation,
    scope_id: str,
    caller: Caller,
    usage: FormationUsage,
    formation_key: str | None,
    now: datetime,
) -> UsageRecord | None:
    """The ledger row of a formation that reached the model; None when it did not
    (a replay, a refusal, a request out of bounds)."""
    if not usage.reached_model:
        return None
    return UsageRecord(
        enterprise_id=admitted.enterprise_id,
        spent_in_scope=scope_id,
        caller=caller.principal,
        model=usage.model,
        region=usage.region,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        units=usage.units,
        formation_id=admitted.formation_id,
        formation_key=formation_key,
        recorded_at=now,
    )


class BillingState(BaseModel):
    """The billing state of an enterprise's current allowance period, in units only
    (Free's allowance is in output tokens per day: `allowance_measure`)."""

    enterprise_id: str
    plan: Plan
    billable: bool
    allowance: int
    allowance_measure: AllowanceMeasure
    resets: AllowanceReset
    period_start: datetime
    period_end: datetime  # when the allowance resets, or when the trial ends
    units_used: int
    output_tokens_used: int
    overage_units: int  # units past the allowance, billed as overage
    overage_multiple: float
    overage_band: int  # units; 0 on a plan without overage
    overage_limit: int  # where formations are refused: allowance (+ band when billable)
    formations_in_progress: int


def billing_state(
    caller: Caller, access: Access, ledger: UsageLedger, now: datetime
) -> BillingState:
    """The caller's enterprise's billing state; requires billing.state:read."""
    access.require(caller, Permission.BILLING_READ)
    return state_of(ledger.snapshot(caller.enterprise_id, now))


def set_overage_multiple(
    caller: Caller, access: Access, ledger: UsageLedger, multiple: float, now: datetime
) -> BillingState:
    """Set the overage multiple (0 to 10 in steps of 0.5); the billing state after it.

    Requires billing.overage:manage, a management permission: only a root or
    administrator user, never an API key. INVALID_ARGUMENT naming
    `overageMultiple` for another value. It applies to the next formation; a
    limit below what the month has used refuses the next formation. An
    enterprise that is not billable may set it; it applies once billable.
    """
    access.require(caller, Permission.BILLING_OVERAGE_MANAGE)
    ledger.set_overage_multiple(caller.enterprise_id, multiple)
    return state_of(ledger.snapshot(caller.enterprise_id, now))


def state_of(snapshot: BillingSnapshot) -> BillingState:
    settings, terms, used = snapshot.billing, snapshot.billing.terms, snapshot.used
    billed_overage = settings.billable and terms.includes_overage
    return BillingState(
        enterprise_id=settings.enterprise_id,
        plan=settings.plan,
        billable=settings.billable,
        allowance=terms.allowance,
        allowance_measure=terms.measure,
        resets=snapshot.period.resets,
        period_start=snapshot.period.start,
        period_end=snapshot.period.end,
        units_used=used.units,
        output_tokens_used=used.output_tokens,
        overage_units=max(0, used.units - terms.allowance) if billed_overage else 0,
        overage_multiple=settings.overage_multiple,
        overage_band=settings.overage_band,
        overage_limit=settings.limit,
        formations_in_progress=snapshot.in_progress.formations,
    )
