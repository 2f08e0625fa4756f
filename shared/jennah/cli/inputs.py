"""Reading what the user typed or pointed at: request files, filters, instants."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import yaml

from jennah.api.dto import format_timestamp

_FILTER = re.compile(r"^(?P<key>[^=!:]+)(?P<op>!=|:in=|=)(?P<value>.*)$", re.DOTALL)
FILTER_HELP = (
    "KEY=VALUE (OPERATOR_EQUALS), KEY!=VALUE (OPERATOR_NOT_EQUALS) or "
    "KEY:in=A,B (OPERATOR_IN); repeat for several filters, all of which must match"
)


class _StringTimestampLoader(yaml.SafeLoader):
    """YAML without implicit timestamps: `validAt: 2024-05-01T09:00:00Z` stays a string."""


_StringTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_document(source: str, option: str) -> dict[str, Any]:
    """A JSON or YAML mapping from a file, or from standard input when `source` is '-'."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {source}: {exc.strerror}", param_hint=option
        ) from None
    return parse_document(text, source, option)


def parse_document(text: str, source: str, option: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = yaml.load(text, Loader=_StringTimestampLoader)
        except yaml.YAMLError as exc:
            raise click.BadParameter(
                f"{source} is neither JSON nor YAML: {exc}", param_hint=option
            ) from None
    if not isinstance(document, dict):
        raise click.BadParameter(f"{source} must hold a JSON or YAML object", param_hint=option)
    return document


def parse_filter(text: str) -> dict[str, Any]:
    """'k=v', 'k!=v' or 'k:in=a,b' as a wire filter."""
    found = _FILTER.match(text)
    if found is None or not found["key"].strip():
        raise click.BadParameter(f"{text!r}: write {FILTER_HELP}", param_hint="--filter")
    key, op, value = found["key"].strip(), found["op"], found["value"]
    if op == ":in=":
        return {"key": key, "values": value.split(","), "operator": "OPERATOR_IN"}
    operator = "OPERATOR_NOT_EQUALS" if op == "!=" else "OPERATOR_EQUALS"
    return {"key": key, "value": value, "operator": operator}


def parse_instant(text: str, option: str) -> str:
    """An instant as RFC 3339 UTC; a date-time without zone, or a bare date (the start
    of that day), is read in the local time zone."""
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a time: give RFC 3339 (2024-05-01T09:00:00Z), a local "
            "date-time (2024-05-01T09:00) or a date (2024-05-01, the start of that local day)",
            param_hint=option,
        ) from None
    return format_timestamp(instant if instant.tzinfo is not None else instant.astimezone())
