"""`jnh agents memory form --async` and `jnh operations get|wait`, against the in-process
API on SQLite (its in-process worker pool runs the formations)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import httpx
import pytest

from jennah.adapters.models.scripted import ScriptedModel, Slow
from jennah.auth import LocalCredentials, credentials_path
from jennah.cli import operations
from jennah.cli.operations import operation_path
from jennah.ports.model import LanguageModel
from tests.integration.test_api_form import TOKYO, _extraction, sqlite_api
from tests.integration.test_cli_form import TOKYO_YAML, Jnh
from tests.unit.fakes import TOKEN

NAME = re.compile(r"operations/op_[0-9a-f]{32}")
ONE_FACT = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))


@contextlib.contextmanager
def jnh_on(tmp_path: Path, model: LanguageModel | None = None, **settings: Any) -> Iterator[Jnh]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    with sqlite_api(tmp_path / "server", model, **settings) as api:
        yield Jnh(api, data_dir, httpx.WSGITransport(app=api.app))


@pytest.fixture
def jnh(tmp_path: Path) -> Iterator[Jnh]:
    with jnh_on(tmp_path) as runner:
        yield runner


@pytest.fixture
def chat(tmp_path: Path) -> str:
    path = tmp_path / "chat.yaml"
    path.write_text(TOKYO_YAML)
    return str(path)


def submit(jnh: Jnh, *args: str, stdin: str | None = None) -> str:
    result = jnh.ok("agents", "memory", "form", "support-bot", *args, "--async", stdin=stdin)
    name = result.stdout.strip()
    assert NAME.fullmatch(name), result.stdout
    return name


# form --async


def test_form_async_prints_the_operation_name(jnh: Jnh, chat: str) -> None:
    name = submit(jnh, "-f", chat)
    receipt = jnh.ok("operations", "wait", name, "--interval", "0.01")
    assert "replay: no" in receipt.stdout and "lives in Tokyo" in receipt.stdout


def test_form_async_json_prints_the_operation(jnh: Jnh, chat: str) -> None:
    result = jnh.ok("agents", "memory", "form", "support-bot", "-f", chat, "--async", "-o", "json")
    operation = json.loads(result.stdout)
    assert NAME.fullmatch(operation["name"]) and isinstance(operation["done"], bool)
    assert operation["metadata"]["agentInstanceId"] == "support-bot"
    assert operation["metadata"]["formationKey"].startswith("jnh-")  # the derived key


def test_form_async_of_a_committed_key_is_an_operation_done_with_the_replay(
    jnh: Jnh, chat: str
) -> None:
    jnh.ok("operations", "wait", submit(jnh, "-f", chat), "--interval", "0.01")
    again = jnh.ok("agents", "memory", "form", "support-bot", "-f", chat, "--async")
    name = again.stdout.strip()
    assert name.startswith("operations/op_")
    done = jnh.ok("operations", "wait", name, "--interval", "0.01")
    assert "replay: yes" in done.stdout and "lives in Tokyo" in done.stdout


# get


def test_get_shows_the_operation_by_either_name(jnh: Jnh, chat: str) -> None:
    name = submit(jnh, "-f", chat)
    jnh.ok("operations", "wait", name, "--interval", "0.01")
    table = jnh.ok("operations", "get", name).stdout
    assert re.search(r"^STATE\s+SUCCEEDED$", table, re.M)
    assert re.search(r"^DONE\s+yes$", table, re.M)
    assert re.search(r"^AGENT_INSTANCE_ID\s+support-bot$", table, re.M)
    assert re.search(r"^ATTEMPTS\s+1$", table, re.M)
    assert "lives in Tokyo" in table and "replay: no" in table  # the receipt follows
    as_json = json.loads(jnh.ok("operations", "get", name, "-o", "json").stdout)
    bare = json.loads(jnh.ok("operations", "get", name.removeprefix("operations/"),
                             "-o", "json").stdout)  # fmt: skip
    assert as_json == bare and as_json["name"] == name and as_json["done"] is True
    assert as_json["response"]["candidates"]
    assert jnh.ok("operations", "get", name, "-o", "name").stdout == name + "\n"


def test_get_of_an_unknown_operation_exits_4(jnh: Jnh) -> None:
    result = jnh("operations", "get", "op_" + "0" * 32)
    assert result.exit_code == 4
    assert "NOT_FOUND" in result.stderr and "was not found" in result.stderr


def test_a_name_that_is_no_operation_is_a_usage_error() -> None:
    assert operation_path("operations/op_1") == operation_path("op_1") == "/v1/operations/op_1"
    for bad in ("", "operations/", "agents/x/op_1"):
        with pytest.raises(click.BadParameter):
            operation_path(bad)


# wait


def test_wait_prints_the_receipt_as_form_does(jnh: Jnh, chat: str) -> None:
    name = submit(jnh, "-f", chat)
    waited = json.loads(jnh.ok("operations", "wait", name, "--interval", "0.01", "-o", "json")
                        .stdout)  # fmt: skip
    replayed = json.loads(jnh.ok("agents", "memory", "form", "support-bot", "-f", chat,
                                 "-o", "json").stdout)  # fmt: skip
    assert replayed["replay"] is True and waited == replayed | {"replay": False}
    table = jnh.ok("operations", "wait", name).stdout  # done already: no poll interval
    assert table.splitlines()[0].split() == ["DECISION", "KIND", "MATCHED_ID", "TEXT/REASON"]
    assert "formation key jnh-" in table.splitlines()[-1]
    names = jnh.ok("operations", "wait", name, "-o", "name").stdout.split()
    assert names and all(n.startswith(("fct_", "rel_")) for n in names)


def test_wait_on_a_failed_operation_exits_with_its_error(tmp_path: Path) -> None:
    model = ScriptedModel([Slow(5.0, ONE_FACT)])
    with jnh_on(tmp_path, model, model_call_timeout_seconds=0.05) as jnh:
        name = submit(jnh, "-f", "-", "--formation-key", "k-1", stdin=json.dumps(TOKYO))
        result = jnh("operations", "wait", name, "--interval", "0.01")
        assert result.exit_code == 8 and result.stdout == ""
        assert result.stderr.splitlines()[-1] == (  # the in-process server logs before it
            "jnh: DEADLINE_EXCEEDED: the model call exceeded its 0.05 s bound "
            "(resend with formationKey k-1)"
        )
        table = jnh.ok("operations", "get", name).stdout
        assert re.search(r"^STATE\s+FAILED$", table, re.M)
        assert "DEADLINE_EXCEEDED: the model call exceeded its 0.05 s bound" in table


def test_wait_gives_up_after_its_timeout_and_cancels_nothing(tmp_path: Path) -> None:
    release = threading.Event()

    def held(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return ONE_FACT

    with jnh_on(tmp_path, ScriptedModel([held])) as jnh:
        name = submit(jnh, "-f", "-", stdin=json.dumps(TOKYO))
        result = jnh("operations", "wait", name, "--interval", "0.01", "--timeout", "0.2")
        assert result.exit_code == 8
        assert f"{name} is not done after 0.2 s" in result.stderr
        assert f"jnh operations wait {name}" in result.stderr
        release.set()
        done = jnh.ok("operations", "wait", name, "--interval", "0.01")
        assert "lives in Tokyo" in done.stdout


def test_wait_shows_progress_while_it_polls(
    jnh: Jnh, chat: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels: list[str] = []

    @contextlib.contextmanager
    def waiting(label: str) -> Iterator[None]:
        labels.append(label)
        yield

    monkeypatch.setattr(operations, "waiting", waiting)
    name = submit(jnh, "-f", chat)
    jnh.ok("operations", "wait", name, "--interval", "0.01")
    assert labels == [f"waiting for {name}"]


def test_help_texts_carry_examples(jnh: Jnh) -> None:
    for command in (("operations",), ("operations", "get"), ("operations", "wait")):
        assert "Examples:" in jnh.ok(*command, "--help").stdout
    form_help = jnh.ok("agents", "memory", "form", "--help").stdout
    assert "--async" in form_help and "jnh operations wait" in form_help
