"""`jnh keys|roles|users|scopes|agents|auth` against the in-process API, over HTTP (WSGI)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.cli import scopes as scope_commands
from jennah.cli.admin import parse_ttl
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


def login_file(jnh: Jnh) -> Path:
    return jnh.data_dir.parent / "config" / "jennah" / "credentials"


# keys


def test_keys_create_list_revoke(jnh: Jnh) -> None:
    created = jnh.json("keys", "create", "--display-name", "bot", "--role", "member",
                       "--agent-selector", "bot.*", "--ttl", "30d")  # fmt: skip
    key_id, key_string = created["keyId"], created["keyString"]
    assert created["agentSelectors"] == ["bot.*"] and created["roles"] == ["member"]
    table = jnh.ok("keys", "list")
    assert "KEY_ID" in table and key_id in table and "ACTIVE" in table
    assert key_string not in table
    assert jnh.ok("keys", "list", "-o", "name").split() == [key_id]
    committed = jnh("agents", "memory", "commit", "bot.a", "-f", "-", "--token", key_string,
                    stdin='{"chunks": [{"text": "from a key"}]}')  # fmt: skip
    assert committed.exit_code == 0, committed.stderr
    revoked = jnh.ok("keys", "revoke", key_id)
    assert "REVOKED" in revoked
    refused = jnh("agents", "memory", "inspect", "bot.a", "--token", key_string)
    assert refused.exit_code == 5 and "has been revoked" in refused.stderr


def test_keys_create_prints_the_whole_key_string_once_with_a_warning(jnh: Jnh) -> None:
    result = jnh("keys", "create", "--role", "member")
    assert result.exit_code == 0
    line = next(x for x in result.stdout.splitlines() if x.startswith("KEY_STRING"))
    key_string = line.split()[-1]
    assert key_string.startswith("jk_") and len(key_string) > 72  # never shortened
    assert "not shown again" in result.stderr


def test_keys_create_checks_its_flags(jnh: Jnh) -> None:
    both = jnh("keys", "create", "--role", "member", "--ttl", "1d", "--expire-time", "2999-01-01")
    assert both.exit_code == 2
    bad = jnh("keys", "create", "--role", "member", "--ttl", "soon")
    assert bad.exit_code == 2 and "--ttl" in bad.stderr
    refused = jnh("keys", "create", "--role", "member", "--agent-selector", "a b")
    assert refused.exit_code == 3 and "agentSelectors[0]" in refused.stderr


@pytest.mark.parametrize(
    ("text", "expected"), [("3600", "3600s"), ("90m", "5400s"), ("12h", "43200s"),
                           ("30d", "2592000s"), ("45s", "45s")],
)  # fmt: skip
def test_ttl_units(text: str, expected: str) -> None:
    assert parse_ttl(text) == expected


def test_management_with_an_api_key_exits_5(jnh: Jnh) -> None:
    key = jnh.json("keys", "create", "--role", "root")["keyString"]
    refused = jnh("keys", "list", "--token", key)
    assert refused.exit_code == 5
    assert "management permission" in refused.stderr


# roles and users


def test_users_create_then_grant_then_the_user_works(jnh: Jnh) -> None:
    created = jnh("users", "create", "ana")
    assert created.exit_code == 0 and "user:ana" in created.stdout
    token = next(x for x in created.stdout.splitlines() if x.startswith("TOKEN")).split()[-1]
    assert token.startswith("ju_")
    no_role = jnh("scopes", "list", "--token", token)
    assert no_role.exit_code == 5
    granted = jnh.json("roles", "grant", "user:ana", "member", "--agent-selector", "bot.*",
                       "--subject-selector", "user.ana")  # fmt: skip
    assert granted["subjectSelectors"] == ["user.ana"]
    assert jnh.ok("roles", "list", "-o", "name").split() == ["user:ana", "user:root"]
    listed = jnh.ok("roles", "list", "--principal", "user:ana")
    assert "bot.*" in listed and "user:root" not in listed
    jnh.ok("agents", "memory", "commit", "crm", "-f", "-", stdin='{"chunks": [{"text": "x"}]}')
    hidden = jnh("agents", "memory", "inspect", "crm", "--token", token)
    assert hidden.exit_code == 4
    assert "Revoked member from user:ana" in jnh.ok("roles", "revoke", "user:ana", "member")
    again = jnh("roles", "revoke", "user:ana", "member")
    assert again.exit_code == 4
    exists = jnh("users", "create", "user:ana")
    assert exists.exit_code == 6


def test_roles_grant_refuses_an_unknown_role_locally(jnh: Jnh) -> None:
    assert jnh("roles", "grant", "user:ana", "owner").exit_code == 2


# scopes and agents


def test_scopes_list_create_destroy(jnh: Jnh) -> None:
    assert jnh.ok("scopes", "list") == "No scopes.\n"
    jnh.ok("scopes", "create", "user.ana")
    jnh.ok("scopes", "create", "bot.a", "--kind", "agent")
    table = jnh.ok("scopes", "list")
    assert "SCOPE_ID" in table and "SUBJECT" in table and "AGENT" in table
    assert jnh.ok("scopes", "list", "--kind", "AGENT", "-o", "name").split() == ["bot.a"]
    assert jnh.ok("agents", "list", "-o", "name").split() == ["bot.a"]
    assert jnh("scopes", "create", "bot.a").exit_code == 6
    destroyed = jnh.ok("scopes", "destroy", "bot.a", "--yes")
    assert "Destroyed scope bot.a: 1 rows erased" in destroyed
    assert jnh.ok("scopes", "list", "-o", "name").split() == ["user.ana"]
    assert jnh("scopes", "destroy", "bot.a", "--yes").exit_code == 4


def test_destroy_without_yes_needs_a_terminal(jnh: Jnh) -> None:
    jnh.ok("scopes", "create", "user.ana")
    refused = jnh("scopes", "destroy", "user.ana")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert jnh.ok("scopes", "list", "-o", "name").split() == ["user.ana"]


def test_destroy_asks_on_a_terminal(jnh: Jnh, monkeypatch: pytest.MonkeyPatch) -> None:
    jnh.ok("scopes", "create", "user.ana")
    monkeypatch.setattr(scope_commands, "stdin_is_interactive", lambda: True)
    declined = jnh("scopes", "destroy", "user.ana", stdin="n\n")
    assert declined.exit_code == 1 and "Erase scope 'user.ana'" in declined.stdout
    assert jnh.ok("scopes", "list", "-o", "name").split() == ["user.ana"]
    accepted = jnh("scopes", "destroy", "user.ana", stdin="y\n")
    assert accepted.exit_code == 0
    assert jnh.ok("scopes", "list", "-o", "name").split() == []


# auth


def test_whoami(jnh: Jnh) -> None:
    table = jnh.ok("auth", "whoami")
    assert "PRINCIPAL" in table and "user:root" in table and "iam.keys:manage" in table
    assert jnh.ok("auth", "whoami", "-o", "name") == "user:root\n"
    assert jnh.json("auth", "whoami")["kind"] == "USER"


def test_login_saves_a_private_credential_used_by_later_commands(jnh: Jnh) -> None:
    key = jnh.json("keys", "create", "--role", "member", "--agent-selector", "*")["keyString"]
    logged_in = jnh("auth", "login", stdin=key + "\n")
    assert logged_in.exit_code == 0, logged_in.stderr
    assert "api_key:" in logged_in.stdout and "Saved the credential" in logged_in.stderr
    path = login_file(jnh)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"token": key}
    assert jnh.json("auth", "whoami")["kind"] == "API_KEY"  # the login beats credentials.json
    assert jnh.json("auth", "whoami", "--token", TOKEN)["kind"] == "USER"  # --token beats it
    via_env = jnh("auth", "whoami", "-o", "name", JENNAH_TOKEN=TOKEN)
    assert via_env.stdout == "user:root\n"  # and so does JENNAH_TOKEN
    assert "Removed" in jnh.ok("auth", "logout")
    assert not path.exists()
    assert jnh.json("auth", "whoami")["principal"] == "user:root"  # back to credentials.json
    assert jnh.ok("auth", "logout") == "No saved credential.\n"


def test_login_refuses_a_bad_credential_and_saves_nothing(jnh: Jnh) -> None:
    refused = jnh("auth", "login", "--token", "jk_nope_nope")
    assert refused.exit_code == 5
    assert not login_file(jnh).exists()
    unchecked = jnh("auth", "login", "--token", "jk_nope_nope", "--no-verify")
    assert unchecked.exit_code == 0 and login_file(jnh).exists()
    assert jnh("auth", "login", "--token", "two words").exit_code == 2
