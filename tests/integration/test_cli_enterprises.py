"""`jnh enterprises create`: an enterprise's first credential, straight in the stores.

Integration: a local-administration command on the SQLite stores of a data directory."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from jennah.bootstrap import Container
from jennah.cli.main import cli
from jennah.domain.billing import Plan
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
        billing = container.usage.get_billing("acme")
        assert billing.plan is Plan.PRO and billing.billable
    finally:
        container.close()


def test_an_existing_enterprise_is_refused_and_keeps_its_plan(tmp_path: Path) -> None:
    assert run(tmp_path, "acme", "--root", "user:alice", "--plan", "TEAM")[0] == 0
    code, out, err = run(tmp_path, "acme", "--root", "user:mallory", "--plan", "FREE")
    assert code != 0 and "ALREADY_EXISTS" in err and out == ""
    container = Container(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert container.usage.get_billing("acme").plan is Plan.TEAM
        assert container.identity.get_user("user:mallory") is None
    finally:
        container.close()


def test_the_root_must_be_a_user(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "acme", "--root", "api_key:k1")
    assert code == 2 and "user:<id>" in err
