"""`jnh usage tokens|rollup` and `jnh billing get|overage set-multiple`: against the
in-process API on SQLite over HTTP (WSGI), with the requests recorded, and the
rollup on a local data directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from jennah.adapters.sqlite.ledger import SqliteUsageLedger
from jennah.api.dto import parse_timestamp
from jennah.auth import LocalCredentials, credentials_path
from jennah.cli.main import cli
from jennah.cli.options import CliState
from jennah.domain.billing import EnterpriseBilling, Plan, UsageRecord
from jennah.domain.formation import formation_units
from tests.integration.test_api_billing import KEY_TOKEN, PARTIAL_ADMIN, _add_callers, token_of
from tests.integration.test_api_form import sqlite_api
from tests.unit.fakes import ENTERPRISE, ROOT, TOKEN, Api


class Recording(httpx.BaseTransport):
    """A transport that records each request before passing it on."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.inner.handle_request(request)


class Jnh:
    """Runs `jnh` in-process; its HTTP calls reach the app through WSGI, recorded."""

    def __init__(self, api: Api, data_dir: Path) -> None:
        self.api, self.data_dir = api, data_dir
        self.transport = Recording(httpx.WSGITransport(app=api.app))

    def __call__(self, *args: str, **env: str) -> Result:
        environment = {"JENNAH_DATA_DIR": str(self.data_dir), "JENNAH_TOKEN": "",
                       "XDG_CONFIG_HOME": str(self.data_dir.parent / "config")} | env  # fmt: skip
        return CliRunner().invoke(cli, list(args), env=environment,
                                  obj=CliState(transport=self.transport))  # fmt: skip

    def ok(self, *args: str) -> str:
        result = self(*args)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    def params(self) -> dict[str, str]:
        """The query parameters of the last request."""
        return dict(self.transport.requests[-1].url.params)

    @property
    def ledger(self) -> SqliteUsageLedger:
        found = self.api.container.ledger
        assert isinstance(found, SqliteUsageLedger)
        return found


@pytest.fixture
def jnh(tmp_path: Path) -> Iterator[Jnh]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    with sqlite_api(tmp_path / "server") as api:
        _add_callers(api)
        yield Jnh(api, data_dir)


def printed(stderr: str) -> list[str]:
    """What jnh printed on standard error, without the in-process server's log lines."""
    return [line for line in stderr.splitlines() if not line.startswith('{"severity"')]


def usage_record(n: int, at: datetime, **fields: Any) -> UsageRecord:
    tokens = {"input_tokens": fields.pop("input_tokens", 0),
              "output_tokens": fields.pop("output_tokens", 0)}  # fmt: skip
    values: dict[str, Any] = {
        "enterprise_id": ENTERPRISE, "spent_in_scope": "support-bot", "caller": ROOT,
        "model": "gemini-a", "region": "local", "units": formation_units(**tokens),
        "formation_id": f"fu_cli{n}", "recorded_at": at,
    } | tokens | fields  # fmt: skip
    return UsageRecord(**values)


def midnight(days_ago: int) -> datetime:
    now = datetime.now(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC) - timedelta(days=days_ago)


@pytest.fixture
def spent(jnh: Jnh) -> Jnh:
    """Three formations two days ago (two models) and one yesterday."""
    jnh.ledger.record_many([
        usage_record(1, midnight(2) + timedelta(hours=3), input_tokens=1_000, output_tokens=100),
        usage_record(2, midnight(2) + timedelta(hours=4), input_tokens=2_000,
                     output_tokens=16_222, model="gemini-b"),
        usage_record(3, midnight(1) + timedelta(hours=5), input_tokens=300, output_tokens=30),
    ])  # fmt: skip
    return jnh


# jnh usage tokens


def test_tokens_prints_a_table_with_units_and_a_total(spent: Jnh) -> None:
    lines = spent.ok("usage", "tokens").splitlines()
    assert lines[0].split() == ["START", "INPUT_TOKENS", "OUTPUT_TOKENS", "UNITS"]
    assert [line.split() for line in lines[1:]] == [
        [midnight(2).date().isoformat(), "3,000", "16,322", "3"],
        [midnight(1).date().isoformat(), "300", "30", "1"],
        ["TOTAL", "3,300", "16,352", "4"],
    ]


