"""Billing's pure rules: plans, the overage band, periods, admission and its refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain.billing import (
    ALLOWANCE_REASON,
    IN_PROGRESS_REASON,
    MAX_FORMATIONS_IN_PROGRESS,
    OVERAGE_LIMIT_REASON,
    PLANS,
    AllowanceMeasure,
    AllowanceReset,
    Consumption,
    EnterpriseBilling,
    Plan,
    admit,
    allowance_period,
    check_billing,
    check_overage_multiple,
    overage_band,
)
from jennah.domain.formation import formation_units
from jennah.errors import InvalidArgument, ResourceExhausted

AT = datetime(2026, 11, 17, 15, 30, tzinfo=UTC)


def settings(plan: Plan, *, billable: bool = False, multiple: float = 2.0) -> EnterpriseBilling:
    return EnterpriseBilling(
        enterprise_id="acme", plan=plan, billable=billable, overage_multiple=multiple
    )


def units(n: int, formations: int | None = None) -> Consumption:
    return Consumption(formations=n if formations is None else formations, units=n)


def refusal(
    plan: EnterpriseBilling, used: Consumption, reserved: Consumption | None = None
) -> ResourceExhausted:
    with pytest.raises(ResourceExhausted) as caught:
        admit(plan, used, reserved or Consumption(), AT)
    return caught.value


# plans


@pytest.mark.parametrize(
    ("plan", "input_cap", "output_per_call"),
    [
        (Plan.FREE, 8_192, 32_768),
        (Plan.TRIAL, 16_384, 65_536),
        (Plan.PRO, 16_384, 65_536),
        (Plan.SCALE, 16_384, 65_536),
        (Plan.TEAM, 16_384, 65_536),
        (Plan.ENTERPRISE, 100_000, 65_536),
    ],
)
def test_every_plan_caps_input_and_bounds_each_model_call(
    plan: Plan, input_cap: int, output_per_call: int
) -> None:
    assert PLANS[plan].input_token_cap == input_cap
    assert PLANS[plan].max_output_tokens_per_call == output_per_call
    if plan is not Plan.TRIAL:
        admission = admit(settings(plan), Consumption(), Consumption(), AT)
        assert admission.input_token_cap == input_cap


@pytest.mark.parametrize(
    ("plan", "allowance", "measure", "resets"),
    [
        (Plan.FREE, 50_000, AllowanceMeasure.OUTPUT_TOKENS, AllowanceReset.DAILY),
        (Plan.TRIAL, 200, AllowanceMeasure.FORMATION_UNITS, AllowanceReset.NOT_BEFORE_TRIAL_ENDS),
        (Plan.PRO, 550, AllowanceMeasure.FORMATION_UNITS, AllowanceReset.MONTHLY),
        (Plan.SCALE, 1_800, AllowanceMeasure.FORMATION_UNITS, AllowanceReset.MONTHLY),
        (Plan.TEAM, 6_500, AllowanceMeasure.FORMATION_UNITS, AllowanceReset.MONTHLY),
        (Plan.ENTERPRISE, 25_000, AllowanceMeasure.FORMATION_UNITS, AllowanceReset.MONTHLY),
    ],
)
def test_allowances(
    plan: Plan, allowance: int, measure: AllowanceMeasure, resets: AllowanceReset
) -> None:
    terms = PLANS[plan]
    assert (terms.allowance, terms.measure, terms.resets) == (allowance, measure, resets)


@pytest.mark.parametrize(
    ("input_tokens", "output_tokens", "expected"),
    [(2_700, 1_700, 1), (2_680, 16_222, 2), (16_552, 70_000, 9), (0, 0, 1)],
)
def test_the_spec_units_table(input_tokens: int, output_tokens: int, expected: int) -> None:
    assert formation_units(input_tokens, output_tokens) == expected


# the overage band: the spec's table, exactly


@pytest.mark.parametrize(
    ("plan", "allowance", "band", "refused_from"),
    [
        (Plan.PRO, 550, 992, 1_542),
        (Plan.SCALE, 1_800, 2_992, 4_792),
        (Plan.TEAM, 6_500, 9_992, 16_492),
    ],
)
def test_the_default_overage_band_and_limit(
    plan: Plan, allowance: int, band: int, refused_from: int
) -> None:
    billable = settings(plan, billable=True)
    assert (billable.terms.allowance, billable.overage_band, billable.limit) == (
        allowance,
        band,
        refused_from,
    )
    admit(billable, units(refused_from - 1), Consumption(), AT)
    assert refusal(billable, units(refused_from)).reason == OVERAGE_LIMIT_REASON


def test_a_multiple_keeps_its_meaning_across_plans() -> None:
    assert overage_band(Plan.PRO, 3) == 1_488
    assert overage_band(Plan.SCALE, 3) == 4_488
    assert overage_band(Plan.PRO, 0.5) == 248
    assert overage_band(Plan.TEAM, 10) == 49_960


@pytest.mark.parametrize("plan", [Plan.FREE, Plan.TRIAL, Plan.ENTERPRISE])
def test_plans_without_overage_have_no_band(plan: Plan) -> None:
    billable = settings(plan, billable=True, multiple=10)
    assert billable.overage_band == 0
    assert not billable.overage_active
    assert billable.limit == billable.terms.allowance


@pytest.mark.parametrize("multiple", [0, 0.5, 1, 2, 2.5, 9.5, 10])
def test_multiples_from_0_to_10_in_steps_of_half(multiple: float) -> None:
    assert check_overage_multiple(multiple) == multiple


@pytest.mark.parametrize("multiple", [-0.5, 10.5, 0.3, 2.25, 11])
def test_other_multiples_are_invalid_naming_the_field(multiple: float) -> None:
    with pytest.raises(InvalidArgument, match="overageMultiple") as caught:
        check_overage_multiple(multiple)
    assert caught.value.metadata["field"] == "overageMultiple"
    assert "0 to 10 in steps of 0.5" in caught.value.message


def test_a_trial_needs_both_dates_in_order() -> None:
    trial = EnterpriseBilling(enterprise_id="acme", plan=Plan.TRIAL)
    with pytest.raises(InvalidArgument, match="trialStartedAt and trialEndsAt"):
        check_billing(trial)
    backwards = trial.model_copy(update={"trial_started_at": AT, "trial_ends_at": AT})
    with pytest.raises(InvalidArgument, match="after"):
        check_billing(backwards)


# periods


def test_periods_are_utc_calendar_periods() -> None:
    day = allowance_period(settings(Plan.FREE), AT)
    assert (day.start, day.end) == (
        datetime(2026, 11, 17, tzinfo=UTC),
        datetime(2026, 11, 18, tzinfo=UTC),
    )
    month = allowance_period(settings(Plan.PRO), datetime(2026, 12, 31, 23, 59, tzinfo=UTC))
    assert (month.start, month.end) == (
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=UTC),
    )
    february = allowance_period(settings(Plan.TEAM), datetime(2028, 2, 29, tzinfo=UTC))
    assert february.end == datetime(2028, 3, 1, tzinfo=UTC)


def test_the_trial_period_runs_from_its_first_day_to_its_end() -> None:
    trial = EnterpriseBilling(
        enterprise_id="acme",
        plan=Plan.TRIAL,
        trial_started_at=datetime(2026, 11, 10, 9, 0, tzinfo=UTC),
        trial_ends_at=datetime(2026, 11, 24, 9, 0, tzinfo=UTC),
    )
    period = allowance_period(trial, AT)
    assert period.start == datetime(2026, 11, 10, tzinfo=UTC)
    assert period.end == datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert period.resets is AllowanceReset.NOT_BEFORE_TRIAL_ENDS


# admission and refusals


def test_below_the_allowance_a_formation_is_admitted_with_a_one_unit_reservation() -> None:
    admission = admit(settings(Plan.PRO), units(549), Consumption(), AT)
    assert admission.reserved == Consumption(formations=1, units=1, output_tokens=0)
    assert admission.max_output_tokens == 65_536
    assert admission.output_token_budget is None  # units: each call is bounded alone
    assert not admission.in_overage


def test_past_the_allowance_without_overage_the_refusal_states_allowance_used_and_reset() -> None:
    error = refusal(settings(Plan.PRO), units(551))
    assert error.status == "RESOURCE_EXHAUSTED"
    assert error.reason == ALLOWANCE_REASON
    assert "550 formation units per month" in error.message
    assert "551 units were used this month" in error.message
    assert "resets monthly, on 2026-12-01T00:00:00Z" in error.message
    assert error.metadata["resets"] == "MONTHLY"
    assert error.metadata["unitsUsed"] == "551"
    assert error.metadata["allowance"] == "550"


def test_free_counts_output_tokens_per_day_and_resets_daily() -> None:
    free = settings(Plan.FREE)
    used = Consumption(formations=30, units=34, output_tokens=50_100)
    error = refusal(free, used)
    assert error.reason == ALLOWANCE_REASON
    assert "50,000 formation output tokens per day" in error.message
    assert "50,100 output tokens (34 formation units) were used today" in error.message
    assert "resets daily, at midnight UTC (2026-11-18T00:00:00Z)" in error.message
    assert error.metadata["allowanceMeasure"] == "OUTPUT_TOKENS"


def test_on_free_a_formation_may_produce_at_most_what_is_left_of_the_day() -> None:
    free = settings(Plan.FREE)
    plenty = admit(free, Consumption(output_tokens=1_000), Consumption(), AT)
    assert plenty.max_output_tokens == 32_768
    assert plenty.reserved.output_tokens == plenty.output_token_budget == 32_768
    little = admit(free, Consumption(output_tokens=45_000), Consumption(), AT)
    assert little.max_output_tokens == 5_000
    assert little.output_token_budget == 5_000  # both calls together, not each
    assert little.input_token_cap == 8_192


def test_the_trial_does_not_reset_before_it_ends_and_refuses_after_it() -> None:
    trial = EnterpriseBilling(
        enterprise_id="acme",
        plan=Plan.TRIAL,
        trial_started_at=AT - timedelta(days=3),
        trial_ends_at=AT + timedelta(days=11),
    )
    error = refusal(trial, units(200))
    assert "200 formation units for the trial" in error.message
    assert "200 units were used during the trial" in error.message
    assert "does not reset before the trial ends (2026-11-28T15:30:00Z)" in error.message
    assert error.metadata["resets"] == "NOT_BEFORE_TRIAL_ENDS"
    ended = trial.model_copy(update={"trial_ends_at": AT - timedelta(seconds=1)})
    error = refusal(ended, units(3))
    assert "the trial ended on" in error.message


def test_with_overage_formations_continue_past_the_allowance_up_to_the_limit() -> None:
    pro = settings(Plan.PRO, billable=True)
    admission = admit(pro, units(800), Consumption(), AT)
    assert admission.in_overage
    error = refusal(pro, units(1_545))
    assert error.reason == OVERAGE_LIMIT_REASON
    assert "refused from 1,542 formation units" in error.message
    assert "1,545 units were used this month" in error.message
    assert "allowance of 550 plus an overage band of 992 units" in error.message
    assert error.metadata["overageLimit"] == "1542"
    assert error.metadata["unitsUsed"] == "1545"


def test_a_multiple_of_zero_turns_overage_off() -> None:
    error = refusal(settings(Plan.SCALE, billable=True, multiple=0), units(1_800))
    assert error.reason == ALLOWANCE_REASON
    assert "1,800 formation units per month" in error.message


def test_an_enterprise_that_is_not_billable_is_refused_at_its_allowance() -> None:
    assert refusal(settings(Plan.TEAM, multiple=5), units(6_500)).reason == ALLOWANCE_REASON


def test_lowering_the_multiple_below_what_is_used_refuses_the_next_formation() -> None:
    used = units(1_300)
    admit(settings(Plan.PRO, billable=True, multiple=2), used, Consumption(), AT)
    lowered = refusal(settings(Plan.PRO, billable=True, multiple=1), used)
    assert lowered.reason == OVERAGE_LIMIT_REASON
    assert "1,046" in lowered.message
    # raising it admits straight away
    admit(settings(Plan.PRO, billable=True, multiple=2), used, Consumption(), AT)


def test_reservations_of_formations_in_progress_hold_the_last_units() -> None:
    pro = settings(Plan.PRO)
    admit(pro, units(549), Consumption(), AT)
    error = refusal(pro, units(549), units(1))
    assert error.reason == IN_PROGRESS_REASON
    assert error.metadata["retryDelay"] == "5s"
    assert "(1 units) is reserved by 1 formations in progress" in error.message
    assert "nothing was spent" in error.message


def test_too_many_formations_in_progress_is_refused_with_a_retry_delay() -> None:
    team = settings(Plan.TEAM)
    admit(team, units(0), units(MAX_FORMATIONS_IN_PROGRESS - 1), AT)
    error = refusal(team, units(0), units(MAX_FORMATIONS_IN_PROGRESS))
    assert error.reason == IN_PROGRESS_REASON
    assert error.metadata == {
        "retryDelay": "5s",
        "formationsInProgress": str(MAX_FORMATIONS_IN_PROGRESS),
        "maxFormationsInProgress": str(MAX_FORMATIONS_IN_PROGRESS),
    }
    assert f"the most allowed at once ({MAX_FORMATIONS_IN_PROGRESS})" in error.message


def test_an_exhausted_allowance_is_reported_before_formations_in_progress() -> None:
    error = refusal(settings(Plan.PRO), units(600), units(MAX_FORMATIONS_IN_PROGRESS))
    assert error.reason == ALLOWANCE_REASON


def test_the_enterprise_plan_has_a_documented_monthly_allowance_and_no_band() -> None:
    enterprise = settings(Plan.ENTERPRISE, billable=True)
    admit(enterprise, units(24_999), Consumption(), AT)
    error = refusal(enterprise, units(25_000))
    assert error.reason == ALLOWANCE_REASON
    assert "25,000 formation units per month" in error.message
