"""Lists page by page: `jnh … list` follows nextPageToken and prints every item, or,
with --page-size or --page-token, asks for that one page and says how to ask for
the next."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from jennah.cli.client import ApiClient

FOLLOW_PAGE_SIZE = 1000  # the largest page the API gives: fewest round trips


def page_options(func: Callable[..., None]) -> Callable[..., None]:
    """Add --page-size and --page-token; pass them as `page_size` and `page_token`."""
    func = click.option(
        "--page-token", metavar="TOKEN", default=None,
        help="Ask for the page this nextPageToken names (one page only).",
    )(func)  # fmt: skip
    return click.option(
        "--page-size", type=click.IntRange(min=1), metavar="N", default=None,
        help="Ask for one page of at most N items (the server gives at most 1000) "
        "[default: every page].",
    )(func)  # fmt: skip


def fetch(
    client: ApiClient,
    path: str,
    params: dict[str, str],
    items: str,
    page_size: int | None,
    page_token: str | None,
) -> dict[str, Any]:
    """The answer to print: every page's `items` in one answer (nextPageToken
    followed), or the one page --page-size or --page-token asks for, as sent."""
    if page_size is not None or page_token is not None:
        asked = dict(params)
        if page_size is not None:
            asked["pageSize"] = str(page_size)
        if page_token is not None:
            asked["pageToken"] = page_token
        return client.get(path, asked)
    found: list[Any] = []
    token = ""
    while True:
        asked = {**params, "pageSize": str(FOLLOW_PAGE_SIZE)}
        if token:
            asked["pageToken"] = token
        answer = client.get(path, asked)
        found.extend(answer.get(items, []))
        token = str(answer.get("nextPageToken", ""))
        if not token:
            return {items: found}


def note_next_page(answer: dict[str, Any], output: str) -> None:
    """After one page in a table or names, say how to ask for the next (on stderr)."""
    token = answer.get("nextPageToken")
    if token and output != "json":
        click.echo(f"more: --page-token {token}", err=True)
