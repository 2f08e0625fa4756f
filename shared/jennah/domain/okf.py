"""OKF files: a scope's memory as plain files people can read, diff and import back.

One export is a folder of UTF-8 files (family-memory-design.md §3, "One memory, one file"):

    index.md                  a readable index: counts by type and status, one line a claim
    claims/{memoryId}.md      one claim: YAML front matter, a blank line, then the body (text)
    evidence/{memoryId}.jsonl its evidence ledger, one {"ref","quote","recordedAt"} a line
    graph/nodes.jsonl         the scope's entity nodes, one {"nodeId",...} a line
    graph/edges.jsonl         its edges (closed ones included), one {"edgeId",...} a line
    suppressions.jsonl        its suppression rules (forgotten claims), one {"id",...} a line

The front matter holds the design's snake_case keys in the design's order (`FRONT_MATTER_KEYS`),
then the record state the design does not name but an exact restore needs, namespaced `jennah_`
(`NAMESPACED_KEYS`: key, valid_at, invalid_at, retired_at, metadata), then every `extensions`
key of the record as a top-level key of its own, by name. A key this code does not know is
kept in `extensions` on import and written back out on export; keys starting `jennah_` are
reserved. `formed_at` is the record's formation time: the store stamps `created_at` with the
commit time, so an imported claim keeps the formed_at it was imported with in its
`extensions` under `FORMED_AT_EXTENSION` and the export writes that one back.

Rendering is deterministic (fixed key order, files and lines ordered by id, no export time):
the same memory renders to the same bytes. Parsing validates every field and reports each fault
as a `Problem` naming the file and field (`claims/abc.md: confidence`). Embeddings are never
written: an import recomputes them. Values are read with YAML's safe loader only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

import yaml

from jennah.domain import rules
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
from jennah.domain.suppression import Suppression
from jennah.errors import InvalidArgument

INDEX_FILE = "index.md"
CLAIMS_DIR = "claims"
EVIDENCE_DIR = "evidence"
NODES_FILE = "graph/nodes.jsonl"
EDGES_FILE = "graph/edges.jsonl"
SUPPRESSIONS_FILE = "suppressions.jsonl"
SUPPRESSION_KEYS = ("id", "memoryId", "about", "summary", "text", "createdAt", "createdBy")

FRONT_MATTER_KEYS = (
    "id", "type", "about", "summary", "when_to_use", "applies_to", "strength", "pin",
    "authority", "confidence", "durability", "formed_at", "last_reinforced_at",
    "reinforcement_count", "valid_until", "status", "supersedes", "superseded_by", "related",
    "sensitivity", "revision", "needs_enrichment",
)  # fmt: skip
NAMESPACED_KEYS = (
    "jennah_key", "jennah_valid_at", "jennah_invalid_at", "jennah_retired_at", "jennah_metadata",
)  # fmt: skip
RESERVED_PREFIX = "jennah_"
FORMED_AT_EXTENSION = "jennah_formed_at"
MAX_EXTENSION_KEYS = 32
MAX_EXTENSION_JSON = 4_096  # characters of one extension value's JSON text
MAX_SUMMARY_LENGTH = 1_000  # of about, summary and when_to_use each
MAX_LINKS = 64  # applies_to and related each
INDEX_SUMMARY_LENGTH = 100
_DELIMITER = "---\n"
_E = TypeVar("_E", bound=StrEnum)


@dataclass(frozen=True)
class Problem:
    """One fault of an import: `where` is 'claims/abc.md: confidence'-like."""

    where: str
    description: str


@dataclass
class ParsedClaim:
    """A claim file read back: the record (no embedding, no commit times) to write."""

    record: MemoryRecord
    path: str


@dataclass
class Problems:
    """The faults found so far, every file's (an import reports them all at once)."""

    found: list[Problem] = field(default_factory=list)

    def add(self, where: str, description: str) -> None:
        self.found.append(Problem(where, description))


# -- rendering -----------------------------------------------------------------


