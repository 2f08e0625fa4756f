"""Request bodies at the edge, for every route: bounded, read whole, parsed strictly.

A body is refused with 413 when its Content-Length, or what a chunked body has sent so
far, passes MAX_BODY_BYTES, before more of it is read; with 400 when it ends before its
Content-Length. Its JSON is counted before it is parsed (MAX_JSON_VALUES array elements
and object members: parsing a body of a million tiny values would cost seconds and
hundreds of MiB before any bound is checked), parsed strictly (no NaN, no nesting past
the parser's depth, no unpaired UTF-16 surrogate in any string), then validated against
the route's request model, whose lists carry their bounds (`max_length`) so a long list
is refused at its first item past the bound.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import ClientDisconnected

from jennah.api.errors import field_path, from_validation_error, payload_too_large
from jennah.errors import InvalidArgument

MAX_BODY_BYTES = 10 * 1024 * 1024  # 10 MiB, the request size Google's APIs commonly take
MAX_JSON_VALUES = 100_000  # a full commit of 500 items with 16 metadata keys each has ~20,000
_READ_SIZE = 64 * 1024
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_body(stream: IO[bytes], content_length: int | None) -> bytes:
    """The whole body, or a refusal: 413 past MAX_BODY_BYTES (by Content-Length before
    reading anything, else as soon as the stream passes it), 400 when the stream ends
    before Content-Length."""
    if content_length is not None and content_length > MAX_BODY_BYTES:
        raise payload_too_large(MAX_BODY_BYTES)
    pieces: list[bytes] = []
    received = 0
    try:
        while piece := stream.read(_READ_SIZE):
            received += len(piece)
            if received > MAX_BODY_BYTES:
                raise payload_too_large(MAX_BODY_BYTES)
            pieces.append(piece)
    except ClientDisconnected:
        pass  # werkzeug's stream ended before Content-Length: told apart below
    if content_length is not None and received < content_length:
        raise InvalidArgument(
            f"the request body ended after {received} of the {content_length} bytes its "
            "Content-Length announces",
            reason="TRUNCATED_BODY",
            metadata={"contentLength": str(content_length), "received": str(received)},
        )
    return b"".join(pieces)


def parse_json(raw: bytes, model: type[BaseModel]) -> BaseModel:
    """Strict proto3-JSON parsing: malformed JSON, unknown fields and bad values are refused."""
    _check_value_count(raw)
    try:
        payload = json.loads(raw or b"{}", parse_constant=_reject_constant)
    except RecursionError:
        raise InvalidArgument(
            "Invalid JSON payload: nested too deeply", reason="MALFORMED_JSON"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"Invalid JSON payload: {exc}", reason="MALFORMED_JSON") from None
    if not isinstance(payload, dict):
        raise InvalidArgument(
            "Invalid JSON payload: the body must be a JSON object", reason="MALFORMED_JSON"
        )
    if _SURROGATE_ESCAPE.search(raw):
        _reject_unpaired_surrogates(payload)
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def _check_value_count(raw: bytes) -> None:
    if count_values(raw) > MAX_JSON_VALUES:
        raise InvalidArgument(
            f"Invalid JSON payload: more than {MAX_JSON_VALUES:,} values (array elements "
            "and object members); no request takes that many",
            reason="TOO_MANY_VALUES",
            metadata={"limit": str(MAX_JSON_VALUES)},
        )


def count_values(raw: bytes) -> int:
    """About how many values the JSON holds (commas, arrays and objects outside strings),
    without parsing it: a few byte counts, and one split when strings hold commas."""
    rough = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if rough <= MAX_JSON_VALUES:
        return rough
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    strings = unescaped.count(b'"') // 2
    if strings > MAX_JSON_VALUES:
        return strings
    outside = b"".join(unescaped.split(b'"')[0::2])
    return outside.count(b",") + outside.count(b"[") + outside.count(b"{")


def _reject_unpaired_surrogates(payload: dict[str, Any]) -> None:
    """json.loads turns "\\ud800" into a str that no encoder accepts: refuse it here,
    naming the field, instead of failing when it is stored or printed."""
    pending: list[tuple[Any, tuple[int | str, ...]]] = [(payload, ())]
    while pending:
        value, loc = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    _surrogate_at(loc, key)
                pending.append((item, (*loc, key)))
        elif isinstance(value, list):
            pending.extend((item, (*loc, i)) for i, item in enumerate(value))
        elif isinstance(value, str) and _SURROGATE.search(value):
            _surrogate_at(loc)


def _surrogate_at(loc: tuple[int | str, ...], key: str | None = None) -> None:
    path = field_path(loc)
    what = "a key" if key is not None else "the value"
    where = f" at {path!r}" if path else ""
    raise InvalidArgument(
        f"Invalid value{where}: {what} holds an unpaired UTF-16 surrogate (such as "
        "\\ud800); strings must be valid Unicode",
        reason="INVALID_FIELD",
        field=path or None,
    )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")
