"""Printing API answers: `-o json` (the response verbatim), `-o table`, `-o name` (ids).

Tables name their columns after the wire fields in UPPER_SNAKE_CASE, except
`nodeType`, which is shown as CLASS. A node listing shows CLASS only when at
least one node in it carries a class; `--fields nodeType` selects it always.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

OUTPUT_FORMATS = ("table", "json", "name")
MAX_CELL = 72

CHUNK_FIELDS = (
    "id", "text", "metadata", "validAt", "invalidAt", "createdAt", "score", "supersedes",
    "supersededBy",
    # the claim fields
    "type", "about", "summary", "whenToUse", "appliesTo", "strength", "pin", "authority",
    "confidence", "durability", "formedAt", "lastReinforcedAt", "reinforcementCount",
    "validUntil", "status", "related", "sensitivity", "revision", "needsEnrichment",
    "extensions",
)  # fmt: skip
NODE_FIELDS = ("nodeId", "label", "nodeType", "properties", "depth")
EDGE_FIELDS = (
    "edgeId", "source", "relation", "target", "properties", "validAt", "invalidAt",
    "supersedes", "supersededBy",
)  # fmt: skip
ALL_FIELDS = tuple(dict.fromkeys(CHUNK_FIELDS + NODE_FIELDS + EDGE_FIELDS))
_HEADERS = {"nodeType": "CLASS", "id": "ID"}


def header(field: str) -> str:
    return _HEADERS.get(field) or re.sub(r"(?<!^)([A-Z])", r"_\1", field).upper()


def cell(value: Any, field: str = "") -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """Left-aligned columns separated by two spaces, headed by the column names."""
    grid = [[header(c) for c in columns]]
    grid += [[cell(row.get(c), c) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)) for line in grid]
    return "\n".join(line.rstrip() for line in lines)


def pick_columns(
    defaults: Sequence[str], available: Sequence[str], fields: Sequence[str]
) -> list[str]:
    """`fields` that this listing has (its key column first), else the defaults."""
    chosen = [f for f in fields if f in available]
    if not chosen:
        return list(defaults)
    key = available[0]
    return [key, *[f for f in chosen if f != key]]


def node_columns(
    nodes: Sequence[Mapping[str, Any]], fields: Sequence[str], depth: bool
) -> list[str]:
    defaults = ["nodeId", "label"]
    if any(n.get("nodeType") for n in nodes):
        defaults.append("nodeType")
    if depth:
        defaults.append("depth")
    return pick_columns(defaults, NODE_FIELDS, fields)


def emit_json(body: Mapping[str, Any]) -> None:
    click.echo(json.dumps(body, indent=2, ensure_ascii=False))


def emit_names(names: Iterable[str]) -> None:
    for name in names:
        click.echo(name)


def emit_section(title: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """One titled table, or a line saying there is nothing to show."""
    if not rows:
        click.echo(f"No {title}.")
        return
    click.echo(table(columns, rows))


def emit_pairs(pairs: Sequence[tuple[str, Any]], full: Sequence[str] = ()) -> None:
    """A vertical KEY  VALUE listing; a list value takes one line per item. Values of
    the keys in `full` (credentials) are printed whole, never shortened."""
    width = max(len(header(k)) for k, _ in pairs)
    for key, value in pairs:
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items or ["-"]):
            label = header(key) if i == 0 else ""
            text = str(item) if key in full and item else cell(item)
            click.echo(f"{label.ljust(width)}  {text}".rstrip())
