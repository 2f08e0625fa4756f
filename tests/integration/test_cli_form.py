"""`jnh agents memory form` and `jnh agents memory step`: the request the CLI sends (derived
formationKey, --observed-at in local time), the receipt it prints, the progress it shows,
and steps sliced by their byte offsets."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
from click.testing import CliRunner, Result

from jennah.auth import LocalCredentials, credentials_path
from jennah.cli import progress
from jennah.cli.formation import (
    derive_formation_key,
    form_body,
    slice_turn,
    summary_lines,
)
from jennah.cli.main import cli
from jennah.cli.options import CliState
from jennah.domain.formation import SOURCE_STEP, Turn, TurnRole, render
from tests.integration.test_api_form import TOKYO, sqlite_api
from tests.unit.fakes import TOKEN, Api

TURNS = TOKYO["turns"]
TOKYO_YAML = """\
turns:
  - role: TURN_ROLE_USER
    content: I live in Tokyo and I work at Alphaus.
  - role: TURN_ROLE_ASSISTANT
    content: Noted. Anything else about your setup?
  - role: TURN_ROLE_USER
    content: I prefer dark mode in every tool.
observedAt: 2026-08-01T09:00:00Z
"""


# the derived formationKey


def test_the_same_content_derives_the_same_key() -> None:
    key = derive_formation_key({"turns": TURNS})
    assert key == derive_formation_key({"turns": json.loads(json.dumps(TURNS))})
    reordered = [{"content": t["content"], "role": t["role"]} for t in TURNS]
    assert derive_formation_key({"turns": reordered}) == key
    assert key.startswith("jnh-") and len(key) == 68


def test_other_content_or_another_observed_at_derives_another_key() -> None:
    key = derive_formation_key({"turns": TURNS})
    assert derive_formation_key({"turns": TURNS[:2]}) != key
    may = derive_formation_key({"turns": TURNS, "observedAt": "2023-05-20T12:17:00Z"})
    june = derive_formation_key({"turns": TURNS, "observedAt": "2023-06-20T12:17:00Z"})
    assert len({key, may, june}) == 3


def test_the_key_ignores_how_the_file_spells_the_instant() -> None:
    z = form_body({"turns": TURNS, "observedAt": "2023-05-20T12:17:00Z"}, None, None, False)
    offset = form_body({"turns": TURNS, "observedAt": "2023-05-20T21:17:00+09:00"}, None, None,
                       False)  # fmt: skip
    assert z["observedAt"] == offset["observedAt"] == "2023-05-20T12:17:00Z"
    assert z["formationKey"] == offset["formationKey"]


def test_the_key_flags() -> None:
    document = {"turns": TURNS, "formationKey": "from-the-file"}
    assert form_body(document, None, None, False)["formationKey"] == "from-the-file"
    assert form_body(document, None, "given", False)["formationKey"] == "given"
    assert "formationKey" not in form_body(document, None, None, True)
    assert "formationKey" not in form_body({"turns": TURNS}, None, None, True)
    with pytest.raises(click.UsageError, match="not both"):
        form_body(document, None, "given", True)
    assert document == {"turns": TURNS, "formationKey": "from-the-file"}  # not modified


# --observed-at: a bare date is the start of that day in the local time zone


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def use(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("zone", "given", "sent"),
    [
        ("Asia/Tokyo", "2023-05-20", "2023-05-19T15:00:00Z"),
        ("America/New_York", "2023-05-20", "2023-05-20T04:00:00Z"),
        ("America/New_York", "2023-01-20", "2023-01-20T05:00:00Z"),  # standard time
        ("UTC", "2023-05-20", "2023-05-20T00:00:00Z"),
        ("Asia/Tokyo", "2023-05-20T09:30", "2023-05-20T00:30:00Z"),
        ("Asia/Tokyo", "2023-05-20T09:30:00Z", "2023-05-20T09:30:00Z"),
    ],
)
def test_observed_at_in_local_time(local_zone: Any, zone: str, given: str, sent: str) -> None:
    local_zone(zone)
    document = {"turns": TURNS, "observedAt": "2020-01-01T00:00:00Z"}
    body = form_body(document, given, None, False)
    assert body["observedAt"] == sent  # the flag wins over the file
    assert body["formationKey"] == derive_formation_key({"turns": TURNS, "observedAt": sent})


def test_a_bad_observed_at_is_a_usage_error() -> None:
    with pytest.raises(click.BadParameter, match=r"--observed-at|not a time"):
        form_body({"turns": TURNS}, "last tuesday", None, False)


# step slicing: UTF-8 byte offsets, never turn headers


def test_turns_are_sliced_by_byte_offsets() -> None:
    turns = [
        Turn(role=TurnRole.USER, content="東京に住んでいます。\n[turn 1] assistant:\nnot a header"),
        Turn(role=TurnRole.ASSISTANT, content="Noted — ありがとう."),
        Turn(role=TurnRole.USER, content="🙂 last"),
    ]
    rendered = render(turns, datetime(2026, 8, 1, tzinfo=UTC))
    for index, turn in enumerate(turns):
        sliced = slice_turn(rendered.tool_input, rendered.offsets, index)
        assert sliced == rendered.turn_text(index)
        assert sliced.endswith(turn.content + "\n")
    assert "not a header" in slice_turn(rendered.tool_input, rendered.offsets, 0)


@pytest.mark.parametrize("index", [3, 99, -1])
def test_a_turn_out_of_range_exits_3(index: int) -> None:
    with pytest.raises(click.ClickException) as raised:
        slice_turn("abc", [0, 1, 2], index)
    assert raised.value.exit_code == 3
    assert f"--turn {index} is out of range: the step has turns 0-2" in raised.value.message


# the commands, against the in-process API on SQLite with the rules model


class Jnh:
    def __init__(self, api: Api, data_dir: Path, transport: httpx.BaseTransport) -> None:
        self.api, self.data_dir, self.transport = api, data_dir, transport

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        environment = {"JENNAH_DATA_DIR": str(self.data_dir), "JENNAH_TOKEN": "",
                       "XDG_CONFIG_HOME": str(self.data_dir.parent / "config")}  # fmt: skip
        return CliRunner().invoke(cli, list(args), input=stdin, env=environment,
                                  obj=CliState(transport=self.transport))  # fmt: skip

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        result = self(*args, stdin=stdin)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result


@pytest.fixture
def jnh(tmp_path: Path) -> Iterator[Jnh]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    with sqlite_api(tmp_path / "server") as api:
        yield Jnh(api, data_dir, httpx.WSGITransport(app=api.app))


@pytest.fixture
def chat(tmp_path: Path) -> str:
    path = tmp_path / "chat.yaml"
    path.write_text(TOKYO_YAML)
    return str(path)


def test_form_prints_the_receipt_as_a_table(jnh: Jnh, chat: str) -> None:
    result = jnh.ok("agents", "memory", "form", "support-bot", "--from-file", chat)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["DECISION", "KIND", "MATCHED_ID", "TEXT/REASON"]
    assert any(line.split()[:2] == ["NEW", "FACT"] and "lives in Tokyo" in line for line in lines)
    assert "replay: no" in result.stdout and "1 formation units" in result.stdout
    key = derive_formation_key({"turns": TURNS, "observedAt": "2026-08-01T09:00:00Z"})
    assert f"formation key {key}" in result.stdout
    # no progress when standard error is not a terminal (the in-process server logs there)
    assert "forming memory" not in result.stderr and "\r" not in result.stderr


def test_running_the_same_command_again_replays(jnh: Jnh, chat: str) -> None:
    first = json.loads(jnh.ok("agents", "memory", "form", "support-bot", "-f", chat,
                              "-o", "json").stdout)  # fmt: skip
    again = json.loads(jnh.ok("agents", "memory", "form", "support-bot", "-f", chat,
                              "-o", "json").stdout)  # fmt: skip
    assert (first["replay"], again["replay"]) == (False, True)
    assert again["commitTimestamp"] == first["commitTimestamp"]
    table = jnh.ok("agents", "memory", "form", "support-bot", "-f", chat).stdout
    assert "replay: yes" in table and "this replay used none" in table
    fresh = json.loads(jnh.ok("agents", "memory", "form", "support-bot", "-f", chat,
                              "--no-formation-key", "-o", "json").stdout)  # fmt: skip
    assert fresh["replay"] is False and fresh["executionLogRows"] == "0"


def test_a_new_observed_at_forms_again(jnh: Jnh, chat: str) -> None:
    jnh.ok("agents", "memory", "form", "support-bot", "-f", chat)
    moved = jnh.ok("agents", "memory", "form", "support-bot", "-f", chat, "-o", "json",
                   "--observed-at", "2026-08-02T00:00:00Z")  # fmt: skip
    assert json.loads(moved.stdout)["replay"] is False


def test_form_reads_standard_input_and_prints_names(jnh: Jnh) -> None:
    result = jnh.ok("agents", "memory", "form", "support-bot", "-f", "-", "-o", "name",
                    stdin=json.dumps(TOKYO))  # fmt: skip
    names = result.stdout.split()
    assert names and all(n.startswith(("fct_", "rel_")) for n in names)


def test_a_refused_formation_exits_3(jnh: Jnh) -> None:
    body = {"turns": [{"role": "TURN_ROLE_USER", "content": "x"}] * 201}
    result = jnh("agents", "memory", "form", "support-bot", "-f", "-", stdin=json.dumps(body))
    assert result.exit_code == 3
    assert "INVALID_ARGUMENT" in result.stderr and "200 turns" in result.stderr


def test_there_is_no_scopes_memory_form(jnh: Jnh) -> None:
    result = jnh("scopes", "memory", "form", "support-bot", "-f", "-", stdin="{}")
    assert result.exit_code == 2 and "No such command 'form'" in result.stderr


def test_step_prints_the_step_or_one_turn(jnh: Jnh, chat: str) -> None:
    jnh.ok("agents", "memory", "form", "support-bot", "-f", chat)
    inspected = jnh.ok("agents", "memory", "inspect", "support-bot", "-o", "json").stdout
    step_id = json.loads(inspected)["chunks"][0]["metadata"][SOURCE_STEP]
    whole = jnh.ok("agents", "memory", "step", "support-bot", step_id).stdout
    assert whole.startswith("Conversation observed at 2026-08-01T09:00:00+00:00")
    for turn in TURNS:
        assert turn["content"] in whole
    second = jnh.ok("agents", "memory", "step", "support-bot", step_id, "--turn", "1").stdout
    assert second == "[turn 1] assistant:\nNoted. Anything else about your setup?\n"
    as_json = json.loads(jnh.ok("agents", "memory", "step", "support-bot", step_id,
                                "--turn", "2", "-o", "json").stdout)  # fmt: skip
    assert as_json == {"name": f"agents/support-bot/memory/steps/{step_id}", "turn": 2,
                       "text": "[turn 2] user:\nI prefer dark mode in every tool.\n"}  # fmt: skip
    full = json.loads(jnh.ok("agents", "memory", "step", "support-bot", step_id,
                             "-o", "json").stdout)  # fmt: skip
    assert full["toolInput"] == whole and "jennah.turn_offsets" in full["metadata"]
    name = jnh.ok("agents", "memory", "step", "support-bot", step_id, "-o", "name").stdout
    assert name == f"agents/support-bot/memory/steps/{step_id}\n"


def test_a_step_turn_out_of_range_exits_3(jnh: Jnh, chat: str) -> None:
    jnh.ok("agents", "memory", "form", "support-bot", "-f", chat)
    inspected = jnh.ok("agents", "memory", "inspect", "support-bot", "-o", "json").stdout
    step_id = json.loads(inspected)["chunks"][0]["metadata"][SOURCE_STEP]
    result = jnh("agents", "memory", "step", "support-bot", step_id, "--turn", "3")
    assert result.exit_code == 3
    assert "--turn 3 is out of range: the step has turns 0-2" in result.stderr
    missing = jnh("agents", "memory", "step", "support-bot", "frm_" + "0" * 32)
    assert missing.exit_code == 4 and "was not found" in missing.stderr


# what goes over the wire, and the client's patience


class Recorder:
    """A transport that records the request and answers with a fixed receipt."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=self.answer)