def claim_path(memory_id: str) -> str:
    return f"{CLAIMS_DIR}/{memory_id}.md"


def evidence_path(memory_id: str) -> str:
    return f"{EVIDENCE_DIR}/{memory_id}.jsonl"


def render_claim(record: MemoryRecord) -> bytes:
    """The claim's file: front matter (design keys, `jennah_` keys, extensions) and body."""
    front = _front_matter(record)
    text = yaml.dump(front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=2**31 - 1)
    return (_DELIMITER + text + _DELIMITER + "\n" + record.text + "\n").encode("utf-8")


def formed_at(record: MemoryRecord) -> datetime | None:
    """When the claim was formed: the time it was imported with, else its commit time."""
    kept = record.extensions.get(FORMED_AT_EXTENSION)
    if kept is not None:
        return _instant(json.loads(kept))
    return record.created_at


def _front_matter(record: MemoryRecord) -> dict[str, Any]:
    front: dict[str, Any] = {
        "id": record.id,
        "type": record.type.value,
        "about": record.about,
        "summary": record.summary,
        "when_to_use": record.when_to_use,
        "applies_to": list(record.applies_to),
        "strength": record.strength.value,
        "pin": record.pin,
        "authority": record.authority.value,
        "confidence": record.confidence,
        "durability": record.durability.value,
        "formed_at": formed_at(record),
        "last_reinforced_at": record.last_reinforced_at,
        "reinforcement_count": record.reinforcement_count,
        "valid_until": record.valid_until,
        "status": record.status.value,
        "supersedes": record.supersedes,
        "superseded_by": record.superseded_by,
        "related": list(record.related),
        "sensitivity": record.sensitivity.value,
        "revision": record.revision,
        "needs_enrichment": record.needs_enrichment,
        "jennah_key": record.key,
        "jennah_valid_at": record.valid_at,
        "jennah_invalid_at": record.invalid_at,
        "jennah_retired_at": record.retired_at,
        "jennah_metadata": dict(sorted(record.metadata.items())),
    }
    for key, value in sorted(record.extensions.items()):
        if key != FORMED_AT_EXTENSION:
            front[key] = json.loads(value)
    return front


def render_evidence(lines: Sequence[Evidence]) -> bytes:
    """One claim's ledger, one JSON object a line, in the order given (the store's)."""
    return "".join(
        _json_line({"ref": e.ref, "quote": e.quote, "recordedAt": timestamp(e.recorded_at)})
        for e in lines
    ).encode("utf-8")


def render_nodes(nodes: Sequence[GraphNode]) -> bytes:
    return "".join(
        _json_line(
            {
                "nodeId": n.node_id,
                "label": n.label,
                "nodeType": n.node_type,
                "properties": dict(sorted(n.properties.items())),
            }
        )
        for n in sorted(nodes, key=lambda n: n.node_id)
    ).encode("utf-8")


def render_edges(edges: Sequence[GraphEdge]) -> bytes:
    return "".join(
        _json_line(
            {
                "edgeId": e.edge_id,
                "source": e.source,
                "relation": e.relation,
                "target": e.target,
                "properties": dict(sorted(e.properties.items())),
                "validAt": _optional_timestamp(e.valid_at),
                "invalidAt": _optional_timestamp(e.invalid_at),
                "supersedes": e.supersedes,
                "supersededBy": e.superseded_by,
            }
        )
        for e in sorted(edges, key=lambda e: e.edge_id)
    ).encode("utf-8")


def render_suppressions(rules: Sequence[Suppression]) -> bytes:
    """The scope's suppression rules by id, without their embeddings (an import embeds the
    text again, as forgetting did)."""
    return "".join(
        _json_line(
            {
                "id": r.id,
                "memoryId": r.memory_id,
                "about": r.about,
                "summary": r.summary,
                "text": r.text,
                "createdAt": _optional_timestamp(r.created_at),
                "createdBy": r.created_by,
            }
        )
        for r in sorted(rules, key=lambda r: r.id)
    ).encode("utf-8")


