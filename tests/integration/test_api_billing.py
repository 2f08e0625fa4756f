"""The billing routes and metered memory:form on the wire, on a real SQLite store and ledger.

GET /v1/billing and POST /v1/billing:setOverageMultiple (who may, which values),
formation admission against the plan (allowance, overage limit, formations in
progress: 429 with nothing spent; a replay and a request refused for its size
never 429), settlement of a formation that reached the model and then failed,
and GET /v1/billing/usage/formation-tokens agreeing with the receipts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.models.scripted import ScriptedModel, Slow
from jennah.adapters.sqlite.ledger import SqliteUsageLedger
from jennah.domain.access import ApiKey, Role, RoleBinding, User
from jennah.domain.billing import EnterpriseBilling, Plan, UsageRecord
from jennah.domain.formation import formation_units
from jennah.ports.model import ModelResult
from jennah.services import usage_report
from jennah.services.access import api_key_token, hash_secret, user_token
from tests.integration.test_api_form import (
    FORM,
    TOKYO,
    _extraction,
    ok,
    reason,
    refused,
    rows,
    sqlite_api,
    user,
)
from tests.unit.fakes import ENTERPRISE, ROOT, Api

BILLING = "/v1/billing"
SET_MULTIPLE = "/v1/billing:setOverageMultiple"
TOKENS = "/v1/billing/usage/formation-tokens"
SECRET = "fedcba9876543210" * 4
KEY_TOKEN = api_key_token("kroot", SECRET)  # an API key bound to root
PARTIAL_ADMIN = "user:ops"  # an administrator reaching bot.* agent workspaces only
MEMBER = "user:member"  # a member reaching everything
STATE_FIELDS = {
    "plan", "billable", "allowance", "allowanceMeasure", "resets", "periodStartTime",
    "periodEndTime", "unitsUsed", "outputTokensUsed", "overageUnits", "overageMultiple",
    "overageBand", "overageLimit", "formationsInProgress",
}  # fmt: skip
ONE_FACT = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def api(tmp_path: Path, model: ScriptedModel) -> Iterator[Api]:
    with sqlite_api(tmp_path, model) as app:
        _add_callers(app)
        yield app


def _add_callers(api: Api) -> None:
    identity, now = api.identity, datetime.now(UTC)
    identity.create_api_key(ApiKey(enterprise_id=ENTERPRISE, key_id="kroot",
                                   secret_hash=hash_secret(SECRET), created_by=ROOT,
                                   created_at=now))  # fmt: skip
    identity.put_binding(RoleBinding(enterprise_id=ENTERPRISE, principal="api_key:kroot",
                                     role=Role.ROOT))  # fmt: skip
    for principal, role, agents, subjects in (
        (PARTIAL_ADMIN, Role.ADMINISTRATOR, ["bot.*"], ["*"]),
        (MEMBER, Role.MEMBER, ["*"], ["*"]),
    ):
        identity.put_user(User(enterprise_id=ENTERPRISE, principal=principal,
                               token_hash=hash_secret(SECRET)))  # fmt: skip
        identity.put_binding(RoleBinding(enterprise_id=ENTERPRISE, principal=principal,
                                         role=role, agent_selectors=agents,
                                         subject_selectors=subjects))  # fmt: skip


def token_of(principal: str) -> str:
    return user_token(ENTERPRISE, principal, SECRET)


def ledger(api: Api) -> SqliteUsageLedger:
    found = api.container.ledger
    assert isinstance(found, SqliteUsageLedger)
    return found


def set_plan(api: Api, plan: Plan, **settings: Any) -> None:
    ledger(api).put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=plan, **settings))


_recorded = iter(range(1_000_000))


def record(
    api: Api,
    *,
    units: int | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    at: datetime | None = None,
    model: str = "scripted",
    scope: str = "support-bot",
    caller: str = ROOT,
) -> None:
    """Usage straight into the ledger, as though a formation had settled it."""
    ledger(api).record_many([UsageRecord(
        enterprise_id=ENTERPRISE, spent_in_scope=scope, caller=caller, model=model,
        region="local", input_tokens=input_tokens, output_tokens=output_tokens,
        units=units or formation_units(input_tokens, output_tokens),
        formation_id=f"fu_test{next(_recorded)}", recorded_at=at or datetime.now(UTC),
    )])  # fmt: skip


def state(api: Api) -> dict[str, Any]:
    return ok(api.get(BILLING))


def today() -> datetime:
    now = datetime.now(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC)


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def info(error: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(d for d in error["details"] if d["@type"].endswith("ErrorInfo"))
    return found


def violated_field(error: dict[str, Any]) -> str:
    bad = next(d for d in error["details"] if d["@type"].endswith("BadRequest"))
    return str(bad["fieldViolations"][0]["field"])


# GET /v1/billing


def test_without_settings_the_state_is_free(api: Api) -> None:
    body = state(api)
    assert set(body) == STATE_FIELDS
    day = today()
    assert body == {
        "plan": "FREE", "billable": False, "allowance": "50000",
        "allowanceMeasure": "OUTPUT_TOKENS", "resets": "DAILY",
        "periodStartTime": stamp(day), "periodEndTime": stamp(day + timedelta(days=1)),
        "unitsUsed": "0", "outputTokensUsed": "0", "overageUnits": "0",
        "overageMultiple": 2.0, "overageBand": "0", "overageLimit": "50000",
        "formationsInProgress": 0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("billable", "limit", "overage_units"), [(True, "1542", "50"), (False, "550", "0")]
)
def test_pro_reports_its_allowance_band_and_limit(
    api: Api, billable: bool, limit: str, overage_units: str
) -> None:
    set_plan(api, Plan.PRO, billable=billable)
    record(api, units=600)
    body = state(api)
    assert (body["plan"], body["billable"], body["allowance"]) == ("PRO", billable, "550")
    assert (body["allowanceMeasure"], body["resets"]) == ("FORMATION_UNITS", "MONTHLY")
    assert (body["overageMultiple"], body["overageBand"], body["overageLimit"]) == (
        2.0, "992", limit,
    )  # fmt: skip
    assert (body["unitsUsed"], body["overageUnits"]) == ("600", overage_units)
    first = today().replace(day=1)
    assert body["periodStartTime"] == stamp(first)
    assert body["periodEndTime"] == stamp((first + timedelta(days=32)).replace(day=1))


def test_a_member_reads_the_billing_state(api: Api) -> None:
    assert ok(api.get(BILLING, token=token_of(MEMBER)))["plan"] == "FREE"


# POST /v1/billing:setOverageMultiple


def test_root_sets_the_multiple(api: Api) -> None:
    set_plan(api, Plan.PRO, billable=True)
    body = ok(api.post(SET_MULTIPLE, {"overageMultiple": 3}))
    assert (body["overageMultiple"], body["overageBand"], body["overageLimit"]) == (
        3.0, "1488", "2038",
    )  # fmt: skip
    assert state(api) == body
    off = ok(api.post(SET_MULTIPLE, {"overageMultiple": 0}))
    assert (off["overageBand"], off["overageLimit"]) == ("0", "550")


def test_a_non_billable_enterprise_sets_it_and_it_applies_once_billable(api: Api) -> None:
    set_plan(api, Plan.PRO)
    body = ok(api.post(SET_MULTIPLE, {"overageMultiple": 3}))
    assert (body["overageBand"], body["overageLimit"]) == ("1488", "550")
    billing = ledger(api).get_billing(ENTERPRISE)
    ledger(api).put_billing(billing.model_copy(update={"billable": True}))
    assert state(api)["overageLimit"] == "2038"


def test_an_api_key_bound_to_root_cannot_set_it(api: Api) -> None:
    before = state(api)
    assert ok(api.get(BILLING, token=KEY_TOKEN)) == before  # it may read the state
    error = refused(api.post(SET_MULTIPLE, {"overageMultiple": 3}, token=KEY_TOKEN), 403,
                    "PERMISSION_DENIED")  # fmt: skip
    assert "billing.overage:manage" in error["message"]
    assert state(api) == before


def test_a_member_cannot_set_it(api: Api) -> None:
    before = state(api)
    refused(api.post(SET_MULTIPLE, {"overageMultiple": 3}, token=token_of(MEMBER)), 403,
            "PERMISSION_DENIED")  # fmt: skip
    assert state(api) == before


@pytest.mark.parametrize("value", [3.25, 11, -0.5, 10.5])
def test_a_multiple_off_the_steps_is_invalid(api: Api, value: float) -> None:
    before = state(api)
    error = refused(api.post(SET_MULTIPLE, {"overageMultiple": value}), 400, "INVALID_ARGUMENT")
    assert violated_field(error) == "overageMultiple"
    assert "0 to 10 in steps of 0.5" in error["message"]
    assert state(api) == before


def test_the_multiple_is_required(api: Api) -> None:
    error = refused(api.post(SET_MULTIPLE, {}), 400, "INVALID_ARGUMENT")
    assert violated_field(error) == "overageMultiple"


# formation admission: refused with nothing spent


def _assert_nothing_spent(api: Api, model: ScriptedModel, before: dict[str, Any]) -> None:
    assert model.calls == []
    assert rows(api)["memory_records"] == [] and rows(api)["scopes"] == []
    after = state(api)
    assert after == before and after["formationsInProgress"] == 0


@pytest.mark.parametrize(
    ("plan", "settings", "spent", "words"),
    [
        (Plan.FREE, {}, {"output_tokens": 50_000},
         ["50,000 formation output tokens per day", "50,000 output tokens", "resets daily"]),
        (Plan.PRO, {}, {"units": 550},
         ["550 formation units per month", "550 units were used this month", "resets monthly"]),
        (Plan.PRO, {"billable": True, "overage_multiple": 0}, {"units": 550},
         ["550 formation units per month", "resets monthly"]),
        (Plan.TRIAL, {"trial_started_at": datetime.now(UTC) - timedelta(days=1),
                      "trial_ends_at": datetime.now(UTC) + timedelta(days=13)}, {"units": 200},
         ["200 formation units for the trial", "200 units were used during the trial",
          "does not reset before the trial ends"]),
        (Plan.ENTERPRISE, {}, {"units": 25_000},
         ["25,000 formation units per month", "resets monthly"]),
    ],
)  # fmt: skip
def test_past_the_allowance_a_formation_is_refused_and_spends_nothing(
    api: Api, model: ScriptedModel, plan: Plan, settings: dict[str, Any],
    spent: dict[str, Any], words: list[str],
) -> None:  # fmt: skip
    set_plan(api, plan, **settings)
    record(api, **spent)
    before = state(api)
    response = api.post(FORM, TOKYO)
    error = refused(response, 429, "RESOURCE_EXHAUSTED")
    assert reason(error) == "FORMATION_ALLOWANCE_EXHAUSTED"
    for word in words:
        assert word in error["message"], error["message"]
    assert "Retry-After" not in response.headers
    _assert_nothing_spent(api, model, before)


def test_a_replay_while_exhausted_is_answered_from_the_receipt(
    api: Api, model: ScriptedModel
) -> None:
    set_plan(api, Plan.PRO)
    model.add(ONE_FACT)
    keyed = {"turns": [user("I live in Tokyo.")], "formationKey": "conversation-1"}
    first = ok(api.post(FORM, keyed))
    record(api, units=549)  # with the first formation's unit: the whole allowance
    assert state(api)["unitsUsed"] == "550"
    refused(api.post(FORM, TOKYO), 429, "RESOURCE_EXHAUSTED")
    again = ok(api.post(FORM, keyed))
    assert (again["replay"], again["formationUnits"]) == (True, first["formationUnits"])
    assert len(model.calls) == 1 and state(api)["unitsUsed"] == "550"


def test_an_oversized_request_while_exhausted_is_invalid_not_exhausted(
    api: Api, model: ScriptedModel
) -> None:
    set_plan(api, Plan.PRO)
    record(api, units=550)
    before = state(api)
    error = refused(api.post(FORM, {"turns": [user("x" * 70_000)]}), 400, "INVALID_ARGUMENT")
    assert reason(error) == "FORMATION_INPUT_CAP" and "16,384 tokens" in error["message"]
    _assert_nothing_spent(api, model, before)


def test_billable_pro_forms_past_the_allowance_within_the_band(
    api: Api, model: ScriptedModel
) -> None:
    set_plan(api, Plan.PRO, billable=True)
    record(api, units=1_000)
    model.add(ONE_FACT)
    assert ok(api.post(FORM, {"turns": [user("I live in Tokyo.")]}))["formationUnits"] == "1"
    after = state(api)
    assert (after["unitsUsed"], after["overageUnits"]) == ("1001", "451")


def test_past_the_overage_limit_a_formation_is_refused(api: Api, model: ScriptedModel) -> None:
    set_plan(api, Plan.PRO, billable=True)
    record(api, units=1_542)
    before = state(api)
    error = refused(api.post(FORM, TOKYO), 429, "RESOURCE_EXHAUSTED")
    assert reason(error) == "FORMATION_OVERAGE_LIMIT"
    assert "1,542 formation units" in error["message"]
    assert "1,542 units were used this month" in error["message"]
    assert info(error)["metadata"]["overageLimit"] == "1542"
    _assert_nothing_spent(api, model, before)


def test_raising_the_multiple_admits_straight_away(api: Api, model: ScriptedModel) -> None:
    set_plan(api, Plan.PRO, billable=True)
    record(api, units=1_542)
    refused(api.post(FORM, TOKYO), 429, "RESOURCE_EXHAUSTED")
    ok(api.post(SET_MULTIPLE, {"overageMultiple": 3}))
    model.add(ONE_FACT)
    ok(api.post(FORM, {"turns": [user("I live in Tokyo.")]}))


def test_too_many_in_progress_is_refused_with_a_retry_delay(api: Api, model: ScriptedModel) -> None:
    set_plan(api, Plan.PRO)
    now = datetime.now(UTC)
    for i in range(10):
        ledger(api).admit(ENTERPRISE, f"fu_held{i}", now)
    before = state(api)
    assert before["formationsInProgress"] == 10
    response = api.post(FORM, TOKYO)
    error = refused(response, 429, "RESOURCE_EXHAUSTED")
    assert reason(error) == "FORMATIONS_IN_PROGRESS" and "nothing was spent" in error["message"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "5s"} in error[
        "details"
    ]
    assert response.headers["Retry-After"] == "5"
    assert model.calls == [] and rows(api)["memory_records"] == []
    assert state(api) == before
    ledger(api).settle(ENTERPRISE, "fu_held0", None)  # one settles: the next is admitted
    model.add(ONE_FACT)
    ok(api.post(FORM, {"turns": [user("I live in Tokyo.")]}))


# settlement: a formation that reached the model uses its units, whatever came of it


def test_a_formation_past_its_time_bound_still_uses_its_unit(tmp_path: Path) -> None:
    model = ScriptedModel([Slow(5.0, {"candidates": []})])
    with sqlite_api(tmp_path, model, model_call_timeout_seconds=0.05) as api:
        refused(api.post(FORM, TOKYO), 504, "DEADLINE_EXCEEDED")
        after = state(api)
        assert (after["unitsUsed"], after["formationsInProgress"]) == ("1", 0)
        # it reported no tokens: it counts toward the allowance but not in the report
        assert ok(api.get(TOKENS, startTime=stamp(today())))["buckets"] == []


def test_a_formation_past_its_output_bound_reports_its_tokens(tmp_path: Path) -> None:
    model = ScriptedModel([ModelResult(text='{"candidates": []}', input_tokens=900,
                                       output_tokens=40_000, model="gemini-test")])  # fmt: skip
    with sqlite_api(tmp_path, model) as api:
        refused(api.post(FORM, TOKYO), 409, "ABORTED")  # Free bounds a call at 32,768
        after = state(api)
        assert (after["unitsUsed"], after["outputTokensUsed"]) == ("4", "32768")
        (bucket,) = ok(api.get(TOKENS, startTime=stamp(today())))["buckets"]
        assert (bucket["inputTokens"], bucket["outputTokens"], bucket["units"]) == (
            "900", "32768", "4",
        )  # fmt: skip
        assert rows(api)["memory_records"] == []


def test_the_receipt_units_are_the_report_units(api: Api, model: ScriptedModel) -> None:
    model.add(ModelResult(text=json.dumps(ONE_FACT), input_tokens=2_680, output_tokens=16_222,
                          model="gemini-test"))  # fmt: skip
    receipt = ok(api.post(FORM, {"turns": [user("I live in Tokyo.")]}))
    assert (receipt["formationUnits"], receipt["inputTokens"], receipt["outputTokens"]) == (
        "2", "2680", "16222",
    )  # fmt: skip
    report = ok(api.get(TOKENS, startTime=stamp(today()), groupBy="model"))
    (bucket,) = report["buckets"]
    assert bucket == {
        "startTime": stamp(today()), "endTime": bucket["endTime"], "key": "gemini-test",
        "inputTokens": "2680", "outputTokens": "16222", "units": receipt["formationUnits"],
    }  # fmt: skip
    assert state(api)["unitsUsed"] == "2"


# GET /v1/billing/usage/formation-tokens


def test_the_report_per_day(api: Api) -> None:
    day = today()
    record(api, input_tokens=100, output_tokens=10, at=day - timedelta(days=2, hours=-3))
    record(api, input_tokens=200, output_tokens=20, at=day - timedelta(days=2, hours=-5))
    record(api, input_tokens=16_385, output_tokens=30, at=day - timedelta(days=1, hours=-1))
    record(api, units=1, at=day - timedelta(days=1, hours=-2))  # no tokens: not reported
    expected = [
        {"startTime": stamp(day - timedelta(days=2)), "endTime": stamp(day - timedelta(days=1)),
         "inputTokens": "300", "outputTokens": "30", "units": "2"},
        {"startTime": stamp(day - timedelta(days=1)), "endTime": stamp(day),
         "inputTokens": "16385", "outputTokens": "30", "units": "2"},
    ]  # fmt: skip
    query = {"startTime": stamp(day - timedelta(days=3)), "endTime": stamp(day)}
    body = ok(api.get(TOKENS, **query))
    assert body["buckets"] == expected
    assert (body["per"], body["timeZone"], body["startTime"], body["endTime"]) == (
        "day", "UTC", query["startTime"], query["endTime"],
    )  # fmt: skip
    usage_report.rollup(ledger(api), datetime.now(UTC))  # the aggregates answer the same
    assert ok(api.get(TOKENS, **query))["buckets"] == expected


def test_the_report_by_caller_and_filtered_by_model(api: Api) -> None:
    at = today() - timedelta(hours=12)
    record(api, input_tokens=100, output_tokens=10, at=at, caller="api_key:k1", model="m1")
    record(api, input_tokens=200, output_tokens=20, at=at, caller=ROOT, model="m1")
    record(api, input_tokens=400, output_tokens=40, at=at, caller=ROOT, model="m2")
    start = stamp(today() - timedelta(days=1))
    grouped = ok(api.get(TOKENS, startTime=start, groupBy="caller"))["buckets"]
    assert [(b["key"], b["inputTokens"]) for b in grouped] == [("api_key:k1", "100"),
                                                               (ROOT, "600")]  # fmt: skip
    narrowed = ok(api.get(TOKENS, startTime=start, model="m1"))["buckets"]
    assert [(b.get("key"), b["inputTokens"], b["units"]) for b in narrowed] == [(None, "300", "2")]


def test_grouping_by_scope_needs_reach_over_every_scope(api: Api) -> None:
    record(api, input_tokens=100, output_tokens=10, at=today() - timedelta(hours=1))
    start = stamp(today() - timedelta(days=1))
    partial = token_of(PARTIAL_ADMIN)
    for params in ({"groupBy": "scope"}, {"scope": "support-bot"}):
        error = refused(api.get(TOKENS, token=partial, startTime=start, **params), 403,
                        "PERMISSION_DENIED")  # fmt: skip
        assert reason(error) == "USAGE_SCOPE_REACH" and "every agent workspace" in error["message"]
    assert ok(api.get(TOKENS, token=partial, startTime=start))["buckets"]  # ungrouped: fine
    (bucket,) = ok(api.get(TOKENS, startTime=start, groupBy="scope"))["buckets"]  # root
    assert bucket["key"] == "support-bot"


def test_the_member_role_cannot_read_the_report(api: Api) -> None:
    start = stamp(today())
    error = refused(api.get(TOKENS, token=token_of(MEMBER), startTime=start), 403,
                    "PERMISSION_DENIED")  # fmt: skip
    assert reason(error) != "USAGE_SCOPE_REACH" and "billing.usage:read" in error["message"]


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({}, "startTime", "required"),
        ({"startTime": "2026-09-01"}, "startTime", "RFC 3339"),
        ({"startTime": "STALE"}, "startTime", "400 days"),
        ({"startTime": "NOW", "endTime": "YESTERDAY"}, "endTime", "must be before"),
        ({"startTime": "NOW", "timeZone": "Mars/Olympus"}, "timeZone", "IANA"),
        ({"startTime": "NOW", "per": "hour"}, "per", ""),
        ({"startTime": "NOW", "groupBy": "agent"}, "groupBy", ""),
    ],
)
def test_a_bad_report_request_names_the_field(
    api: Api, params: dict[str, str], field: str, words: str
) -> None:
    times = {
        "NOW": stamp(today()),
        "YESTERDAY": stamp(today() - timedelta(days=1)),
        "STALE": stamp(today() - timedelta(days=402)),
    }
    error = refused(api.get(TOKENS, **{k: times.get(v, v) for k, v in params.items()}), 400,
                    "INVALID_ARGUMENT")  # fmt: skip
    assert violated_field(error) == field and words in error["message"], error["message"]