RECEIPT = {
    "commitTimestamp": "2026-08-25T08:48:01.658Z",
    "chunkSupersessions": "1", "edgeSupersessions": "1",
    "candidates": [
        {"candidateId": "fct_1", "kind": "CANDIDATE_KIND_FACT", "text": "The user lives in Osaka.",
         "decision": "MEMORY_DECISION_REVISED",
         "matchedId": "fct_29e93c79faf7786e5adb8bcb0b49d421"},
        {"candidateId": "fct_2", "kind": "CANDIDATE_KIND_FACT", "text": "Old news.",
         "decision": "MEMORY_DECISION_REJECTED", "rejectionReason": "it became valid later"},
        {"candidateId": "fct_3", "kind": "CANDIDATE_KIND_FACT", "text": "Shift rotation: |a|",
         "decision": "MEMORY_DECISION_NEW", "preservesStructure": True},
    ],
    "summarizedStructures": [{"turnIndex": 3, "description": "1 table", "summarizedCount": 1}],
    "candidatesDropped": "2", "candidateCap": 64, "executionLogRows": "1",
    "formationUnits": "2", "inputTokens": "100", "outputTokens": "9000", "replay": False,
}  # fmt: skip


def recorded(tmp_path: Path, *args: str, stdin: str) -> tuple[Result, Recorder]:
    recorder = Recorder(RECEIPT)
    environment = {"JENNAH_DATA_DIR": str(tmp_path), "JENNAH_TOKEN": "t",
                   "XDG_CONFIG_HOME": str(tmp_path / "config")}  # fmt: skip
    result = CliRunner().invoke(
        cli, ["agents", "memory", "form", "support-bot", "-f", "-", *args], input=stdin,
        env=environment, obj=CliState(transport=httpx.MockTransport(recorder)),
    )  # fmt: skip
    return result, recorder