def render_index(
    claims: Sequence[MemoryRecord], evidence_lines: int, nodes: int, edges: int
) -> bytes:
    """A readable, deterministic index: counts, then one line per claim in id order."""
    types = Counter(c.type.value for c in claims)
    statuses = Counter(c.status.value for c in claims)
    out = [
        "# Memory export",
        "",
        f"{len(claims)} claims, {evidence_lines} evidence lines, {nodes} graph nodes, "
        f"{edges} graph edges.",
        "",
        "## Claims by type",
        "",
        *(f"- {t.value}: {types[t.value]}" for t in MemoryType if types[t.value]),
        "",
        "## Claims by status",
        "",
        *(f"- {s.value}: {statuses[s.value]}" for s in Status if statuses[s.value]),
        "",
        "## Claims",
        "",
        *(_index_line(c) for c in sorted(claims, key=lambda c: c.id)),
    ]
    return ("\n".join(out) + "\n").encode("utf-8")


def _index_line(claim: MemoryRecord) -> str:
    words = " ".join((claim.summary or claim.text).split())
    if len(words) > INDEX_SUMMARY_LENGTH:
        words = words[: INDEX_SUMMARY_LENGTH - 1] + "…"
    words = words.replace("[", "(").replace("]", ")")
    return (
        f"- [{claim.id}]({claim_path(claim.id)}) {claim.type.value}, {claim.status.value}: {words}"
    )


def timestamp(instant: datetime) -> str:
    """RFC 3339 in UTC with a Z, microseconds only when there are some."""
    text = instant.astimezone(UTC).replace(tzinfo=None).isoformat()
    return text + "Z"


def _optional_timestamp(instant: datetime | None) -> str | None:
    return None if instant is None else timestamp(instant)


