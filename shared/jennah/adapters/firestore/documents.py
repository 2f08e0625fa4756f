"""Document ids and fields: how domain models are written as Firestore documents.

Fields are the model's fields in camelCase; enums are stored as their values,
timestamps as Firestore timestamps (microsecond precision, UTC), read back as
plain UTC datetimes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.alias_generators import to_camel, to_snake

from jennah.errors import InvalidArgument

MAX_ID_BYTES = 1500  # Firestore's limit on one document id
_RESERVED_ID = re.compile(r"__.*__", re.DOTALL)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_Model = TypeVar("_Model", bound=BaseModel)


def document_id(value: str, field: str) -> str:
    """The document id standing for `value`, one-to-one (decode with urllib's `unquote`).

    Firestore refuses '/' in an id, the ids '.' and '..', and ids matching
    `__.*__`. '%' and '/' are percent-encoded; so is the first character of an
    id that would be refused otherwise. Principals keep their ':' and '@'.
    """
    if not value:
        raise InvalidArgument(f"{field} must not be empty", field=field)
    encoded = value.replace("%", "%25").replace("/", "%2F")
    if encoded in (".", "..") or _RESERVED_ID.fullmatch(encoded):
        encoded = f"%{ord(encoded[0]):02X}{encoded[1:]}"
    if len(encoded.encode("utf-8")) > MAX_ID_BYTES:
        raise InvalidArgument(
            f"{field} must be at most {MAX_ID_BYTES} bytes once encoded as a document id",
            field=field,
        )
    return encoded


def to_fields(model: BaseModel) -> dict[str, Any]:
    """The document fields of a model."""
    return {
        to_camel(name): value.value if isinstance(value, Enum) else value
        for name, value in model.model_dump().items()
    }


def from_fields(model_type: type[_Model], fields: dict[str, Any]) -> _Model:
    """The model a document's fields describe."""
    return model_type.model_validate(
        {to_snake(name): _plain(value) for name, value in fields.items()}
    )


def _plain(value: Any) -> Any:
    """A plain datetime for the client's DatetimeWithNanoseconds (exact, UTC)."""
    if isinstance(value, datetime):
        return _EPOCH + (value - _EPOCH)
    return value