def test_the_request_sent_and_the_default_timeout(tmp_path: Path, local_zone: Any) -> None:
    local_zone("Asia/Tokyo")
    result, recorder = recorded(tmp_path, "--observed-at", "2023-05-20",
                                stdin=json.dumps(TOKYO))  # fmt: skip
    assert result.exit_code == 0, result.output
    (request,) = recorder.requests
    assert request.url.path == "/v1/agents/support-bot/memory:form"
    sent = json.loads(request.content)
    assert sent == {"turns": TURNS, "observedAt": "2023-05-19T15:00:00Z",
                    "formationKey": derive_formation_key(sent)}  # fmt: skip
    assert request.extensions["timeout"]["read"] == 1800.0
    _, again = recorded(tmp_path, "--timeout", "5", stdin=json.dumps(TOKYO))
    assert again.requests[0].extensions["timeout"]["read"] == 5.0


def test_the_receipt_table(tmp_path: Path) -> None:
    result, _ = recorded(tmp_path, stdin=json.dumps(TOKYO))
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["REVISED", "FACT", "fct_29e93c79faf7786e5adb8bcb0b49d421",
                                "The", "user", "lives", "in", "Osaka."]  # fmt: skip
    assert lines[2].split()[:3] == ["REJECTED", "FACT", "-"]
    assert lines[2].endswith("it became valid later")
    assert "FACT (verbatim structure)" in lines[3]
    assert summary_lines(RECEIPT, None)[0] == (
        "2 formation units, supersessions: 1 chunks, 1 edges, execution-log rows: 1, replay: no"
    )
    assert "2 candidates dropped over the cap of 64" in result.stdout
    assert "turn 3: 1 table summarized as prose" in result.stdout
    assert lines[-1].startswith("committed 2026-08-25T08:48:01.658Z, formation key jnh-")