def _json_line(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


# LibYAML's parser and emitter when the installed PyYAML has them (its wheels do): about
# ten times faster, and the same bytes for the values a claim holds (a unit test checks)
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Timestamps as plain RFC 3339 scalars (`2026-08-14T19:02:00Z`, as the design writes
    them); a string holding a line break double-quoted on one line, so no line of the
    front matter can read as its closing `---`."""


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", timestamp(value))


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if ("\n" in value or "\r" in value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(datetime, _represent_datetime)
_Dumper.add_representer(str, _represent_str)


class _Loader(_SafeLoader):  # type: ignore[valid-type,misc]
    """The safe loader, with timestamps left as text: each field parses its own (an invalid
    date such as 2026-13-01 is then a fault of that field, not of the whole file)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# -- parsing -------------------------------------------------------------------


def parse_claim(
    path: str, content: bytes, scope: ScopeRef, problems: Problems
) -> ParsedClaim | None:
    """Read one claim file; every fault goes to `problems` (None when there was any)."""
    before = len(problems.found)
    split = _split(path, content, problems)
    if split is None:
        return None
    front, body = split
    reader = _FieldReader(path, front, problems)
    stem = path.removeprefix(f"{CLAIMS_DIR}/").removesuffix(".md")
    memory_id = reader.text("id", default=stem)
    if memory_id != stem:
        problems.add(f"{path}: id", f"id {memory_id[:80]!r} differs from the file name {stem!r}")
    reader.identifier_check("id", memory_id)
    values: dict[str, Any] = {
        "id": memory_id,
        "type": reader.enum("type", MemoryType, None),
        "about": reader.text("about", max_length=MAX_SUMMARY_LENGTH),
        "summary": reader.text("summary", max_length=MAX_SUMMARY_LENGTH),
        "when_to_use": reader.text("when_to_use", max_length=MAX_SUMMARY_LENGTH),
        "applies_to": reader.identifiers("applies_to"),
        "strength": reader.enum("strength", Strength, Strength.SOFT),
        "pin": reader.boolean("pin"),
        "authority": reader.enum("authority", Authority, Authority.SYSTEM),
        "confidence": reader.confidence("confidence"),
        "durability": reader.enum("durability", Durability, Durability.DURABLE),
        "last_reinforced_at": reader.instant("last_reinforced_at"),
        "reinforcement_count": reader.integer("reinforcement_count", minimum=0, default=0),
        "valid_until": reader.instant("valid_until"),
        "status": reader.enum("status", Status, Status.ACTIVE),
        "supersedes": reader.identifier("supersedes"),
        "superseded_by": reader.identifier("superseded_by"),
        "related": reader.identifiers("related"),
        "sensitivity": reader.enum("sensitivity", Sensitivity, Sensitivity.NORMAL),
        "revision": reader.integer("revision", minimum=1, default=1),
        "needs_enrichment": reader.boolean("needs_enrichment"),
        "key": reader.optional_text("jennah_key"),
        "valid_at": reader.instant("jennah_valid_at"),
        "invalid_at": reader.instant("jennah_invalid_at"),
        "retired_at": reader.instant("jennah_retired_at"),
        "metadata": reader.metadata("jennah_metadata"),
        "text": _body(path, body, problems),
    }
    extensions = reader.extensions()
    formed = reader.instant("formed_at")
    if formed is not None:
        extensions[FORMED_AT_EXTENSION] = json.dumps(timestamp(formed))
    if len(problems.found) > before:
        return None
    record = MemoryRecord(
        scope=scope,
        content_hash=rules.content_hash(values["text"]),
        extensions=extensions,
        **values,
    )
    return ParsedClaim(record=record, path=path)


def _split(path: str, content: bytes, problems: Problems) -> tuple[dict[str, Any], str] | None:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return None
    if text.startswith("---\r\n"):  # a file saved with Windows line ends
        text = text.replace("\r\n", "\n")
    if not text.startswith(_DELIMITER):
        problems.add(path, "must begin with a '---' line opening its YAML front matter")
        return None
    end = text.find("\n" + _DELIMITER, len(_DELIMITER) - 1)
    if end < 0:
        problems.add(path, "has no '---' line closing its YAML front matter")
        return None
    try:
        front = yaml.load(text[len(_DELIMITER) : end + 1], Loader=_Loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        problems.add(f"{path}: front matter", f"is not valid YAML{line}: {_yaml_problem(exc)}")
        return None
    if not isinstance(front, dict):
        problems.add(f"{path}: front matter", "must be a YAML mapping of keys to values")
        return None
    return front, text[end + 1 + len(_DELIMITER) :]


def _yaml_problem(exc: yaml.YAMLError) -> str:
    return str(getattr(exc, "problem", None) or exc).splitlines()[0][:200]


def _body(path: str, body: str, problems: Problems) -> str:
    text = body.removeprefix("\n").removesuffix("\n")
    if not text.strip():
        problems.add(f"{path}: body", "the claim's body (its text) must not be empty")
    elif len(text) > rules.MAX_TEXT_LENGTH:
        problems.add(
            f"{path}: body",
            f"is {len(text)} characters; at most {rules.MAX_TEXT_LENGTH} are allowed",
        )
    return text


@dataclass
class _FieldReader:
    """Reads the front matter's keys one by one, noting each fault with its key."""

    path: str
    front: dict[Any, Any]
    problems: Problems
    seen: set[str] = field(default_factory=set)

    def _get(self, key: str) -> Any:
        self.seen.add(key)
        return self.front.get(key)

    def _bad(self, key: str, description: str) -> None:
        self.problems.add(f"{self.path}: {key}", description)

    def text(self, key: str, default: str = "", max_length: int | None = None) -> str:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self._bad(key, f"must be a string, not {_kind(value)}")
            return default
        if max_length is not None and len(value) > max_length:
            self._bad(key, f"is {len(value)} characters; at most {max_length} are allowed")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self._get(key)
        if value is not None and not isinstance(value, str):
            self._bad(key, f"must be a string or null, not {_kind(value)}")
            return None
        return value

    def identifier_check(self, key: str, value: str) -> None:
        if not rules.IDENTIFIER_PATTERN.match(value):
            self._bad(
                key,
                f"{value[:80]!r} must be 1-{rules.MAX_IDENTIFIER_LENGTH} characters of "
                "letters, digits, '_', '.', ':' and '-'",
            )

    def identifier(self, key: str) -> str | None:
        value = self.optional_text(key)
        if value is not None:
            self.identifier_check(key, value)
        return value

    def identifiers(self, key: str) -> list[str]:
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self._bad(key, "must be a list of ids (strings)")
            return []
        if len(value) > MAX_LINKS:
            self._bad(key, f"has {len(value)} ids; at most {MAX_LINKS} are allowed")
        for item in value:
            self.identifier_check(key, item)
        return list(value)

    def enum(self, key: str, kind: type[_E], default: _E | None) -> _E:
        value = self._get(key)
        allowed = ", ".join(member.value for member in kind)
        if value is None:
            if default is None:
                self._bad(key, f"is required: one of {allowed}")
                return next(iter(kind))
            return default
        try:
            return kind(value)
        except ValueError:
            self._bad(key, f"{str(value)[:80]!r} is not one of {allowed}")
            return default if default is not None else next(iter(kind))

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            self._bad(key, f"must be true or false, not {_kind(value)}")
            return False
        return value

    def integer(self, key: str, minimum: int, default: int) -> int:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self._bad(key, f"must be a whole number, not {_kind(value)}")
            return default
        if value < minimum or value > 2**53:
            self._bad(key, f"{value} is out of range: at least {minimum}")
            return default
        return value

    def confidence(self, key: str) -> float:
        value = self._get(key)
        if value is None:
            return 1.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._bad(key, f"must be a number from 0 to 1, not {_kind(value)}")
            return 1.0
        if not 0.0 <= value <= 1.0:
            self._bad(key, f"{value} is out of range: from 0 to 1")
            return 1.0
        return float(value)

    def instant(self, key: str) -> datetime | None:
        value = self._get(key)
        if value is None:
            return None
        try:
            return _instant(value)
        except ValueError as exc:
            self._bad(key, str(exc))
            return None

    def metadata(self, key: str) -> dict[str, str]:
        value = self._get(key)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self._bad(key, "must be a mapping of string keys to string values")
            return {}
        try:
            rules.validate_metadata(value, key)
        except InvalidArgument as exc:
            self._bad(key, exc.message)
        return dict(value)

    def extensions(self) -> dict[str, str]:
        """Every key not read so far, as JSON text of its value."""
        known = set(FRONT_MATTER_KEYS) | set(NAMESPACED_KEYS)
        out: dict[str, str] = {}
        for key, value in self.front.items():
            if key in known:
                continue
            if not isinstance(key, str) or not rules.METADATA_KEY_PATTERN.match(key):
                self._bad(
                    str(key)[:80], "an unknown key must be 1-64 letters, digits, '_', '.', '-'"
                )
                continue
            if key.startswith(RESERVED_PREFIX):
                self._bad(key, f"keys beginning {RESERVED_PREFIX!r} are reserved for this service")
                continue
            text = json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))
            if len(text) > MAX_EXTENSION_JSON:
                self._bad(key, f"its value is over {MAX_EXTENSION_JSON} characters as JSON")
                continue
            out[key] = text
        if len(out) > MAX_EXTENSION_KEYS:
            self._bad("front matter", f"has {len(out)} unknown keys; at most {MAX_EXTENSION_KEYS}")
        return out


