"""One structured log line per formation, with its outcome and cost, never its content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jennah.adapters.models.scripted import ScriptedModel, Slow
from tests.integration.test_api_form import FORM, TOKYO, sqlite_api

CONTENT = ("Tokyo", "Alphaus", "dark mode")


def formation_lines(stderr: str) -> list[dict[str, object]]:
    entries = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [entry for entry in entries if "formation" in entry]


def test_a_formation_logs_one_line_with_decisions_tokens_units_and_duration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite_api(tmp_path) as api:
        receipt = api.post(FORM, {**TOKYO, "formationKey": "k-1"}).get_json()
    stderr = capsys.readouterr().err
    (line,) = formation_lines(stderr)
    assert line["severity"] == "INFO" and line["message"] == "formation succeeded"
    fields = line["formation"]
    assert isinstance(fields, dict)
    assert fields["operation"].startswith("operations/op_")
    assert fields["formationKey"] == "k-1" and fields["state"] == "SUCCEEDED"
    assert fields["units"] == int(receipt["formationUnits"])
    assert fields["inputTokens"] == int(receipt["inputTokens"])
    assert fields["outputTokens"] == int(receipt["outputTokens"])
    assert sum(fields["decisions"].values()) == len(receipt["candidates"])
    assert fields["durationSeconds"] >= 0
    for word in CONTENT:  # no conversation content, in any line
        assert word not in stderr


def test_a_failed_formation_logs_its_error_and_what_it_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedModel([Slow(5.0, {"candidates": []})])
    with sqlite_api(tmp_path, model, model_call_timeout_seconds=0.05) as api:
        assert api.post(FORM, TOKYO).status_code == 504
    (line,) = formation_lines(capsys.readouterr().err)
    assert line["severity"] == "WARNING"
    fields = line["formation"]
    assert isinstance(fields, dict)
    assert fields["state"] == "FAILED" and fields["errorCode"] == "DEADLINE_EXCEEDED"
    assert fields["modelCalls"] == 1 and fields["units"] == 1
