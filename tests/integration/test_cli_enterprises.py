"""`jnh enterprises create|recover-root`: an enterprise's first credential, and a
locked-out enterprise's recovery, straight in the stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from jennah.bootstrap import Container
from jennah.cli.main import cli
from jennah.domain.access import Permission, Role, RoleBinding
from jennah.domain.billing import Plan
from jennah.errors import Unauthenticated, Unavailable
from jennah.settings import Settings


def run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["enterprises", "create", *args, "--data-dir", str(tmp_path)],
        env={"JENNAH_EMBEDDER": "hashing"},
    )  # fmt: skip
    return result.exit_code, result.stdout, result.stderr


def test_create_prints_a_working_root_credential_once_and_sets_the_plan(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "acme", "--root", "user:alice@example.com", "--plan", "PRO",
                         "--billable")  # fmt: skip
    assert code == 0, err
    token = out.strip()
    assert token.startswith("ju_") and "shown once" in err and "Pro plan" in err
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        caller = container.access.authenticate(f"Bearer {token}")
        assert (caller.enterprise_id, caller.principal) == ("acme", "user:alice@example.com")
        billing = container.ledger.get_billing("acme")
        assert billing.plan is Plan.PRO and billing.billable
    finally:
        container.close()


def test_an_existing_enterprise_is_refused_and_keeps_its_plan(tmp_path: Path) -> None:
    assert run(tmp_path, "acme", "--root", "user:alice", "--plan", "TEAM")[0] == 0
    code, out, err = run(tmp_path, "acme", "--root", "user:mallory", "--plan", "FREE")
    assert code != 0 and "ALREADY_EXISTS" in err and out == ""
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert container.ledger.get_billing("acme").plan is Plan.TEAM
        assert container.identity.find_users("user:mallory") == []
    finally:
        container.close()


def test_the_root_must_be_a_user(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "acme", "--root", "api_key:k1")
    assert code == 2 and "user:<id>" in err


def recover(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["enterprises", "recover-root", *args, "--data-dir", str(tmp_path)],
        env={"JENNAH_EMBEDDER": "hashing"},
    )  # fmt: skip
    return result.exit_code, result.stdout, result.stderr


def test_recover_root_gives_a_locked_out_enterprise_a_root_again(tmp_path: Path) -> None:
    assert run(tmp_path, "acme", "--root", "user:alice")[0] == 0
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:  # lock it out: no root binding is left
        assert container.identity.delete_binding("acme", "user:alice", Role.ROOT)
        member = RoleBinding(enterprise_id="acme", principal="user:bob", role=Role.MEMBER,
                             agent_selectors=["b.*"])  # fmt: skip
        container.identity.put_binding(member)
    finally:
        container.close()
    code, out, err = recover(tmp_path, "acme", "--root", "user:bob")
    assert code == 0, err
    assert "user:bob is now a root" in err and "shown once" in err
    token = out.strip()
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        caller = container.access.authenticate(f"Bearer {token}")
        assert (caller.enterprise_id, caller.principal) == ("acme", "user:bob")
        assert [b.role for b in container.identity.list_bindings("acme", "user:bob")] == [
            Role.MEMBER, Role.ROOT]  # fmt: skip
        container.access.require(caller, Permission.ROLES_MANAGE)
    finally:
        container.close()
    again = recover(tmp_path, "acme", "--root", "user:bob")
    assert again[0] == 0 and again[1].strip() != token  # a new credential; the old one stops
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        with pytest.raises(Unauthenticated):
            container.access.authenticate(f"Bearer {token}")
    finally:
        container.close()


def test_recover_root_refuses_an_unknown_enterprise_or_a_non_user(tmp_path: Path) -> None:
    code, out, err = recover(tmp_path, "ghost", "--root", "user:bob")
    assert code == 1 and "NOT_FOUND" in err and out == ""
    assert run(tmp_path, "acme", "--root", "user:alice")[0] == 0
    code, out, err = recover(tmp_path, "acme", "--root", "api_key:k1")
    assert code == 1 and "INVALID_ARGUMENT" in err and "user:<id>" in err and out == ""


def test_a_root_that_is_a_user_elsewhere_is_no_obstacle(tmp_path: Path) -> None:
    """The probe: `create acme2 --root user:root` failed (the user belonged to another
    enterprise) and left acme2 behind. A principal is a user of each enterprise now."""
    assert run(tmp_path, "local", "--root", "user:root")[0] == 0
    code, out, err = run(tmp_path, "acme2", "--root", "user:root")
    assert code == 0, err
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        caller = container.access.authenticate(f"Bearer {out.strip()}")
        assert (caller.enterprise_id, caller.principal) == ("acme2", "user:root")
    finally:
        container.close()


def test_a_create_that_fails_part_way_leaves_nothing_and_can_be_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jennah.adapters.sqlite.ledger import SqliteUsageLedger

    def unavailable(self: SqliteUsageLedger, settings: object) -> None:
        raise Unavailable("the usage ledger is unavailable")

    with monkeypatch.context() as patch:
        patch.setattr(SqliteUsageLedger, "put_billing", unavailable)
        code, out, err = run(tmp_path, "acme2", "--root", "user:root", "--plan", "TEAM")
    assert code == 1 and "UNAVAILABLE" in err and out == ""
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert container.identity.get_enterprise("acme2") is None
        assert container.identity.find_users("user:root") == []
        assert container.identity.list_bindings("acme2") == []
    finally:
        container.close()
    code, out, err = run(tmp_path, "acme2", "--root", "user:root", "--plan", "TEAM")
    assert code == 0, err
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert container.ledger.get_billing("acme2").plan is Plan.TEAM
    finally:
        container.close()


def test_a_bad_enterprise_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "acme two", "--root", "user:root")
    assert code == 1 and "INVALID_ARGUMENT" in err and out == ""
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert container.identity.find_users("user:root") == []
    finally:
        container.close()
