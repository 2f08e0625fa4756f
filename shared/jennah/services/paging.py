"""Pages of a list (AIP-158): pageSize, pageToken and nextPageToken.

A list is ordered by a key (a tuple of strings: a scope id; a principal and a
role; a creation time and an id). A page token is opaque to clients: base64url
of the key the next page starts after, of the list's name, and of a digest of
what the list is bound to (the caller's enterprise and principal and the
request's filters). A token of another list, of other filters, of another
caller, or not issued here at all, is INVALID_ARGUMENT naming pageToken.

Stores answer `fetch(after, limit)`: up to `limit` items in key order, strictly
after `after`. `fill` keeps asking until the page is full of items the caller may
see (`keep`), so a page is short only when the list is exhausted; nextPageToken
is given exactly when a further item exists.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from jennah.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000

Key = tuple[str, ...]
Item = TypeVar("Item")


@dataclass(frozen=True)
class Paging:
    """What a list request asks for: pageSize (0: the default) and pageToken ("": the
    first page)."""

    size: int = 0
    token: str = ""


@dataclass(frozen=True)
class PageRequest:
    """One page asked for: its size, where it starts, and what its tokens are bound to."""

    listing: str
    binding: str  # digest of what the list is bound to
    size: int
    after: Key | None = None  # None: the first page


@dataclass(frozen=True)
class Page(Generic[Item]):
    items: list[Item]
    next_page_token: str | None = None


class _Token(BaseModel):
    listing: str
    binding: str
    after: list[str]


def page_request(
    listing: str,
    bound_to: Mapping[str, str | None],
    paging: Paging,
    key_length: int = 1,
) -> PageRequest:
    """The page a request asks for; INVALID_ARGUMENT for a negative pageSize or a token
    that is not one of this list's, with these filters, for this caller.

    `bound_to` names what the list depends on (enterprise, principal, filters); a
    pageSize of 0 means DEFAULT_PAGE_SIZE, one above MAX_PAGE_SIZE is MAX_PAGE_SIZE;
    the list's keys have `key_length` parts."""
    if paging.size < 0:
        raise InvalidArgument(f"pageSize must not be negative; got {paging.size}", field="pageSize")
    size = min(paging.size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    binding = _digest(listing, bound_to)
    request = PageRequest(listing=listing, binding=binding, size=size)
    if not paging.token:
        return request
    token = _decode(paging.token)
    if len(token.after) != key_length:
        raise not_issued()
    if (token.listing, token.binding) != (listing, binding):
        raise InvalidArgument(
            "pageToken was issued for another list, other filters or another caller; "
            "repeat the first page's parameters, or start again without pageToken",
            field="pageToken",
        )
    return PageRequest(listing=listing, binding=binding, size=size, after=tuple(token.after))


def fill(
    request: PageRequest,
    fetch: Callable[[Key | None, int], list[Item]],
    key: Callable[[Item], Key],
    keep: Callable[[Item], bool] = lambda item: True,
) -> Page[Item]:
    """The page: items `keep` accepts, in key order, after the request's key."""
    kept: list[Item] = []
    after, batch_size = request.after, request.size + 1
    while len(kept) <= request.size:
        batch = fetch(after, batch_size)
        kept.extend(item for item in batch if keep(item))
        if len(batch) < batch_size:
            break
        after = key(batch[-1])
    items = kept[: request.size]
    if len(kept) <= request.size:
        return Page(items)
    return Page(items, _encode(_Token(listing=request.listing, binding=request.binding,
                                      after=list(key(items[-1])))))  # fmt: skip


def _digest(listing: str, bound_to: Mapping[str, str | None]) -> str:
    text = json.dumps([listing, sorted(bound_to.items())], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _encode(token: _Token) -> str:
    raw = token.model_dump_json().encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(text: str) -> _Token:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return _Token.model_validate(json.loads(raw))
    except (binascii.Error, ValueError, ValidationError):
        raise not_issued() from None


def not_issued() -> InvalidArgument:
    """The refusal of a page token this service did not issue (or cannot read back)."""
    return InvalidArgument(
        "pageToken is not a token this service issued; pass the nextPageToken of the "
        "previous page as it was given",
        field="pageToken",
    )
