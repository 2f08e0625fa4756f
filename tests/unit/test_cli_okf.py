"""`jnh … memory export|import DIR` and `jnh agents memory backfill AGENT DIR`, in-process."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from jennah.cli import okf as cli_okf
from jennah.cli.okf import LEDGER_NAME, read_folder
from jennah.cli.progress import Bar
from tests.unit.test_cli_memory import Jnh, jnh, seeded  # noqa: F401 (fixtures)


def _conversation(folder: Path, name: str, observed_at: str, said: str) -> None:
    body = {"observedAt": observed_at, "turns": [{"role": "TURN_ROLE_USER", "content": said}]}
    (folder / name).write_text(json.dumps(body))


@pytest.fixture
def conversations(tmp_path: Path) -> Path:
    """Three conversations whose file names are not in time order."""
    folder = tmp_path / "past"
    folder.mkdir()
    _conversation(folder, "a.json", "2024-03-01T10:00:00Z", "I work at Globex.")
    _conversation(folder, "b.json", "2024-01-01T10:00:00Z", "I live in Lisbon.")
    (folder / "c.yaml").write_text(
        "observedAt: 2024-02-01T10:00:00+01:00\nturns:\n"
        "  - {role: TURN_ROLE_USER, content: I have a cat named Tom.}\n"
    )
    (folder / "notes.txt").write_text("not a conversation")
    return folder


class Counting(httpx.WSGITransport):
    """Counts the requests per path."""

    def __init__(self, app: Any) -> None:
        super().__init__(app=app)
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


def forms(transport: Counting) -> int:
    return sum(1 for path in transport.paths if path.endswith("/memory:form"))


# export / import


def test_export_then_import_then_export_writes_the_same_files(
    seeded: Jnh,  # noqa: F811
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert "wrote 5 files (2 claims)" in seeded.ok("agents", "memory", "export", "bot", str(first))
    assert {path.partition("/")[0] for path in read_folder(first)} == {
        "claims",
        "graph",
        "index.md",
    }
    (first / ".git").mkdir()
    (first / ".git" / "HEAD").write_text("ref")  # hidden: neither imported nor replaced
    answer = seeded.json("scopes", "memory", "import", "copy", str(first))
    assert answer["claimsImported"] == "2" and answer["edgesImported"] == "1"
    seeded.ok("scopes", "memory", "export", "copy", str(second))
    assert read_folder(second) == read_folder(first)
    (first / "claims" / "stale.md").write_text("left by an older export")
    seeded.ok("agents", "memory", "export", "bot", str(first), "--overwrite")
    assert read_folder(first) == read_folder(second)
    assert (first / ".git" / "HEAD").read_text() == "ref"


def test_export_into_a_folder_with_files_needs_overwrite(
    seeded: Jnh,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("x")
    result = seeded("agents", "memory", "export", "bot", str(tmp_path / "full"))
    assert result.exit_code == 2
    assert "--overwrite" in result.stderr


def test_a_bad_import_lists_every_fault_and_exits_3(
    seeded: Jnh,  # noqa: F811
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bad"
    (folder / "claims").mkdir(parents=True)
    (folder / "claims" / "a.md").write_text("---\ntype: fact\nconfidence: 7\n---\nA\n")
    (folder / "claims" / "b.md").write_text("---\ntype: fact\nvalid_until: soon\n---\nB\n")
    result = seeded("scopes", "memory", "import", "fresh", str(folder))
    assert result.exit_code == 3
    assert "\n  claims/a.md: confidence: 7 is out of range" in result.stderr
    assert "\n  claims/b.md: valid_until: 'soon' is not an RFC 3339" in result.stderr


# backfill


def test_backfill_forms_in_time_order_and_reports_each_conversation(
    jnh: Jnh,  # noqa: F811
    conversations: Path,
) -> None:
    report = jnh.json("agents", "memory", "backfill", "bot", str(conversations))
    rows = report["conversations"]
    assert [r["file"] for r in rows] == ["b.json", "c.yaml", "a.json"]
    assert [r["status"] for r in rows] == ["formed"] * 3
    assert rows[0]["new"] >= 1 and rows[2]["new"] >= 1, rows  # the rules model's facts
    assert report["lifecyclePass"].startswith('done: {"expired":0'), report["lifecyclePass"]
    ledger = (conversations / LEDGER_NAME).read_text().splitlines()
    assert [json.loads(line)["file"] for line in ledger] == ["b.json", "c.yaml", "a.json"]
    table = jnh.ok("agents", "memory", "backfill", "bot", str(conversations))
    assert "3 conversations (0 sent this run)" in table
    assert "lifecycle pass: done" in table


def test_a_stopped_backfill_continues_and_never_forms_twice(
    jnh: Jnh,  # noqa: F811
    conversations: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = Counting(jnh.api.app)
    jnh.transport = counting
    real = cli_okf.post_formation
    calls: list[str] = []

    def killed_after_one(*args: Any) -> Any:
        calls.append("form")
        if len(calls) == 2:
            raise KeyboardInterrupt  # the run is stopped during the second conversation
        return real(*args)

    monkeypatch.setattr(cli_okf, "post_formation", killed_after_one)
    stopped = jnh("agents", "memory", "backfill", "bot", str(conversations))
    assert stopped.exit_code != 0
    assert forms(counting) == 1
    assert len((conversations / LEDGER_NAME).read_text().splitlines()) == 1
    monkeypatch.setattr(cli_okf, "post_formation", real)
    report = jnh.json("agents", "memory", "backfill", "bot", str(conversations))
    assert forms(counting) == 3  # only the two left were sent
    assert [r["status"] for r in report["conversations"]] == ["done before", "formed", "formed"]
    # killed after a commit but before its ledger line: the formationKey replays it
    plans = len(jnh.api.store.plans)
    (conversations / LEDGER_NAME).unlink()
    again = jnh.json("agents", "memory", "backfill", "bot", str(conversations), "--no-dream")
    assert [r["status"] for r in again["conversations"]] == ["replayed"] * 3
    assert len(jnh.api.store.plans) == plans  # nothing formed twice
    assert again["lifecyclePass"] == "skipped (--no-dream)"


def test_a_conversation_without_observed_at_is_refused_before_anything_is_sent(
    jnh: Jnh,  # noqa: F811
    conversations: Path,
) -> None:
    (conversations / "d.json").write_text(json.dumps({"turns": []}))
    result = jnh("agents", "memory", "backfill", "bot", str(conversations))
    assert result.exit_code == 2
    assert "d.json needs an observedAt" in result.stderr
    assert not (conversations / LEDGER_NAME).exists()


def test_the_lifecycle_pass_runs_when_the_server_has_it(
    jnh: Jnh,  # noqa: F811
    conversations: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    posted: list[str] = []

    class Dreaming(httpx.WSGITransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/memory:dream"):
                posted.append(request.url.path)
                return httpx.Response(200, json={"claimsChanged": "0"})
            return super().handle_request(request)

    jnh.transport = Dreaming(app=jnh.api.app)
    report = jnh.json("agents", "memory", "backfill", "bot", str(conversations))
    assert posted == ["/v1/agents/bot/memory:dream"]
    assert report["lifecyclePass"] == 'done: {"claimsChanged":"0"}'


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_on_a_terminal_only() -> None:
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = Bar(4, stream)
        bar.show(1, "b.json")
        bar.close()
    assert "[#######-----------------------] 1/4 b.json" in terminal.getvalue()
    assert pipe.getvalue() == ""
