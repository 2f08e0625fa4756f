"""Billing's domain: plans, allowances, the overage band, admission, and usage records.

Pure rules, no I/O. A formation is admitted once, before its first model call
(`admit`); one admitted below its limit runs to completion and consumes all of
its units, so usage can end slightly above a limit. Allowances are counted in
formation units (`jennah.domain.formation.formation_units`), except Free's,
which is counted in formation output tokens per day.

Periods are UTC calendar periods: Free's allowance resets at midnight UTC,
monthly allowances on the first of the month at midnight UTC, and the trial's
allowance counts every unit spent from the UTC day the trial started and does
not reset before the trial ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from jennah.errors import InvalidArgument, ResourceExhausted


class Plan(StrEnum):
    FREE = "FREE"
    TRIAL = "TRIAL"
    PRO = "PRO"
    SCALE = "SCALE"
    TEAM = "TEAM"
    ENTERPRISE = "ENTERPRISE"


class AllowanceMeasure(StrEnum):
    """What an allowance counts."""

    FORMATION_UNITS = "FORMATION_UNITS"
    OUTPUT_TOKENS = "OUTPUT_TOKENS"  # formation output tokens, reasoning included


class AllowanceReset(StrEnum):
    DAILY = "DAILY"
    MONTHLY = "MONTHLY"
    NOT_BEFORE_TRIAL_ENDS = "NOT_BEFORE_TRIAL_ENDS"


class PlanTerms(BaseModel):
    """What a plan allows. `monthly_fee_units` is the plan's monthly fee counted in
    formation units: the base of the overage band (0 on a plan without overage)."""

    model_config = ConfigDict(frozen=True)

    plan: Plan
    label: str
    input_token_cap: int  # per formation
    max_output_tokens_per_call: int
    allowance: int
    measure: AllowanceMeasure
    resets: AllowanceReset
    monthly_fee_units: int = 0

    @property
    def includes_overage(self) -> bool:
        return self.monthly_fee_units > 0


# Every plan bounds a model call's output; Free at 32,768 tokens, the others at
# 65,536 (the output limit of the Gemini 2.5 models formation calls).
FREE_OUTPUT_TOKENS_PER_CALL = 32_768
OUTPUT_TOKENS_PER_CALL = 65_536
TRIAL_ALLOWANCE_UNITS = 200  # for the whole trial
ENTERPRISE_ALLOWANCE_UNITS = 25_000  # per month; Enterprise has no overage band

PLANS: dict[Plan, PlanTerms] = {
    Plan.FREE: PlanTerms(
        plan=Plan.FREE,
        label="Free plan",
        input_token_cap=8_192,
        max_output_tokens_per_call=FREE_OUTPUT_TOKENS_PER_CALL,
        allowance=50_000,
        measure=AllowanceMeasure.OUTPUT_TOKENS,
        resets=AllowanceReset.DAILY,
    ),
    Plan.TRIAL: PlanTerms(
        plan=Plan.TRIAL,
        label="trial",
        input_token_cap=16_384,
        max_output_tokens_per_call=OUTPUT_TOKENS_PER_CALL,
        allowance=TRIAL_ALLOWANCE_UNITS,
        measure=AllowanceMeasure.FORMATION_UNITS,
        resets=AllowanceReset.NOT_BEFORE_TRIAL_ENDS,
    ),
    Plan.PRO: PlanTerms(
        plan=Plan.PRO,
        label="Pro plan",
        input_token_cap=16_384,
        max_output_tokens_per_call=OUTPUT_TOKENS_PER_CALL,
        allowance=550,
        measure=AllowanceMeasure.FORMATION_UNITS,
        resets=AllowanceReset.MONTHLY,
        monthly_fee_units=496,
    ),
    Plan.SCALE: PlanTerms(
        plan=Plan.SCALE,
        label="Scale plan",
        input_token_cap=16_384,
        max_output_tokens_per_call=OUTPUT_TOKENS_PER_CALL,
        allowance=1_800,
        measure=AllowanceMeasure.FORMATION_UNITS,
        resets=AllowanceReset.MONTHLY,
        monthly_fee_units=1_496,
    ),
    Plan.TEAM: PlanTerms(
        plan=Plan.TEAM,
        label="Team plan",
        input_token_cap=16_384,
        max_output_tokens_per_call=OUTPUT_TOKENS_PER_CALL,
        allowance=6_500,
        measure=AllowanceMeasure.FORMATION_UNITS,
        resets=AllowanceReset.MONTHLY,
        monthly_fee_units=4_996,
    ),
    Plan.ENTERPRISE: PlanTerms(
        plan=Plan.ENTERPRISE,
        label="Enterprise plan",
        input_token_cap=100_000,
        max_output_tokens_per_call=OUTPUT_TOKENS_PER_CALL,
        allowance=ENTERPRISE_ALLOWANCE_UNITS,
        measure=AllowanceMeasure.FORMATION_UNITS,
        resets=AllowanceReset.MONTHLY,
    ),
}

# The overage multiple: 0 to 10 in steps of 0.5; 0 turns overage off.
DEFAULT_OVERAGE_MULTIPLE = 2.0
MAX_OVERAGE_MULTIPLE = 10.0
OVERAGE_MULTIPLE_STEP = 0.5

# Formations in progress per enterprise; past it, RESOURCE_EXHAUSTED with a retry delay.
MAX_FORMATIONS_IN_PROGRESS = 10
IN_PROGRESS_RETRY_DELAY = timedelta(seconds=5)
# A reservation not settled by then (its process died) stops counting: the
# 30-minute formation ceiling plus a margin.
RESERVATION_LIFETIME = timedelta(minutes=35)
# Units an admitted formation reserves until it settles: the least it can consume.
RESERVED_UNITS = 1

OVERAGE_LIMIT_REASON = "FORMATION_OVERAGE_LIMIT"
ALLOWANCE_REASON = "FORMATION_ALLOWANCE_EXHAUSTED"
IN_PROGRESS_REASON = "FORMATIONS_IN_PROGRESS"


class EnterpriseBilling(BaseModel):
    """An enterprise's billing settings (control data). `billable`: it holds an active
    marketplace subscription; overage needs it AND a plan that includes overage."""

    enterprise_id: str
    plan: Plan = Plan.FREE
    billable: bool = False
    overage_multiple: float = DEFAULT_OVERAGE_MULTIPLE
    trial_started_at: datetime | None = None
    trial_ends_at: datetime | None = None

    @property
    def terms(self) -> PlanTerms:
        return PLANS[self.plan]

    @property
    def overage_band(self) -> int:
        """The band in units: multiple x the plan's monthly fee in units (0 without overage)."""
        return overage_band(self.plan, self.overage_multiple)

    @property
    def overage_active(self) -> bool:
        return self.billable and self.terms.includes_overage and self.overage_band > 0

    @property
    def limit(self) -> int:
        """Where formations are refused: the allowance, plus the band when overage is on."""
        return self.terms.allowance + (self.overage_band if self.overage_active else 0)


