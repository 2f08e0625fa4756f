"""services.paging: page sizes, opaque tokens bound to their list, and full pages."""

from __future__ import annotations

import base64
import json

import pytest

from jennah.errors import InvalidArgument
from jennah.services.paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    Key,
    Paging,
    fill,
    page_request,
)

ITEMS = [f"s{i:03d}" for i in range(120)]
BOUND = {"enterprise": "local", "principal": "user:root", "kind": None}


def fetch(after: Key | None, limit: int) -> list[str]:
    """A store's answer: up to `limit` items in order, strictly after `after`."""
    return [item for item in ITEMS if after is None or item > after[0]][:limit]


def every_page(paging_size: int, keep: object = None) -> list[list[str]]:
    pages: list[list[str]] = []
    token = ""
    while True:
        request = page_request("scopes", BOUND, Paging(size=paging_size, token=token))
        page = fill(request, fetch, key=lambda item: (item,),
                    keep=keep if callable(keep) else (lambda item: True))  # fmt: skip
        pages.append(page.items)
        if page.next_page_token is None:
            return pages
        token = page.next_page_token


def test_pages_cover_the_list_once_in_order_and_the_last_has_no_token() -> None:
    pages = every_page(50)
    assert [len(p) for p in pages] == [50, 50, 20]
    assert [item for page in pages for item in page] == ITEMS
    assert [len(p) for p in every_page(40)] == [40, 40, 40]  # no empty page after a full one


def test_page_size_default_and_maximum() -> None:
    assert page_request("scopes", BOUND, Paging()).size == DEFAULT_PAGE_SIZE == 50
    assert page_request("scopes", BOUND, Paging(size=7)).size == 7
    assert page_request("scopes", BOUND, Paging(size=10**6)).size == MAX_PAGE_SIZE == 1000
    with pytest.raises(InvalidArgument) as refused:
        page_request("scopes", BOUND, Paging(size=-1))
    assert refused.value.metadata["field"] == "pageSize"


def test_a_page_is_full_of_items_the_caller_may_see() -> None:
    kept = [item for item in ITEMS if item.endswith("7")]  # 12 of 120, spread out
    pages = every_page(5, keep=lambda item: item.endswith("7"))
    assert [len(p) for p in pages] == [5, 5, 2]
    assert [item for page in pages for item in page] == kept


def _first_token() -> str:
    page = fill(page_request("scopes", BOUND, Paging(size=10)), fetch, key=lambda i: (i,))
    assert page.next_page_token is not None
    return page.next_page_token


@pytest.mark.parametrize(
    ("listing", "bound_to"),
    [
        ("apiKeys", BOUND),  # another list
        ("scopes", {**BOUND, "kind": "AGENT"}),  # other filters
        ("scopes", {**BOUND, "principal": "user:ana"}),  # another caller
        ("scopes", {**BOUND, "enterprise": "acme"}),  # another enterprise
    ],
)
def test_a_foreign_token_is_refused_naming_page_token(
    listing: str, bound_to: dict[str, str | None]
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        page_request(listing, bound_to, Paging(size=10, token=_first_token()))
    assert refused.value.metadata["field"] == "pageToken"
    assert "another list" in refused.value.message


def _forged(**fields: object) -> str:
    raw = json.dumps(fields).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "garbage!",
        "e30",  # {}
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _forged(listing="scopes", binding="x", after="s001"),  # not a list
        _forged(listing="scopes", binding="x", after=["a", "b"]),  # a key of another shape
    ],
)
def test_a_token_not_issued_here_is_refused_naming_page_token(token: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        page_request("scopes", BOUND, Paging(token=token))
    assert refused.value.metadata["field"] == "pageToken"
    assert refused.value.status == "INVALID_ARGUMENT"


def test_tokens_are_opaque_strings_the_same_request_accepts() -> None:
    token = _first_token()
    assert token.isascii() and "=" not in token and "/" not in token and "+" not in token
    request = page_request("scopes", BOUND, Paging(size=10, token=token))
    assert request.after == ("s009",)
