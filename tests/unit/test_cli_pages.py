"""`jnh … list` follows nextPageToken; --page-size and --page-token take one page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.cli import pages
from jennah.domain.operations import FormationOperation, new_operation_id
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh


@pytest.fixture
def jnh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Jnh:
    monkeypatch.setattr(pages, "FOLLOW_PAGE_SIZE", 2)  # so that five items take three pages
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


def next_page(stderr: str) -> str:
    """The token `jnh` names for the next page (the in-process server logs there too)."""
    (line,) = [line for line in stderr.splitlines() if line.startswith("more: ")]
    return line.removeprefix("more: --page-token ")


def test_scopes_and_agents_list_every_page(jnh: Jnh) -> None:
    for i in range(5):
        jnh.ok("scopes", "create", f"s.{i}", "--kind", "AGENT")
    names = [f"s.{i}" for i in range(5)]
    assert jnh.ok("scopes", "list", "-o", "name").split() == names
    assert jnh.ok("agents", "list", "-o", "name").split() == names
    assert jnh.json("scopes", "list") == {"scopes": jnh.json("scopes", "list")["scopes"]}
    assert [s["scopeId"] for s in jnh.json("scopes", "list")["scopes"]] == names
    assert all(name in jnh.ok("scopes", "list") for name in names)


def test_page_size_and_page_token_take_one_page(jnh: Jnh) -> None:
    for i in range(5):
        jnh.ok("scopes", "create", f"s.{i}")
    first = jnh("scopes", "list", "--page-size", "2", "-o", "name")
    assert first.exit_code == 0 and first.stdout.split() == ["s.0", "s.1"]
    token = next_page(first.stderr)
    second = jnh("scopes", "list", "--page-size", "2", "--page-token", token, "-o", "name")
    assert second.stdout.split() == ["s.2", "s.3"]
    page = jnh.json("scopes", "list", "--page-size", "4")
    assert len(page["scopes"]) == 4 and page["nextPageToken"]
    last = jnh.json("scopes", "list", "--page-size", "4", "--page-token", page["nextPageToken"])
    assert [s["scopeId"] for s in last["scopes"]] == ["s.4"] and "nextPageToken" not in last
    refused = jnh("scopes", "list", "--page-token", "nonsense")
    assert refused.exit_code == 3 and "pageToken" in refused.stderr
    assert jnh("scopes", "list", "--page-size", "0").exit_code == 2


def test_keys_and_roles_list_every_page(jnh: Jnh) -> None:
    keys = sorted(jnh.json("keys", "create", "--role", "member")["keyId"] for _ in range(5))
    assert jnh.ok("keys", "list", "-o", "name").split() == keys
    for name in ("user:c", "user:a", "user:b"):
        jnh.ok("roles", "grant", name, "member")
    listed = jnh.json("roles", "list")["roleBindings"]
    assert len(listed) == 5 + 4  # the keys', the root's and three users'
    principals = [b["principal"] for b in listed]
    assert principals == sorted(principals)
    one = jnh("roles", "list", "--page-size", "1", "-o", "name")
    assert len(one.stdout.split()) == 1 and next_page(one.stderr)


def test_operations_list_newest_first_every_page(jnh: Jnh) -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    created = []
    for minutes in range(5):
        at = now + timedelta(minutes=minutes)
        operation = FormationOperation(
            operation_id=new_operation_id(), enterprise_id="local", scope_id="bot.a",
            caller="user:root", request_json="{}", create_time=at, update_time=at,
            expire_time=at + timedelta(days=7))  # fmt: skip
        jnh.api.container.operations.create(operation)
        created.append(f"operations/{operation.operation_id}")
    assert jnh.ok("operations", "list", "-o", "name").split() == list(reversed(created))
    table = jnh.ok("operations", "list")
    assert "AGENT_INSTANCE_ID" in table and "bot.a" in table and "QUEUED" in table
