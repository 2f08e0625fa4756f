"""OKF files: render and parse one claim, its evidence, the graph lines, the index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from jennah.domain import okf
from jennah.domain.models import (
    Authority,
    Durability,
    Evidence,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)

SCOPE = ScopeRef(enterprise_id="ent-1", scope_id="fam-1")
FORMED = datetime(2026, 8, 14, 19, 2, tzinfo=UTC)


def full_claim(**changes: object) -> MemoryRecord:
    """A claim with every field set away from its default."""
    values: dict[str, object] = dict(
        id="01K6N1R0A0B0C0D0E0F0G0H010",
        scope=SCOPE,
        key="soccer-rule",
        revision=3,
        text="Always show the draft and wait for a yes.\n\nThis applies to replies as well.",
        summary="Ask before sending anything to the soccer team group chat.",
        about="Soccer team group chat",
        when_to_use="Any request to message the soccer group chat",
        type=MemoryType.DIRECTIVE,
        metadata={"source": "chat", "lang": "en"},
        strength=Strength.HARD,
        pin=True,
        authority=Authority.USER_EXPLICIT,
        confidence=0.85,
        sensitivity=Sensitivity.MINORS,
        valid_at=datetime(2026, 8, 1, tzinfo=UTC),
        invalid_at=datetime(2026, 11, 1, 8, 30, 0, 123456, tzinfo=UTC),
        valid_until=datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
        created_at=FORMED,
        retired_at=datetime(2027, 1, 2, tzinfo=UTC),
        status=Status.SUPERSEDED,
        supersedes="chk_old",
        superseded_by="chk_new",
        durability=Durability.PASSING,
        reinforcement_count=3,
        last_reinforced_at=datetime(2026, 10, 2, 23, 40, tzinfo=UTC),
        applies_to=["ent-002", "ent-003"],
        related=["chk_rel"],
        needs_enrichment=True,
        extensions={"team_color": '"blue"', "season": '{"start":"2026-09-01","games":[1,2]}'},
    )
    values.update(changes)
    return MemoryRecord.model_validate(values)


def parse(content: bytes, path: str = "claims/01K6N1R0A0B0C0D0E0F0G0H010.md") -> MemoryRecord:
    problems = okf.Problems()
    parsed = okf.parse_claim(path, content, SCOPE, problems)
    assert problems.found == []
    assert parsed is not None
    return parsed.record


def faults(content: bytes, path: str = "claims/c1.md") -> list[okf.Problem]:
    problems = okf.Problems()
    assert okf.parse_claim(path, content, SCOPE, problems) is None
    return problems.found


def test_a_claim_renders_the_designs_front_matter_then_its_body() -> None:
    text = okf.render_claim(full_claim()).decode()
    assert text.startswith("---\nid: 01K6N1R0A0B0C0D0E0F0G0H010\ntype: directive\n")
    assert "\nformed_at: 2026-08-14T19:02:00Z\n" in text
    assert "\nvalid_until: 2026-12-31T23:00:00Z\n" in text
    assert "\njennah_invalid_at: 2026-11-01T08:30:00.123456Z\n" in text
    assert "\napplies_to:\n- ent-002\n- ent-003\n" in text
    assert "\nteam_color: blue\n" in text
    assert text.endswith(
        "---\n\nAlways show the draft and wait for a yes.\n\nThis applies to replies as well.\n"
    )
    keys = [
        line.split(":")[0] for line in text.split("---\n")[1].splitlines() if line[0] not in "- "
    ]
    assert keys[: len(okf.FRONT_MATTER_KEYS)] == list(okf.FRONT_MATTER_KEYS)
    assert keys[len(okf.FRONT_MATTER_KEYS) :] == [*okf.NAMESPACED_KEYS, "season", "team_color"]


def test_every_field_survives_render_then_parse() -> None:
    claim = full_claim()
    back = parse(okf.render_claim(claim))
    assert back.extensions.pop(okf.FORMED_AT_EXTENSION) == '"2026-08-14T19:02:00Z"'
    expected = claim.model_dump(exclude={"created_at", "content_hash"})
    assert back.model_dump(exclude={"created_at", "content_hash"}) == expected
    assert okf.formed_at(parse(okf.render_claim(claim))) == FORMED


def test_render_parse_render_is_byte_identical() -> None:
    first = okf.render_claim(full_claim())
    assert okf.render_claim(parse(first)) == first


def test_a_file_with_windows_line_ends_is_read() -> None:
    record = parse(b"---\r\ntype: fact\r\n---\r\nAlice works at Acme.\r\n", "claims/c1.md")
    assert record.text == "Alice works at Acme."


def test_a_minimal_okf_file_takes_the_defaults() -> None:
    record = parse(b"---\ntype: fact\n---\nAlice works at Acme.\n", "claims/c1.md")
    assert (record.id, record.type, record.text) == ("c1", MemoryType.FACT, "Alice works at Acme.")
    assert (record.status, record.revision, record.authority) == (
        Status.ACTIVE,
        1,
        Authority.SYSTEM,
    )
    assert record.extensions == {}


def test_unknown_keys_go_to_extensions_and_come_back_out() -> None:
    content = b"---\ntype: fact\nmood: sunny\ntags: [a, b]\nwhen: 2026-01-02\n---\nText\n"
    record = parse(content, "claims/c1.md")
    assert record.extensions == {"mood": '"sunny"', "tags": '["a","b"]', "when": '"2026-01-02"'}
    again = okf.render_claim(record).decode()
    assert "\nmood: sunny\ntags:\n- a\n- b\nwhen: '2026-01-02'\n" in again


def test_text_that_looks_like_a_delimiter_or_yaml_stays_text() -> None:
    claim = full_claim(text="\n---\nid: nope\r\n---\n\n", summary="two\nlines\n---")
    back = parse(okf.render_claim(claim))
    assert (back.text, back.summary, back.id) == (claim.text, claim.summary, claim.id)


@pytest.mark.parametrize(
    ("front", "where", "says"),
    [
        ("type: fact\nconfidence: 1.5", "claims/c1.md: confidence", "out of range"),
        ("type: fact\nconfidence: high", "claims/c1.md: confidence", "number"),
        ("type: opinion", "claims/c1.md: type", "'opinion' is not one of identity"),
        ("about: x", "claims/c1.md: type", "is required"),
        ("type: fact\nstatus: deleted", "claims/c1.md: status", "not one of active"),
        ("type: fact\nstrength: medium", "claims/c1.md: strength", "not one of hard"),
        ("type: fact\nvalid_until: next week", "claims/c1.md: valid_until", "not an RFC 3339"),
        ("type: fact\nvalid_until: 2026-13-01T00:00:00Z", "claims/c1.md: valid_until", "RFC"),
        ("type: fact\nformed_at: 2026-01-01 10:00:00", "claims/c1.md: formed_at", "no time zone"),
        ("type: fact\nformed_at: 2026-01-01", "claims/c1.md: formed_at", "timestamp"),
        ("type: fact\nrevision: 0", "claims/c1.md: revision", "at least 1"),
        ("type: fact\npin: yes please", "claims/c1.md: pin", "true or false"),
        ("type: fact\nid: c2", "claims/c1.md: id", "differs from the file name"),
        ("type: fact\nrelated: [a b]", "claims/c1.md: related", "letters, digits"),
        ("type: fact\njennah_metadata: {a: 1}", "claims/c1.md: jennah_metadata", "string"),
        ("type: fact\njennah_other: 1", "claims/c1.md: jennah_other", "reserved"),
        ("type: fact\nx: [unclosed", "claims/c1.md: front matter", "not valid YAML"),
        ("- a list", "claims/c1.md: front matter", "mapping"),
    ],
)
def test_a_bad_field_is_named_with_its_file(front: str, where: str, says: str) -> None:
    found = faults(f"---\n{front}\n---\nBody\n".encode())
    assert found[0].where == where, found
    assert says in found[0].description


def test_every_fault_of_a_file_is_reported() -> None:
    found = faults(b"---\ntype: nope\nconfidence: 2\nrevision: -1\n---\n\n")
    assert [p.where for p in found] == [
        "claims/c1.md: type",
        "claims/c1.md: confidence",
        "claims/c1.md: revision",
        "claims/c1.md: body",
    ]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"type: fact\nBody\n", "must begin with a '---' line"),
        (b"---\ntype: fact\nBody\n", "no '---' line closing"),
        (b"---\ntype: fact\n---\n\xff\xfe\n", "not UTF-8"),
    ],
)
def test_a_file_without_front_matter_is_refused(content: bytes, says: str) -> None:
    found = faults(content)
    assert found[0].where == "claims/c1.md"
    assert says in found[0].description


def test_evidence_lines_round_trip_and_name_the_line_at_fault() -> None:
    lines = [
        Evidence(
            memory_id="c1", ref="conv://fam/s1#turn=1-2", quote="check with me", recorded_at=FORMED
        ),
        Evidence(
            memory_id="c1", ref="conv://fam/s2#turn=4", quote='é "quoted"', recorded_at=FORMED
        ),
    ]
    content = okf.render_evidence(lines)
    assert content.decode().splitlines()[0] == (
        '{"ref":"conv://fam/s1#turn=1-2","quote":"check with me",'
        '"recordedAt":"2026-08-14T19:02:00Z"}'
    )
    problems = okf.Problems()
    assert okf.parse_evidence("evidence/c1.jsonl", content, "c1", problems) == lines
    bad = content + b'{"ref":"r","quote":"q","recordedAt":"yesterday"}\n{"ref":1}\nnot json\n'
    assert okf.parse_evidence("evidence/c1.jsonl", bad, "c1", problems) == lines
    assert [p.where for p in problems.found] == [
        "evidence/c1.jsonl: line 3: recordedAt",
        "evidence/c1.jsonl: line 4: ref",
        "evidence/c1.jsonl: line 4: quote",
        "evidence/c1.jsonl: line 4: recordedAt",
        "evidence/c1.jsonl: line 5",
    ]


def test_graph_lines_round_trip() -> None:
    nodes = [
        GraphNode(node_id="n2", label="Bob", node_type=None),
        GraphNode(node_id="n1", label="Alice", node_type="Person", properties={"b": "2", "a": "1"}),
    ]
    edges = [
        GraphEdge(
            edge_id="e1", source="n1", relation="KNOWS", target="n2",
            valid_at=FORMED, invalid_at=datetime(2027, 1, 1, tzinfo=UTC), superseded_by="e2",
        ),
        GraphEdge(edge_id="e2", source="n1", relation="KNOWS", target="n2", supersedes="e1"),
    ]  # fmt: skip
    problems = okf.Problems()
    nodes_back = okf.parse_nodes(okf.NODES_FILE, okf.render_nodes(nodes), problems)
    edges_back = okf.parse_edges(okf.EDGES_FILE, okf.render_edges(edges), problems)
    assert problems.found == []
    assert nodes_back == sorted(nodes, key=lambda n: n.node_id)
    assert edges_back == edges
    okf.parse_edges(
        okf.EDGES_FILE, b'{"edgeId":"e","source":"a","relation":"bad name"}\n', problems
    )
    assert [p.where for p in problems.found] == [
        "graph/edges.jsonl: line 1: target",
        "graph/edges.jsonl: line 1: relation",
    ]


def test_the_index_is_readable_and_deterministic() -> None:
    claims = [
        full_claim(id="b", summary="Second [one]"),
        full_claim(id="a", type=MemoryType.FACT, status=Status.ACTIVE, summary="x" * 300),
    ]
    text = okf.render_index(claims, 4, 2, 1).decode()
    assert text == okf.render_index(list(reversed(claims)), 4, 2, 1).decode()
    assert "2 claims, 4 evidence lines, 2 graph nodes, 1 graph edges." in text
    assert "- directive: 1\n- fact: 1\n" in text
    assert "- active: 1\n- superseded: 1\n" in text
    lines = text.splitlines()
    assert lines[-2].startswith("- [a](claims/a.md) fact, active: xxx")
    assert lines[-2].endswith("…") and len(lines[-2]) < 160
    assert lines[-1] == "- [b](claims/b.md) directive, superseded: Second (one)"


def test_timestamps_are_utc_with_a_z() -> None:
    assert okf.timestamp(datetime(2026, 1, 1, 12, tzinfo=UTC)) == "2026-01-01T12:00:00Z"
    assert okf.render_evidence([]) == b""


def test_libyaml_and_pure_python_yaml_write_and_read_the_same() -> None:
    class Pure(yaml.SafeDumper):
        pass

    Pure.add_representer(datetime, okf._represent_datetime)
    Pure.add_representer(str, okf._represent_str)
    claim = full_claim(summary="two\nlines: 'quoted' \"and\" é", about="- not a list", related=[])
    front = okf._front_matter(claim)
    options: dict[str, Any] = {"sort_keys": False, "allow_unicode": True, "width": 2**31 - 1}
    pure = yaml.dump(front, Dumper=Pure, **options)
    assert yaml.dump(front, Dumper=okf._Dumper, **options) == pure

    class PureLoader(yaml.SafeLoader):
        pass

    PureLoader.yaml_implicit_resolvers = okf._Loader.yaml_implicit_resolvers
    assert yaml.load(pure, Loader=PureLoader) == yaml.load(pure, Loader=okf._Loader)
