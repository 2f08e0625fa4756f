"""Handlers of the billing state, the overage multiple and the formation token report.

`jennah.api.routes` has authenticated the caller and checked the route's
permission (billing.state:read, billing.overage:manage, billing.usage:read);
the services check it again and add their own rules: the overage multiple is a
management permission no API key holds, and a report grouped or filtered by
scope needs reach over every scope of the enterprise.
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.domain.billing import UsageDimension
from jennah.ports.ledger import UsageFilters
from jennah.services import billing, usage_report
from jennah.services.usage_report import Per, TokenUsageQuery


def get_billing(call: Call) -> Reply:
    services = call.services
    state = billing.billing_state(call.caller, services.access, services.ledger, services.now())
    return Reply(state_out(state))


def set_overage_multiple(call: Call) -> Reply:
    request: dto.SetOverageMultipleRequest = call.request
    services = call.services
    state = billing.set_overage_multiple(
        call.caller, services.access, services.ledger, request.overage_multiple, services.now()
    )
    return Reply(state_out(state))


def formation_tokens(call: Call) -> Reply:
    params: dto.FormationTokensParams = call.request
    services = call.services
    now = services.now()
    query = TokenUsageQuery(
        start_time=params.start_time,
        end_time=params.end_time,
        per=Per(params.per),
        time_zone=params.time_zone,
        group_by=None if params.group_by is None else UsageDimension(params.group_by),
        filters=UsageFilters(
            scope=params.scope, caller=params.caller, model=params.model, region=params.region
        ),
    )
    buckets = usage_report.formation_tokens(
        call.caller, services.access, services.ledger, query, now
    )
    start, end = usage_report.time_range(query, now)
    return Reply(
        dto.FormationTokensResponse(
            buckets=[
                dto.TokenBucket(
                    start_time=b.start,
                    end_time=b.end,
                    key=b.key,
                    input_tokens=b.input_tokens,
                    output_tokens=b.output_tokens,
                    units=b.units,
                )
                for b in buckets
            ],
            per=params.per,
            time_zone=params.time_zone,
            group_by=params.group_by,
            start_time=start,
            end_time=end,
        )
    )


def state_out(state: billing.BillingState) -> dto.BillingState:
    return dto.BillingState(
        plan=state.plan.value,
        billable=state.billable,
        allowance=state.allowance,
        allowance_measure=state.allowance_measure.value,
        resets=state.resets.value,
        period_start_time=state.period_start,
        period_end_time=state.period_end,
        units_used=state.units_used,
        output_tokens_used=state.output_tokens_used,
        overage_units=state.overage_units,
        overage_multiple=state.overage_multiple,
        overage_band=state.overage_band,
        overage_limit=state.overage_limit,
        formations_in_progress=state.formations_in_progress,
    )