def test_tokens_by_model_names_the_group_column(spent: Jnh) -> None:
    lines = spent.ok("usage", "tokens", "--by", "model").splitlines()
    assert lines[0].split() == ["START", "MODEL", "INPUT_TOKENS", "OUTPUT_TOKENS", "UNITS"]
    assert [line.split() for line in lines[1:]] == [
        [midnight(2).date().isoformat(), "gemini-a", "1,000", "100", "1"],
        [midnight(2).date().isoformat(), "gemini-b", "2,000", "16,222", "2"],
        [midnight(1).date().isoformat(), "gemini-a", "300", "30", "1"],
        ["TOTAL", "-", "3,300", "16,352", "4"],
    ]
    assert spent.params()["groupBy"] == "model"


def test_tokens_as_json_is_the_answer_with_units(spent: Jnh) -> None:
    answer = json.loads(spent.ok("usage", "tokens", "-o", "json", "--per", "month"))
    assert answer["per"] == "month" and answer["timeZone"] == "UTC"
    # one bucket, or two when the two days straddle the first of a month
    assert sum(int(b["units"]) for b in answer["buckets"]) == 4
    assert sum(int(b["inputTokens"]) for b in answer["buckets"]) == 3_300


def test_tokens_names_prints_the_bucket_starts(spent: Jnh) -> None:
    names = spent.ok("usage", "tokens", "--by", "model", "-o", "name").split()
    assert names == [
        midnight(2).strftime("%Y-%m-%dT%H:%M:%SZ"),
        midnight(1).strftime("%Y-%m-%dT%H:%M:%SZ"),
    ]


def test_since_defaults_to_thirty_days_ago(jnh: Jnh) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    output = jnh.ok("usage", "tokens")
    after = datetime.now(UTC)
    sent = jnh.params()
    assert sent == {"startTime": sent["startTime"], "per": "day", "timeZone": "UTC"}
    start = parse_timestamp(sent["startTime"])
    assert before - timedelta(days=30) <= start <= after - timedelta(days=30)
    assert output.startswith("No formation tokens from ") and "(UTC)" in output


def test_the_flags_become_query_parameters(jnh: Jnh) -> None:
    jnh.ok("usage", "tokens", "--since", "2026-11-01", "--until", "2026-11-20T09:30",
           "--per", "week", "--by", "caller", "--tz", "Asia/Tokyo", "--scope", "support-bot",
           "--model", "gemini-a", "--region", "local", "--caller", ROOT)  # fmt: skip
    assert jnh.params() == {
        "startTime": "2026-10-31T15:00:00Z",  # a bare date: midnight in --tz
        "endTime": "2026-11-20T00:30:00Z",  # a date-time without zone: in --tz
        "per": "week", "groupBy": "caller", "timeZone": "Asia/Tokyo", "scope": "support-bot",
        "model": "gemini-a", "region": "local", "caller": ROOT,
    }  # fmt: skip
    jnh.ok("usage", "tokens", "--since", "2026-11-01T00:00:00+01:00")
    assert jnh.params()["startTime"] == "2026-10-31T23:00:00Z"


def test_start_is_shown_in_the_time_zone(spent: Jnh) -> None:
    since = midnight(3).date().isoformat()
    lines = spent.ok("usage", "tokens", "--since", since, "--tz", "Asia/Tokyo").splitlines()
    # 03:00, 04:00 and 05:00 UTC are 12:00-14:00 in Tokyo, the same calendar days
    assert [line.split()[0] for line in lines[1:]] == [
        midnight(2).date().isoformat(),
        midnight(1).date().isoformat(),
        "TOTAL",
    ]


def test_a_bad_time_is_a_usage_error(jnh: Jnh) -> None:
    result = jnh("usage", "tokens", "--since", "last tuesday")
    assert result.exit_code == 2 and "--since" in result.stderr
    assert jnh.transport.requests == []


def test_an_unknown_time_zone_is_invalid_naming_it(jnh: Jnh) -> None:
    result = jnh("usage", "tokens", "--tz", "Mars/Olympus")
    assert result.exit_code == 3
    assert printed(result.stderr) == [
        "jnh: INVALID_ARGUMENT: timeZone 'Mars/Olympus' is not an IANA time zone name "
        "(e.g. UTC, Asia/Tokyo)"
    ]


def test_the_server_refusals_exit_with_their_codes(jnh: Jnh) -> None:
    stale = jnh("usage", "tokens", "--since", midnight(401).date().isoformat())
    assert stale.exit_code == 3
    (line,) = printed(stale.stderr)
    assert line.startswith("jnh: INVALID_ARGUMENT: startTime ") and "400 days" in line
    partial = jnh("usage", "tokens", "--by", "scope", "--token", token_of(PARTIAL_ADMIN))
    assert partial.exit_code == 5
    (line,) = printed(partial.stderr)
    assert line.startswith(f"jnh: PERMISSION_DENIED: {PARTIAL_ADMIN} cannot group or filter")


