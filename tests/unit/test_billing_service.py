"""Billing services on the embedded ledger: metering a formation, the billing state,
and who may change the overage multiple."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from jennah.domain.access import ApiKey, Caller, Role, RoleBinding, User
from jennah.domain.billing import EnterpriseBilling, Plan, UsageRecord
from jennah.errors import InvalidArgument, PermissionDenied, ResourceExhausted
from jennah.services.access import Access, create_enterprise
from jennah.services.billing import (
    admit_formation,
    billing_state,
    set_overage_multiple,
    settle_formation,
)
from jennah.services.formation.model_calls import FormationUsage
from tests.unit.fakes import FakeIdentityStore, FakeStore, FakeUsageLedger

NOW = datetime(2026, 11, 17, 9, 30, tzinfo=UTC)
ENTERPRISE = "acme"
ROOT = Caller(enterprise_id=ENTERPRISE, principal="user:root")
ADMIN = Caller(enterprise_id=ENTERPRISE, principal="user:admin")
MEMBER = Caller(enterprise_id=ENTERPRISE, principal="user:member")
ADMIN_KEY = Caller(enterprise_id=ENTERPRISE, principal="api_key:k1")


@dataclass
class World:
    ledger: FakeUsageLedger
    access: Access


@pytest.fixture
def world() -> Iterator[World]:
    identity, store, ledger = FakeIdentityStore(), FakeStore(), FakeUsageLedger()
    create_enterprise(identity, ENTERPRISE, ROOT.principal, NOW)
    for caller, role in ((ADMIN, Role.ADMINISTRATOR), (MEMBER, Role.MEMBER)):
        identity.put_user(User(enterprise_id=ENTERPRISE, principal=caller.principal))
        identity.put_binding(
            RoleBinding(
                enterprise_id=ENTERPRISE,
                principal=caller.principal,
                role=role,
                agent_selectors=["*"],
                subject_selectors=["*"],
            )
        )
    identity.create_api_key(
        ApiKey(
            enterprise_id=ENTERPRISE,
            key_id="k1",
            secret_hash="x",
            created_by=ADMIN.principal,
            created_at=NOW,
        )
    )
    identity.put_binding(
        RoleBinding(
            enterprise_id=ENTERPRISE,
            principal=ADMIN_KEY.principal,
            role=Role.ADMINISTRATOR,
            agent_selectors=["*"],
            subject_selectors=["*"],
        )
    )
    yield World(ledger, Access(identity, store, lambda: NOW))


def spend(ledger: FakeUsageLedger, units: int) -> None:
    for record in [
        UsageRecord(
            enterprise_id=ENTERPRISE,
            spent_in_scope="bot",
            caller=ROOT.principal,
            model="gemini",
            region="us-central1",
            input_tokens=1_000,
            output_tokens=1_000,
            units=1,
            formation_id=f"past-{i}",
            recorded_at=NOW.replace(day=2),
        )
        for i in range(units)
    ]:
        ledger.settle(ENTERPRISE, record.formation_id, record)


def reached(input_tokens: int, output_tokens: int, calls: int = 1) -> FormationUsage:
    return FormationUsage(
        model_calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model="gemini-2.5-flash",
        region="us-central1",
    )


# metering a formation


def test_an_admitted_formation_carries_its_plans_bounds(world: World) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.ENTERPRISE))
    admitted = admit_formation(world.ledger, ROOT, NOW)
    assert admitted.input_token_cap == 100_000
    assert admitted.max_output_tokens == 65_536
    assert admitted.formation_id.startswith("fu_")
    assert billing_state(ROOT, world.access, world.ledger, NOW).formations_in_progress == 1


def test_a_formation_that_reached_the_model_is_recorded_as_its_caller(world: World) -> None:
    admitted = admit_formation(world.ledger, ADMIN_KEY, NOW)
    record = settle_formation(
        world.ledger,
        admitted,
        scope_id="bot",
        caller=ADMIN_KEY,
        usage=reached(16_552, 70_000, calls=2),
        formation_key="k-1",
        now=NOW,
    )
    assert record is not None
    assert (record.caller, record.units, record.formation_key) == ("api_key:k1", 9, "k-1")
    assert (record.model, record.region, record.spent_in_scope) == (
        "gemini-2.5-flash",
        "us-central1",
        "bot",
    )
    state = billing_state(ROOT, world.access, world.ledger, NOW)
    assert (state.units_used, state.output_tokens_used, state.formations_in_progress) == (
        9,
        70_000,
        0,
    )


def test_a_replay_or_a_refused_request_records_nothing_and_releases_its_reservation(
    world: World,
) -> None:
    admitted = admit_formation(world.ledger, ROOT, NOW)
    record = settle_formation(
        world.ledger,
        admitted,
        scope_id="bot",
        caller=ROOT,
        usage=FormationUsage(),  # form() returned a replay, or refused before any model call
        formation_key="k-1",
        now=NOW,
    )
    assert record is None
    state = billing_state(ROOT, world.access, world.ledger, NOW)
    assert (state.units_used, state.formations_in_progress) == (0, 0)


def test_an_abandoned_formation_counts_one_unit(world: World) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    admitted = admit_formation(world.ledger, ROOT, NOW)
    settle_formation(
        world.ledger,
        admitted,
        scope_id="bot",
        caller=ROOT,
        usage=reached(0, 0),
        formation_key=None,
        now=NOW,
    )
    assert billing_state(ROOT, world.access, world.ledger, NOW).units_used == 1


def test_a_refusal_at_the_allowance_reserves_nothing(world: World) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    spend(world.ledger, 550)
    with pytest.raises(ResourceExhausted, match="550 formation units per month"):
        admit_formation(world.ledger, ROOT, NOW)
    assert billing_state(ROOT, world.access, world.ledger, NOW).formations_in_progress == 0


# the billing state


def test_the_billing_state_in_units(world: World) -> None:
    world.ledger.put_billing(
        EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO, billable=True)
    )
    spend(world.ledger, 600)
    state = billing_state(MEMBER, world.access, world.ledger, NOW)
    assert state.plan is Plan.PRO and state.billable
    assert (state.allowance, state.units_used, state.overage_units) == (550, 600, 50)
    assert (state.overage_multiple, state.overage_band, state.overage_limit) == (2, 992, 1_542)
    assert (state.period_start, state.period_end) == (
        datetime(2026, 11, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    )


def test_units_past_the_allowance_are_overage_only_when_billable(world: World) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    spend(world.ledger, 552)
    state = billing_state(ROOT, world.access, world.ledger, NOW)
    assert (state.units_used, state.overage_units, state.overage_limit) == (552, 0, 550)


def test_the_free_plan_reports_its_daily_token_allowance(world: World) -> None:
    state = billing_state(ROOT, world.access, world.ledger, NOW)
    assert state.plan is Plan.FREE
    assert (state.allowance, state.allowance_measure.value, state.resets.value) == (
        50_000,
        "OUTPUT_TOKENS",
        "DAILY",
    )
    assert state.overage_band == 0


# the overage multiple


def test_an_administrator_user_sets_the_multiple_for_the_next_formation(world: World) -> None:
    world.ledger.put_billing(
        EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.SCALE, billable=True)
    )
    state = set_overage_multiple(ADMIN, world.access, world.ledger, 3, NOW)
    assert (state.overage_multiple, state.overage_band, state.overage_limit) == (3, 4_488, 6_288)
    assert world.ledger.get_billing(ENTERPRISE).plan is Plan.SCALE


def test_an_enterprise_that_is_not_billable_can_set_the_multiple(world: World) -> None:
    state = set_overage_multiple(ROOT, world.access, world.ledger, 0.5, NOW)
    assert state.overage_multiple == 0.5 and not state.billable


def test_the_multiple_can_never_be_changed_with_an_api_key(world: World) -> None:
    with pytest.raises(PermissionDenied) as caught:
        set_overage_multiple(ADMIN_KEY, world.access, world.ledger, 10, NOW)
    assert caught.value.reason == "MANAGEMENT_PERMISSION_WITH_API_KEY"
    assert world.ledger.get_billing(ENTERPRISE).overage_multiple == 2


def test_a_member_cannot_change_the_multiple(world: World) -> None:
    with pytest.raises(PermissionDenied) as caught:
        set_overage_multiple(MEMBER, world.access, world.ledger, 4, NOW)
    assert caught.value.reason == "PERMISSION_MISSING"


def test_an_invalid_multiple_is_refused_naming_the_field(world: World) -> None:
    with pytest.raises(InvalidArgument) as caught:
        set_overage_multiple(ROOT, world.access, world.ledger, 2.2, NOW)
    assert caught.value.metadata["field"] == "overageMultiple"
    assert world.ledger.get_billing(ENTERPRISE).overage_multiple == 2