def _plain(value: Any) -> Any:
    """A YAML value as JSON can hold it (the loader leaves timestamps as text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN has no JSON form
        return None
    return value


def _instant(value: Any) -> datetime:
    """A timestamp with a zone (a YAML timestamp or RFC 3339 text), in UTC."""
    example = "an RFC 3339 timestamp such as 2026-08-14T19:02:00Z"
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value[:80]!r} is not {example}") from None
    else:
        raise ValueError(f"must be {example}, not {_kind(value)}")
    if parsed.tzinfo is None:
        raise ValueError(f"{str(value)[:80]!r} has no time zone: it must be {example}")
    return parsed.astimezone(UTC)


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names |= {list: "a list", dict: "a mapping"}
    return names.get(type(value), type(value).__name__)


# -- evidence and graph lines ----------------------------------------------------


def parse_evidence(path: str, content: bytes, memory_id: str, problems: Problems) -> list[Evidence]:
    """One claim's ledger: every line a {"ref","quote","recordedAt"} object."""
    lines: list[Evidence] = []
    for where, item in _json_lines(path, content, problems, ("ref", "quote", "recordedAt")):
        ref, quote, recorded = item.get("ref"), item.get("quote"), item.get("recordedAt")
        ok = _need_string(problems, where, "ref", ref, required=True)
        ok &= _need_string(problems, where, "quote", quote, required=True)
        instant = _line_instant(problems, where, "recordedAt", recorded, required=True)
        if ok and instant is not None:
            lines.append(Evidence(memory_id=memory_id, ref=ref, quote=quote, recorded_at=instant))
    return lines