# jnh billing


def test_billing_get_prints_the_state_in_units(jnh: Jnh) -> None:
    jnh.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO,
                                             billable=True))  # fmt: skip
    jnh.ledger.record_many([usage_record(1, datetime.now(UTC), units=600)])
    pairs = dict(line.split(None, 1) for line in jnh.ok("billing", "get").splitlines())
    month = (midnight(0).replace(day=1) + timedelta(days=32)).replace(day=1)
    assert pairs == {
        "PLAN": "PRO",
        "BILLABLE": "yes",
        "ALLOWANCE": "550 formation units per month",
        "UNITS_USED": "600",
        "OVERAGE_UNITS": "50",
        "OVERAGE_MULTIPLE": "2",
        "OVERAGE_BAND": "992 units",
        "OVERAGE_LIMIT": "1,542 units",
        "RESETS_AT": f"{month.strftime('%Y-%m-%dT%H:%M:%SZ')} (monthly)",
        "FORMATIONS_IN_PROGRESS": "0",
    }
    assert json.loads(jnh.ok("billing", "get", "-o", "json"))["overageLimit"] == "1542"
    assert jnh.ok("billing", "get", "-o", "name") == "PRO\n"


def test_billing_get_on_free_counts_output_tokens(jnh: Jnh) -> None:
    pairs = dict(line.split(None, 1) for line in jnh.ok("billing", "get").splitlines())
    assert pairs["ALLOWANCE"] == "50,000 output tokens per day"
    assert (pairs["OUTPUT_TOKENS_USED"], pairs["OVERAGE_LIMIT"]) == ("0", "50,000 output tokens")
    assert pairs["RESETS_AT"].endswith("(daily)")


def test_set_multiple_sends_it_and_prints_the_new_state(jnh: Jnh) -> None:
    jnh.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    pairs = dict(line.split(None, 1) for line in
                 jnh.ok("billing", "overage", "set-multiple", "3").splitlines())  # fmt: skip
    assert json.loads(jnh.transport.requests[-1].content) == {"overageMultiple": 3.0}
    assert (pairs["OVERAGE_MULTIPLE"], pairs["OVERAGE_LIMIT"]) == ("3", "550 units")
    assert pairs["OVERAGE_BAND"] == "1,488 units (applies once billable)"
    assert jnh.ledger.get_billing(ENTERPRISE).overage_multiple == 3.0
    answer = json.loads(jnh.ok("billing", "overage", "set-multiple", "0.5", "-o", "json"))
    assert (answer["overageMultiple"], answer["overageBand"]) == (0.5, "248")


@pytest.mark.parametrize("value", ["3.25", "11", "10.1", "nan", "many"])
def test_set_multiple_checks_the_value_before_sending(jnh: Jnh, value: str) -> None:
    result = jnh("billing", "overage", "set-multiple", value)
    assert result.exit_code == 2 and "VALUE" in result.stderr
    if value != "many":
        assert "0 to 10 in steps of 0.5" in result.stderr
    assert jnh.transport.requests == []
    assert jnh.ledger.get_billing(ENTERPRISE).overage_multiple == 2.0


def test_set_multiple_refuses_an_api_key_locally(jnh: Jnh) -> None:
    result = jnh("billing", "overage", "set-multiple", "3", "--token", KEY_TOKEN)
    assert result.exit_code == 5 and "never be used with an API key" in result.stderr
    assert jnh.transport.requests == []


# jnh usage rollup, on the local store


def test_rollup_folds_the_local_ledger_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    ledger = SqliteUsageLedger(data_dir / "memory.db")
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    ledger.record_many([usage_record(n, hour_ago, input_tokens=10 * n) for n in (1, 2, 3)])
    ledger.record_many([usage_record(4, hour_ago, units=1)])  # no tokens: nothing to fold
    ledger.close()
    environment = {"JENNAH_DATA_DIR": str(tmp_path / "elsewhere")}

    def rollup(*args: str) -> str:
        result = CliRunner().invoke(cli, ["usage", "rollup", "--data-dir", str(data_dir), *args],
                                    env=environment)  # fmt: skip
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    first = rollup()
    assert first.startswith("Folded 3 usage rows; watermark ")
    watermark = parse_timestamp(first.split("watermark ")[1].rstrip(".\n"))
    assert hour_ago < watermark <= datetime.now(UTC) - timedelta(minutes=5)
    again = json.loads(rollup("-o", "json"))
    assert again["rowsFolded"] == 0 and parse_timestamp(again["watermark"]) >= watermark
    assert not (tmp_path / "elsewhere").exists()  # --data-dir wins over JENNAH_DATA_DIR