def overage_band(plan: Plan, multiple: float) -> int:
    """multiple x the plan's monthly fee in units, in exact integer arithmetic."""
    fee = PLANS[plan].monthly_fee_units
    return round(multiple * 2) * fee // 2


def check_overage_multiple(multiple: float) -> float:
    """The multiple, if it is 0 to 10 in steps of 0.5; INVALID_ARGUMENT naming the field."""
    halves = multiple * 2
    if not 0 <= multiple <= MAX_OVERAGE_MULTIPLE or halves != int(halves):
        raise InvalidArgument(
            f"overageMultiple {multiple:g} must be from 0 to {MAX_OVERAGE_MULTIPLE:g} in steps "
            f"of {OVERAGE_MULTIPLE_STEP:g} (0 turns overage off)",
            field="overageMultiple",
        )
    return float(multiple)


def check_billing(billing: EnterpriseBilling) -> EnterpriseBilling:
    """INVALID_ARGUMENT for settings that cannot be stored: a bad multiple, a trial
    without both dates or ending before it starts."""
    check_overage_multiple(billing.overage_multiple)
    if billing.plan is Plan.TRIAL:
        start, end = billing.trial_started_at, billing.trial_ends_at
        if start is None or end is None:
            raise InvalidArgument(
                "a trial needs trialStartedAt and trialEndsAt", field="trialEndsAt"
            )
        if _utc(end) <= _utc(start):
            raise InvalidArgument("trialEndsAt must be after trialStartedAt", field="trialEndsAt")
    return billing


def check_default_plan(plan: Plan) -> Plan:
    """A plan enterprises without settings can have: any but the trial, which needs dates."""
    if plan is Plan.TRIAL:
        raise InvalidArgument(
            "the default plan cannot be the trial, which needs start and end dates",
            field="defaultPlan",
        )
    return plan


# Periods.


class Period(BaseModel):
    """The allowance period an instant falls in: [start, end), with how it resets.
    Usage counters are per UTC day, so `start` is always a UTC midnight."""

    start: datetime
    end: datetime
    resets: AllowanceReset


def utc_day(at: datetime) -> datetime:
    at = _utc(at)
    return datetime(at.year, at.month, at.day, tzinfo=UTC)


