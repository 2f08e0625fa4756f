"""The pure rules every adapter relies on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain import rules
from jennah.domain.models import FilterOperator, MetadataFilter
from jennah.errors import FailedPrecondition, InvalidArgument

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(days=1)
T2 = T0 + timedelta(days=2)


def test_chunk_id_is_content_and_window_derived() -> None:
    assert rules.chunk_id("a", None) == rules.chunk_id("a", None)
    assert rules.chunk_id("a", None) != rules.chunk_id("b", None)
    assert rules.chunk_id("a", None) != rules.chunk_id("a", T0)
    assert rules.chunk_id("a", T0).startswith("chk_")
    assert rules.content_hash("a") == rules.content_hash("a") != rules.content_hash("b")


def test_edge_id_distinguishes_every_part() -> None:
    base = rules.edge_id("a", "knows", "b", None)
    assert base.startswith("edg_")
    assert base != rules.edge_id("b", "knows", "a", None)
    assert base != rules.edge_id("a", "likes", "b", None)
    assert base != rules.edge_id("a", "knows", "b", T0)


@pytest.mark.parametrize(
    ("valid_at", "invalid_at", "retired_at", "instant", "expected"),
    [
        (None, None, None, T0, True),
        (T1, None, None, T0, False),  # not yet valid
        (T1, None, None, T1, True),  # valid from its start, inclusive
        (None, T1, None, T1, False),  # closed at its end, exclusive
        (None, T1, None, T0, True),
        (T0, T2, None, T1, True),
        (None, None, T0, T1, False),  # retired rows are never valid
    ],
)
def test_is_valid_at(
    valid_at: datetime | None,
    invalid_at: datetime | None,
    retired_at: datetime | None,
    instant: datetime,
    expected: bool,
) -> None:
    assert rules.is_valid_at(valid_at, invalid_at, retired_at, instant) is expected


def test_metadata_key_count_bound_names_the_field() -> None:
    ok = {f"k{i}": "v" for i in range(rules.MAX_METADATA_KEYS)}
    rules.validate_metadata(ok, "chunks[0].metadata")
    too_many = {**ok, "extra": "v"}
    with pytest.raises(InvalidArgument, match=r"chunks\[0\]\.metadata has 17 keys; at most 16"):
        rules.validate_metadata(too_many, "chunks[0].metadata")


@pytest.mark.parametrize("key", ["", "has space", "quote'", "a" * 65, "ünï", "x/y", "$.a"])
def test_metadata_key_charset_and_length(key: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        rules.validate_metadata({key: "v"}, "m")
    assert err.value.metadata["field"].startswith("m.")


def test_metadata_accepts_platform_style_keys_and_bounds_values() -> None:
    rules.validate_metadata({"jennah.source_step": "frm_1", "dia-id_2": "x"}, "m")
    rules.validate_metadata({"k": "v" * rules.MAX_METADATA_VALUE_LENGTH}, "m")
    with pytest.raises(InvalidArgument, match="1025 characters"):
        rules.validate_metadata({"k": "v" * (rules.MAX_METADATA_VALUE_LENGTH + 1)}, "m")


def test_identifier_rules() -> None:
    rules.validate_identifier("bot.support-1:eu_2", "nodeId")
    for bad in ["", "a b", "a/b", "a" * 129]:
        with pytest.raises(InvalidArgument, match="nodeId"):
            rules.validate_identifier(bad, "nodeId")


def test_filter_semantics() -> None:
    meta = {"team": "core", "tier": "gold"}
    eq = MetadataFilter(key="team", values=["core"])
    assert rules.matches_filter(meta, eq)
    assert not rules.matches_filter({}, eq)
    ne = MetadataFilter(key="team", operator=FilterOperator.NOT_EQUALS, values=["core"])
    assert not rules.matches_filter(meta, ne)
    assert rules.matches_filter({}, ne)  # absent counts as not equal
    assert rules.matches_filter({"team": "web"}, ne)
    inn = MetadataFilter(key="tier", operator=FilterOperator.IN, values=["silver", "gold"])
    assert rules.matches_filter(meta, inn)
    assert not rules.matches_filter({"tier": "bronze"}, inn)


def test_supersession_applies_to_open_row_and_is_idempotent() -> None:
    assert rules.check_supersession("c", T0, None, None, T1, "n")
    assert not rules.check_supersession("c", T0, T1, "n", T1, "n")


def test_supersession_refuses_a_row_closed_otherwise() -> None:
    with pytest.raises(FailedPrecondition) as err:
        rules.check_supersession("c", T0, T1, "n", T2, "other")
    assert err.value.reason == "ALREADY_SUPERSEDED"


def test_supersession_refuses_an_empty_window() -> None:
    with pytest.raises(FailedPrecondition) as err:
        rules.check_supersession("c", T1, None, None, T1, "n")
    assert err.value.reason == "SUPERSESSION_BEFORE_VALID_AT"
    assert rules.check_supersession("c", None, None, None, T0, "n")  # unbounded past closes anytime
