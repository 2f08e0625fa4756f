"""End to end: credentials, keys, roles and scopes on a real `jnh serve`, driven by the
real `jnh` CLI (and httpx where a plain HTTP client makes the point)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Server, serving

pytestmark = pytest.mark.slow

ONE = '{"chunks": [{"text": "%s"}]}'


def line_value(output: str, label: str) -> str:
    return next(x for x in output.splitlines() if x.startswith(label)).split()[-1]


def test_an_api_key_commits_queries_and_is_refused_once_revoked(server: Server) -> None:
    created = server.json("keys", "create", "--display-name", "support bot", "--role", "member",
                          "--agent-selector", "bot.*", "--ttl", "1d")  # fmt: skip
    key_id, key = created["keyId"], created["keyString"]
    assert (created["state"], created["createdBy"]) == ("ACTIVE", "user:root")
    committed = server.json("agents", "memory", "commit", "bot.support", "-f", "-",
                            "--token", key, stdin=ONE % "Ana prefers tea")  # fmt: skip
    assert committed["chunksWritten"] == "1"
    found = server.json("agents", "memory", "query", "bot.support", "--text", "tea",
                        JENNAH_TOKEN=key)  # fmt: skip
    assert [r["text"] for r in found["semantic"]["results"]] == ["Ana prefers tea"]
    scopes = server.json("scopes", "list", "--token", key)["scopes"]
    assert [(s["scopeId"], s["createdBy"]) for s in scopes] == [
        ("bot.support", f"api_key:{key_id}")
    ]
    whoami = server.json("auth", "whoami", "--token", key)
    assert (whoami["principal"], whoami["kind"]) == (f"api_key:{key_id}", "API_KEY")
    management = server.jnh("keys", "list", "--token", key)
    assert management.returncode == 5 and "management permission" in management.stderr
    listed = server.ok("keys", "list")
    assert key_id in listed and "support bot" in listed and key not in listed
    assert "REVOKED" in server.ok("keys", "revoke", key_id)
    refused = server.jnh("agents", "memory", "query", "bot.support", "--text", "tea",
                         "--token", key)  # fmt: skip
    assert refused.returncode == 5 and f"API key {key_id} has been revoked" in refused.stderr
    plain = httpx.get(f"{server.endpoint}/v1/caller", headers={"Authorization": f"Bearer {key}"},
                      timeout=30)  # fmt: skip
    assert plain.status_code == 401 and plain.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_second_user_reaches_only_the_scopes_its_role_gives(server: Server) -> None:
    server.ok("agents", "memory", "commit", "crm", "-f", "-", stdin=ONE % "crm secret")
    server.ok("scopes", "memory", "commit", "user.bob", "-f", "-", stdin=ONE % "bob secret")
    created = server.ok("users", "create", "user:ana")
    ana = line_value(created, "TOKEN")
    no_role = server.jnh("scopes", "list", "--token", ana)
    assert no_role.returncode == 5
    server.ok("roles", "grant", "user:ana", "member", "--agent-selector", "ana.*",
              "--subject-selector", "user.ana")  # fmt: skip
    server.ok("agents", "memory", "commit", "ana.bot", "-f", "-", "--token", ana,
              stdin=ONE % "ana remembers")  # fmt: skip
    server.ok("scopes", "memory", "commit", "user.ana", "-f", "-", "--token", ana,
              stdin=ONE % "about ana")  # fmt: skip
    mine = server.ok("scopes", "list", "-o", "name", "--token", ana).split()
    assert mine == ["ana.bot", "user.ana"]
    for collection, scope in (("agents", "crm"), ("scopes", "user.bob"), ("scopes", "ghost")):
        hidden = server.jnh(collection, "memory", "inspect", scope, "--token", ana)
        assert hidden.returncode == 4 and f"'{scope}' was not found" in hidden.stderr
    outside = server.jnh("agents", "memory", "commit", "crm2", "-f", "-", "--token", ana,
                         stdin=ONE % "x")  # fmt: skip
    assert outside.returncode == 4
    bindings = server.json("roles", "list", "--principal", "user:ana")["roleBindings"]
    assert bindings == [{"principal": "user:ana", "role": "member", "agentSelectors": ["ana.*"],
                         "subjectSelectors": ["user.ana"]}]  # fmt: skip
    cannot_grant = server.jnh("roles", "grant", "user:ana", "root", "--token", ana)
    assert cannot_grant.returncode == 5
    everything = server.ok("scopes", "list", "-o", "name").split()
    assert {"crm", "user.bob", "ana.bot", "user.ana"} <= set(everything)


def test_scopes_list_and_destroy(server: Server) -> None:
    server.ok("agents", "memory", "commit", "doomed", "-f", "-", stdin=ONE % "short-lived")
    assert "doomed" in server.ok("agents", "list", "-o", "name").split()
    refused = server.jnh("scopes", "destroy", "doomed")  # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    erased = server.json("scopes", "destroy", "doomed", "--yes")
    assert erased["scopeId"] == "doomed" and int(erased["rowsErased"]) >= 2
    assert "doomed" not in server.ok("scopes", "list", "-o", "name").split()
    gone = server.jnh("agents", "memory", "inspect", "doomed")
    assert gone.returncode == 4
    assert server.jnh("scopes", "destroy", "doomed", "--yes").returncode == 4


def test_whoami_and_login(server: Server) -> None:
    root = server.json("auth", "whoami")
    assert (root["enterprise"], root["principal"], root["roles"]) == ("local", "user:root",
                                                                      ["root"])  # fmt: skip
    key = server.json("keys", "create", "--role", "member", "--subject-selector", "*")["keyString"]
    logged_in = server.jnh("auth", "login", stdin=key + "\n")
    assert logged_in.returncode == 0, logged_in.stderr
    saved = server.workdir / "config" / "jennah" / "credentials"
    assert json.loads(saved.read_text()) == {"token": key}
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert server.json("auth", "whoami")["kind"] == "API_KEY"
    token = server.ok("auth", "print-token").strip()
    assert server.json("auth", "whoami", JENNAH_TOKEN=token)["kind"] == "USER"
    server.ok("auth", "logout")
    assert server.json("auth", "whoami")["principal"] == "user:root"


def test_a_restart_reuses_the_local_root_and_keeps_everything(tmp_path: Path) -> None:
    with serving(tmp_path) as first:
        assert any("created now" in line for line in first.banner)
        token = first.ok("auth", "print-token").strip()
        key = first.json("keys", "create", "--role", "member", "--agent-selector", "*")
        first.ok("agents", "memory", "commit", "kept", "-f", "-", "--token", key["keyString"],
                 stdin=ONE % "still here")  # fmt: skip
    with serving(tmp_path, first.data_dir) as second:
        assert any("user:root of enterprise 'local': reused" in x for x in second.banner)
        assert second.ok("auth", "print-token").strip() == token
        assert [k["keyId"] for k in second.json("keys", "list")["apiKeys"]] == [key["keyId"]]
        found = second.json("agents", "memory", "query", "kept", "--text", "here",
                            "--token", key["keyString"])  # fmt: skip
        assert [r["text"] for r in found["semantic"]["results"]] == ["still here"]
    (first.data_dir / "credentials.json").unlink()
    with serving(tmp_path, first.data_dir) as third:
        assert any("new credential" in line for line in third.banner)
        fresh = third.ok("auth", "print-token").strip()
        assert fresh != token
        stale = third.jnh("auth", "whoami", "--token", token)
        assert stale.returncode == 5
        assert third.json("auth", "whoami")["principal"] == "user:root"