def allowance_period(billing: EnterpriseBilling, at: datetime) -> Period:
    resets = billing.terms.resets
    if resets is AllowanceReset.DAILY:
        day = utc_day(at)
        return Period(start=day, end=day + timedelta(days=1), resets=resets)
    if resets is AllowanceReset.MONTHLY:
        first = utc_day(at).replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        return Period(start=first, end=following, resets=resets)
    start, end = billing.trial_started_at, billing.trial_ends_at
    if start is None or end is None:  # check_billing keeps these out of the store
        raise InvalidArgument("the trial has no start or end", field="trialEndsAt")
    return Period(start=utc_day(start), end=_utc(end), resets=resets)


# Admission.


class Consumption(BaseModel):
    """Formations, units and output tokens: used in a period, or reserved in progress."""

    formations: int = 0
    units: int = 0
    output_tokens: int = 0


class Admission(BaseModel):
    """An admitted formation's bounds and what it reserves until it settles.

    `max_output_tokens` bounds each model call: the plan's bound, or on Free what
    is left of the day's output tokens when that is less (a formation that
    reaches it stops with ABORTED naming the bound). `output_token_budget` bounds
    the formation's calls together: on Free, the output tokens it reserved of the
    day (so its second call may produce what the first left of it); None on a
    plan counted in units, whose calls are bounded one by one.
    """

    plan: Plan
    input_token_cap: int
    max_output_tokens: int
    output_token_budget: int | None = None
    reserved: Consumption
    in_overage: bool  # admitted past the allowance, inside the overage band
    period: Period


def admit(
    billing: EnterpriseBilling,
    used_this_period: Consumption,
    in_progress_reserved: Consumption,
    at: datetime,
) -> Admission:
    """Admit one formation, or raise RESOURCE_EXHAUSTED (nothing is spent either way).

    Refused, in this order: past the allowance without overage (ALLOWANCE_REASON,
    stating the allowance, what was used and how it resets) or past allowance +
    band with overage (OVERAGE_LIMIT_REASON, naming the limit and the units used);
    then, with a retry delay (IN_PROGRESS_REASON, metadata retryDelay), when
    formations in progress hold what is left or are as many as allowed at once.
    Each formation in progress holds a reservation of at least the 1 unit it will
    consume (on Free: the output tokens its calls may produce), so formations
    racing for the last unit cannot all be admitted.
    """
    period = allowance_period(billing, at)
    terms = billing.terms
    by_tokens = terms.measure is AllowanceMeasure.OUTPUT_TOKENS
    limit = terms.allowance if by_tokens else billing.limit
    spent = used_this_period.output_tokens if by_tokens else used_this_period.units
    held = in_progress_reserved.output_tokens if by_tokens else in_progress_reserved.units
    if spent >= limit or _utc(at) >= period.end:
        raise _limit_refusal(billing, used_this_period, period, at)
    if spent + held >= limit or in_progress_reserved.formations >= MAX_FORMATIONS_IN_PROGRESS:
        raise _in_progress_refusal(in_progress_reserved, limit - spent, terms.measure)
    reserved_tokens = min(terms.max_output_tokens_per_call, limit - spent - held)
    return Admission(
        plan=billing.plan,
        input_token_cap=terms.input_token_cap,
        max_output_tokens=reserved_tokens if by_tokens else terms.max_output_tokens_per_call,
        output_token_budget=reserved_tokens if by_tokens else None,
        reserved=Consumption(
            formations=1, units=RESERVED_UNITS, output_tokens=reserved_tokens if by_tokens else 0
        ),
        in_overage=not by_tokens and spent + held >= terms.allowance,
        period=period,
    )


def _in_progress_refusal(
    in_progress: Consumption, left: int, measure: AllowanceMeasure
) -> ResourceExhausted:
    seconds = int(IN_PROGRESS_RETRY_DELAY.total_seconds())
    if in_progress.formations >= MAX_FORMATIONS_IN_PROGRESS:
        why = (
            f"{in_progress.formations} formations are in progress for this enterprise, the "
            f"most allowed at once ({MAX_FORMATIONS_IN_PROGRESS})"
        )
    else:
        what = "output tokens" if measure is AllowanceMeasure.OUTPUT_TOKENS else "units"
        why = (
            f"what is left of the allowance or overage limit ({left:,} {what}) is reserved "
            f"by {in_progress.formations} formations in progress"
        )
    return ResourceExhausted(
        f"{why}; nothing was spent: retry in {seconds} s",
        reason=IN_PROGRESS_REASON,
        metadata={
            "retryDelay": f"{seconds}s",
            "formationsInProgress": str(in_progress.formations),
            "maxFormationsInProgress": str(MAX_FORMATIONS_IN_PROGRESS),
        },
    )


