"""Options every API command shares, and the client they configure."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import httpx
from pydantic import ValidationError

from jennah.cli.client import ApiClient
from jennah.cli.render import OUTPUT_FORMATS
from jennah.client.credentials import resolve_token
from jennah.settings import Settings


@dataclass
class CliState:
    """Per-invocation state; tests pass a transport that reaches an in-process app."""

    transport: httpx.BaseTransport | None = None


@dataclass(frozen=True)
class ClientOptions:
    endpoint: str | None
    token: str | None
    data_dir: Path | None
    output: str
    timeout: float

    def client(self) -> ApiClient:
        settings = load_settings(self.data_dir)
        state = click.get_current_context().find_object(CliState)
        return ApiClient(
            endpoint=self.endpoint or settings.endpoint,
            token=self.credential(),
            enterprise=settings.enterprise,
            timeout=self.timeout,
            transport=state.transport if state else None,
        )

    def credential(self) -> str | None:
        """The bearer credential the client sends (see `resolve_token`)."""
        return resolve_token(self.token, load_settings(self.data_dir).data_dir)


def load_settings(data_dir: Path | None) -> Settings:
    """Settings from the environment (JENNAH_*), with --data-dir taking precedence."""
    overrides: dict[str, Any] = {} if data_dir is None else {"data_dir": data_dir}
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise click.UsageError(f"invalid JENNAH_* setting: {exc}") from None


data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The local server's data directory [default: JENNAH_DATA_DIR, else ~/.jennah].",
)

DEFAULT_TIMEOUT = 120.0


def _client_option_list(timeout: float, timeout_help: str) -> tuple[Callable[..., Any], ...]:
    return (
        click.option(
            "--endpoint",
            metavar="URL",
            help="The server [default: JENNAH_ENDPOINT, else http://127.0.0.1:8080].",
        ),
        click.option(
            "--token",
            envvar="JENNAH_TOKEN",
            metavar="TOKEN",
            help="Bearer credential [default: JENNAH_TOKEN, else the one saved by "
            "`jnh auth login`, else the local server's root credential from --data-dir].",
        ),
        data_dir_option,
        click.option(
            "-o",
            "--output",
            type=click.Choice(OUTPUT_FORMATS),
            default="table",
            show_default=True,
            help="json prints the response verbatim; name prints one id per line.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=timeout,
            show_default=True,
            help=timeout_help,
        ),
    )


def client_options_with(
    timeout: float, timeout_help: str = "Seconds to wait for the answer."
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`client_options` with another --timeout default (memory:form waits 30 minutes)."""
    options = _client_option_list(timeout, timeout_help)

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(func)
        def wrapper(
            *args: Any,
            endpoint: str | None,
            token: str | None,
            data_dir: Path | None,
            output: str,
            timeout: float,
            **kwargs: Any,
        ) -> None:
            opts = ClientOptions(endpoint, token, data_dir, output, timeout)
            func(*args, opts=opts, **kwargs)

        decorated: Callable[..., None] = wrapper
        for option in reversed(options):
            decorated = option(decorated)
        return decorated

    return decorate


def client_options(func: Callable[..., None]) -> Callable[..., None]:
    """Add --endpoint, --token, --data-dir, -o and --timeout; pass them as `opts`."""
    return client_options_with(DEFAULT_TIMEOUT)(func)