def parse_nodes(path: str, content: bytes, problems: Problems) -> list[GraphNode]:
    nodes: list[GraphNode] = []
    keys = ("nodeId", "label", "nodeType", "properties")
    for where, item in _json_lines(path, content, problems, keys):
        before = len(problems.found)
        node_id = item.get("nodeId")
        _need_identifier(problems, where, "nodeId", node_id, required=True)
        label = item.get("label") or ""
        _need_string(problems, where, "label", label, required=False)
        node_type = item.get("nodeType")
        _need_string(problems, where, "nodeType", node_type, required=False)
        properties = _properties(problems, where, item.get("properties"))
        if len(problems.found) == before:
            nodes.append(
                GraphNode(node_id=node_id, label=label, node_type=node_type, properties=properties)
            )
    return nodes


def parse_edges(path: str, content: bytes, problems: Problems) -> list[GraphEdge]:
    edges: list[GraphEdge] = []
    keys = (
        "edgeId", "source", "relation", "target", "properties", "validAt", "invalidAt",
        "supersedes", "supersededBy",
    )  # fmt: skip
    for where, item in _json_lines(path, content, problems, keys):
        before = len(problems.found)
        values: dict[str, Any] = {}
        for key in ("edgeId", "source", "target"):
            values[key] = item.get(key)
            _need_identifier(problems, where, key, values[key], required=True)
        values["relation"] = relation = item.get("relation")
        if _need_string(problems, where, "relation", relation, required=True) and not (
            rules.METADATA_KEY_PATTERN.match(str(relation))
        ):
            problems.add(
                f"{where}: relation",
                f"{str(relation)[:80]!r} must be 1-64 letters, digits, '_', '.' and '-'",
            )
        for key in ("supersedes", "supersededBy"):
            _need_identifier(problems, where, key, item.get(key), required=False)
        properties = _properties(problems, where, item.get("properties"))
        valid_at = _line_instant(problems, where, "validAt", item.get("validAt"), required=False)
        invalid_at = _line_instant(
            problems, where, "invalidAt", item.get("invalidAt"), required=False
        )
        if len(problems.found) == before:
            edges.append(
                GraphEdge(
                    edge_id=values["edgeId"],
                    source=values["source"],
                    relation=values["relation"],
                    target=values["target"],
                    properties=properties,
                    valid_at=valid_at,
                    invalid_at=invalid_at,
                    supersedes=item.get("supersedes"),
                    superseded_by=item.get("supersededBy"),
                )
            )
    return edges