def _limit_refusal(
    billing: EnterpriseBilling, used: Consumption, period: Period, at: datetime
) -> ResourceExhausted:
    if billing.terms.measure is AllowanceMeasure.OUTPUT_TOKENS or not billing.overage_active:
        return _allowance_refusal(billing, used, period, at)
    terms = billing.terms
    message = (
        f"the overage limit is reached: formations are refused from {billing.limit:,} formation "
        f"units a month (the {terms.label}'s allowance of {terms.allowance:,} plus an overage "
        f"band of {billing.overage_band:,} units, {billing.overage_multiple:g} x the plan's "
        f"monthly fee of {terms.monthly_fee_units:,} units), and {used.units:,} units were "
        f"used this month; the limit resets monthly, "
        f"on {_stamp(period.end)}. A root or administrator can raise the overage multiple"
    )
    return ResourceExhausted(
        message,
        reason=OVERAGE_LIMIT_REASON,
        metadata={
            **_refusal_metadata(billing, used, period),
            "overageLimit": str(billing.limit),
            "overageBand": str(billing.overage_band),
            "overageMultiple": f"{billing.overage_multiple:g}",
        },
    )


def _allowance_refusal(
    billing: EnterpriseBilling, used: Consumption, period: Period, at: datetime
) -> ResourceExhausted:
    terms = billing.terms
    if terms.measure is AllowanceMeasure.OUTPUT_TOKENS:
        allowance = f"{terms.allowance:,} formation output tokens per day"
        spent = (
            f"{used.output_tokens:,} output tokens ({used.units:,} formation units) were used today"
        )
    else:
        per = {AllowanceReset.MONTHLY: " per month", AllowanceReset.DAILY: " per day"}
        allowance = f"{terms.allowance:,} formation units{per.get(terms.resets, ' for the trial')}"
        during = "this month" if terms.resets is AllowanceReset.MONTHLY else "during the trial"
        spent = f"{used.units:,} units were used {during}"
    return ResourceExhausted(
        f"the formation allowance of the {terms.label} is used up: {allowance}, and {spent}; "
        f"{_resets(period, at)}",
        reason=ALLOWANCE_REASON,
        metadata=_refusal_metadata(billing, used, period),
    )


def _resets(period: Period, at: datetime) -> str:
    if period.resets is AllowanceReset.DAILY:
        return f"it resets daily, at midnight UTC ({_stamp(period.end)})"
    if period.resets is AllowanceReset.MONTHLY:
        return f"it resets monthly, on {_stamp(period.end)}"
    if _utc(at) >= period.end:
        return (
            f"it does not reset before the trial ends, and the trial ended on "
            f"{_stamp(period.end)}: choose a plan to keep forming memory"
        )
    return f"it does not reset before the trial ends ({_stamp(period.end)})"


def _refusal_metadata(
    billing: EnterpriseBilling, used: Consumption, period: Period
) -> dict[str, str]:
    terms = billing.terms
    return {
        "plan": billing.plan.value,
        "allowance": str(terms.allowance),
        "allowanceMeasure": terms.measure.value,
        "unitsUsed": str(used.units),
        "outputTokensUsed": str(used.output_tokens),
        "resets": period.resets.value,
        "resetTime": _stamp(period.end),
    }


def _stamp(at: datetime) -> str:
    return _utc(at).isoformat().replace("+00:00", "Z")


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


# Usage records.


class UsageDimension(StrEnum):
    """What a usage report can be grouped or filtered by."""

    SCOPE = "scope"
    CALLER = "caller"
    MODEL = "model"
    REGION = "region"


class UsageRecord(BaseModel):
    """What one formation that reached the model spent (the ledger's row).

    Tokens are the model's reported counts summed over the formation's calls
    (output includes reasoning). A formation whose calls reported no tokens
    (abandoned at its time bound) has a row with zero tokens and 1 unit: it
    counts toward the allowance but is left out of token reports.
    `spent_in_scope` is plain data, not a tenancy key: usage outlives the scope.
    """

    model_config = ConfigDict(frozen=True)

    enterprise_id: str
    spent_in_scope: str
    caller: str  # user:<id> or api_key:<id>
    model: str
    region: str
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    units: int = Field(ge=1)
    formation_id: str
    formation_key: str | None = None
    recorded_at: datetime

    @property
    def reported_tokens(self) -> bool:
        return self.input_tokens > 0 or self.output_tokens > 0


class Spent(BaseModel):
    """What ledger records add up to: the attempts of one formation, whose receipt
    reports everything the request consumed."""

    model_config = ConfigDict(frozen=True)

    units: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def spent(records: Iterable[UsageRecord]) -> Spent:
    """The units and tokens of `records`, added up."""
    rows = list(records)
    return Spent(
        units=sum(r.units for r in rows),
        input_tokens=sum(r.input_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
    )