def test_json_output_is_the_answer_verbatim(tmp_path: Path) -> None:
    result, _ = recorded(tmp_path, "-o", "json", stdin=json.dumps(TOKYO))
    assert json.loads(result.stdout) == RECEIPT


# progress on a terminal


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_spins_on_a_terminal_and_clears_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "INTERVAL_SECONDS", 0.01)
    screen = Terminal()
    with progress.waiting("forming memory in bot", screen):
        time.sleep(0.05)
    shown = screen.getvalue()
    assert "forming memory in bot 0s" in shown
    assert shown.endswith("\r\x1b[K")


def test_no_progress_off_a_terminal() -> None:
    quiet = io.StringIO()
    with progress.waiting("forming", quiet):
        time.sleep(0.02)
    assert quiet.getvalue() == ""


def test_a_failure_worth_resending_names_the_key(tmp_path: Path) -> None:
    def conflict(request: httpx.Request) -> httpx.Response:
        error = {"code": 409, "status": "ABORTED", "message": "another write superseded it"}
        return httpx.Response(409, json={"error": error})

    environment = {"JENNAH_DATA_DIR": str(tmp_path), "JENNAH_TOKEN": "t"}
    result = CliRunner().invoke(
        cli, ["agents", "memory", "form", "bot", "-f", "-", "--formation-key", "k-9"],
        input=json.dumps(TOKYO), env=environment,
        obj=CliState(transport=httpx.MockTransport(conflict)),
    )  # fmt: skip
    assert result.exit_code == 6
    assert result.stderr.strip() == (
        "jnh: ABORTED: another write superseded it (resend with formationKey k-9: the same "
        "command does)"
    )
