"""Paged lists (AIP-158): iterate a Pager for every item of every page, or its `pages`
for each answer as sent (nextPageToken followed until the last page)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

Item = TypeVar("Item")
Page = TypeVar("Page", bound=BaseModel)


class Pager(Generic[Page, Item]):
    """Asks `fetch(page_token)` for one page at a time, lazily, from `page_token`."""

    def __init__(self, fetch: Callable[[str], Page], items: str, page_token: str = "") -> None:
        self._fetch = fetch
        self._items = items
        self._first_token = page_token

    @property
    def pages(self) -> Iterator[Page]:
        token = self._first_token
        while True:
            page = self._fetch(token)
            yield page
            token = getattr(page, "next_page_token", None) or ""
            if not token:
                return

    def __iter__(self) -> Iterator[Item]:
        for page in self.pages:
            found: list[Any] = getattr(page, self._items) or []
            yield from found
