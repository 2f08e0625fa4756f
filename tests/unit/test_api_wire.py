"""Wire-format details: RFC 3339 timestamps, proto3 integers, logging, lazy wiring."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from jennah import bootstrap
from jennah.api import dto, logs
from jennah.api.errors import field_path
from jennah.settings import Settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T09:00:00Z", datetime(2024, 5, 1, 9, tzinfo=UTC)),
        ("2024-05-01t09:00:00z", datetime(2024, 5, 1, 9, tzinfo=UTC)),
        ("2024-05-01T18:00:00+09:00", datetime(2024, 5, 1, 9, tzinfo=UTC)),
        ("2024-05-01T09:00:00.123456789Z", datetime(2024, 5, 1, 9, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_rfc3339_timestamps_parse_to_utc(text: str, expected: datetime) -> None:
    parsed = dto.parse_timestamp(text)
    assert parsed == expected and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text", ["2024-05-01", "2024-05-01T09:00:00", "2024-05-01 09:00:00Z", "2024-02-30T00:00:00Z"]
)
def test_anything_but_rfc3339_with_a_zone_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        dto.parse_timestamp(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2024, 5, 1, 9, tzinfo=UTC), "2024-05-01T09:00:00Z"),
        (datetime(2024, 5, 1, 9, 0, 0, 120000, tzinfo=UTC), "2024-05-01T09:00:00.120Z"),
        (datetime(2024, 5, 1, 9, 0, 0, 5, tzinfo=UTC), "2024-05-01T09:00:00.000005Z"),
        (datetime(2024, 5, 1, 18, tzinfo=timezone(timedelta(hours=9))), "2024-05-01T09:00:00Z"),
    ],
)
def test_timestamps_print_z_normalized(value: datetime, text: str) -> None:
    assert dto.format_timestamp(value) == text


@pytest.mark.parametrize("year", [1, 99, 999])
def test_a_year_below_1000_prints_in_four_digits_and_reads_back(year: int) -> None:
    value = datetime(year, 3, 4, 5, 6, 7, tzinfo=UTC)
    text = dto.format_timestamp(value)
    assert text == f"{year:04d}-03-04T05:06:07Z"
    assert dto.parse_timestamp(text) == value


def test_timestamps_print_as_strftime_printed_them() -> None:
    def reference(value: datetime) -> str:  # strftime, as it was formatted before
        value = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
        micros = value.microsecond
        fraction = f".{micros:06d}" if micros % 1000 else f".{micros // 1000:03d}"
        fraction = "" if micros == 0 else fraction
        return value.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"

    rng = random.Random(15)
    zones = [UTC, None, timezone(timedelta(hours=9)), timezone(timedelta(hours=-5, minutes=-30))]
    for _ in range(2000):
        value = datetime(
            rng.choice([1000, 1970, 2024, 9998]), rng.randint(1, 12), rng.randint(1, 28),
            rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
            rng.choice([0, 120000, 999000, 5, rng.randint(0, 999_999)]), tzinfo=rng.choice(zones),
        )  # fmt: skip
        assert dto.format_timestamp(value) == reference(value), value


def test_int32_accepts_numbers_and_decimal_strings_only() -> None:
    assert dto.SemanticQuery.model_validate({"queryText": "x", "topK": "7"}).top_k == 7
    assert dto.SemanticQuery.model_validate({"queryText": "x", "topK": 7.0}).top_k == 7
    for bad in (True, 7.5, "7.5", 2**31, [7]):
        with pytest.raises(ValidationError):
            dto.SemanticQuery.model_validate({"queryText": "x", "topK": bad})


def test_responses_omit_absent_optional_fields_and_print_int64_as_strings() -> None:
    body = dto.dump(dto.CommitResponse(commit_timestamp=datetime(2024, 1, 1, tzinfo=UTC),
                                       chunks_written=3))  # fmt: skip
    assert body["chunksWritten"] == "3" and body["commitTimestamp"] == "2024-01-01T00:00:00Z"
    node = dto.dump(dto.Node(node_id="n", label="N"))
    assert node == {"nodeId": "n", "label": "N", "properties": {}}


def test_field_paths_are_written_as_on_the_wire() -> None:
    assert field_path(("chunks", 0, "metadata", "k")) == "chunks[0].metadata.k"
    assert field_path(("semantic", "filters", 2, "operator")) == "semantic.filters[2].operator"
    assert field_path(()) == ""


def test_trace_ids_come_from_the_cloud_trace_header() -> None:
    assert logs.trace_from_header("abc/1;o=1", "p") == "projects/p/traces/abc"
    assert logs.trace_from_header("abc", "p") == "projects/p/traces/abc"
    assert logs.trace_from_header(None, "p") is None
    assert logs.trace_from_header("", "p") is None


def test_the_container_builds_nothing_until_asked(tmp_path: Path) -> None:
    container = bootstrap.Container(Settings(data_dir=tmp_path / "d", embedder="hashing"))
    assert not (tmp_path / "d").exists()
    assert container.embedder.model_name == "hashing-bow-384"
    assert container.embedder is container.embedder
    assert not (tmp_path / "d").exists()


def test_the_embedder_setting_picks_the_adapter() -> None:
    minilm = bootstrap.build_embedder(Settings(embedder="minilm"))
    assert minilm.model_name == "all-MiniLM-L6-v2"  # constructed, not loaded