def parse_suppressions(path: str, content: bytes, problems: Problems) -> list[Suppression]:
    """Suppression rules: id and memoryId identifiers, text non-empty, each id once."""
    found: dict[str, Suppression] = {}
    for where, item in _json_lines(path, content, problems, SUPPRESSION_KEYS):
        before = len(problems.found)
        rule_id, memory_id, text = (item.get(key) for key in ("id", "memoryId", "text"))
        _need_identifier(problems, where, "id", rule_id, required=True)
        _need_identifier(problems, where, "memoryId", memory_id, required=True)
        _need_string(problems, where, "text", text, required=True)
        words = {key: item.get(key) or "" for key in ("about", "summary", "createdBy")}
        for key, value in words.items():
            _need_string(problems, where, key, value, required=False)
        created = _line_instant(problems, where, "createdAt", item.get("createdAt"), required=False)
        if len(problems.found) == before and rule_id in found:
            problems.add(f"{where}: id", f"{rule_id!r} appears twice")
        if len(problems.found) == before:
            found[str(rule_id)] = Suppression(
                id=rule_id,
                memory_id=memory_id,
                about=words["about"],
                summary=words["summary"],
                text=text,
                created_at=created,
                created_by=words["createdBy"],
            )
    return list(found.values())


def _json_lines(
    path: str, content: bytes, problems: Problems, keys: Sequence[str]
) -> Iterable[tuple[str, dict[str, Any]]]:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            item = json.loads(line)
        except ValueError as exc:
            problems.add(where, f"is not a JSON object: {exc}")
            continue
        if not isinstance(item, dict):
            problems.add(where, "is not a JSON object")
            continue
        unknown = sorted(set(item) - set(keys))
        if unknown:
            problems.add(f"{where}: {unknown[0]}", f"is not a known key (known: {', '.join(keys)})")
            continue
        yield where, item


def _need_string(problems: Problems, where: str, key: str, value: Any, *, required: bool) -> bool:
    if value is None and not required:
        return True
    if not isinstance(value, str) or (required and not value):
        problems.add(
            f"{where}: {key}", "must be a non-empty string" if required else "must be a string"
        )
        return False
    return True


def _need_identifier(
    problems: Problems, where: str, key: str, value: Any, *, required: bool
) -> None:
    ok = _need_string(problems, where, key, value, required=required)
    if ok and value is not None and not rules.IDENTIFIER_PATTERN.match(value):
        problems.add(
            f"{where}: {key}",
            f"{value[:80]!r} must be 1-{rules.MAX_IDENTIFIER_LENGTH} characters of letters, "
            "digits, '_', '.', ':' and '-'",
        )


def _line_instant(
    problems: Problems, where: str, key: str, value: Any, *, required: bool
) -> datetime | None:
    if value is None:
        if required:
            problems.add(f"{where}: {key}", "is required: an RFC 3339 timestamp")
        return None
    if not isinstance(value, str):
        problems.add(f"{where}: {key}", "must be an RFC 3339 timestamp string")
        return None
    try:
        return _instant(value)
    except ValueError as exc:
        problems.add(f"{where}: {key}", str(exc))
        return None


def _properties(problems: Problems, where: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.add(f"{where}: properties", "must be an object of string values")
        return {}
    _check(problems, where, "properties", lambda: rules.validate_metadata(value, "properties"))
    return dict(value)


def _check(problems: Problems, where: str, key: str, check: Callable[[], None]) -> None:
    try:
        check()
    except InvalidArgument as exc:
        problems.add(f"{where}: {key}", exc.message)


# -- import bounds ---------------------------------------------------------------

# An import is ONE transaction (all or nothing). Cloud Spanner takes at most 80,000
# mutations in one commit, a mutation being one column of one row (secondary index
# entries included): a claim row is about 40, an evidence line 6, a node 8, an edge 14,
# a suppression rule 10, so these bounds keep the largest import near 38,000, well inside
# the limit. The Spanner
# adapter also gives a commit 30 s: the emulator on a busy 2-core machine took 19 s (and
# once more than 30 s) to commit twice these bounds, hence the margin. A bigger scope is
# refused whole with 400 IMPORT_TOO_LARGE naming the bound.
MAX_IMPORT_CLAIMS = 500
MAX_IMPORT_EVIDENCE_LINES = 1_500
MAX_IMPORT_NODES = 250
MAX_IMPORT_EDGES = 250
MAX_IMPORT_SUPPRESSIONS = 500  # a row of 10 columns each, at most one a claim
