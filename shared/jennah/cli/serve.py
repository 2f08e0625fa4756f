"""`jnh serve`: every function's routes in one local process."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from jennah.auth import (
    LocalCredentials,
    credentials_path,
    read_local_credentials,
    write_local_credentials,
)
from jennah.cli.options import data_dir_option, load_settings
from jennah.domain.access import LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL
from jennah.errors import JennahError
from jennah.settings import Settings

if TYPE_CHECKING:
    from jennah.bootstrap import Container
    from jennah.services.local_enterprise import LocalRoot

DEFAULT_PORT = 8080


@click.command(
    "serve",
    short_help="Serve the whole API locally, in one process.",
    help="""Serve the Jennah Memory API locally: every function (memory, scopes,
    administration) and GET /openapi.json in one process, on a production HTTP
    server (waitress: bodies up to 10 MiB, requests received whole within
    JENNAH_REQUEST_TIMEOUT_SECONDS, 30 s, before a thread runs them).

    The first start with a data directory creates the local enterprise ("local")
    with its root user (user:root) and writes the root's credential to
    <data-dir>/credentials.json (mode 0600); later starts reuse it. jnh commands
    use it automatically and `jnh auth print-token` prints it. The store and embedder come from
    JENNAH_STORE (sqlite, the default, at <data-dir>/memory.db; or spanner) and
    JENNAH_EMBEDDER (minilm, the default; or hashing for fast tests), the model
    memory:form uses from JENNAH_FORMATION_MODEL (rules, the default: offline and
    deterministic; or vertex, Gemini on Vertex AI with JENNAH_VERTEX_PROJECT). Formations
    run as operations on a pool of JENNAH_LOCAL_FORM_WORKERS threads (4), as the
    form-worker function runs them in production. The local enterprise is on the
    Enterprise plan. --host and --port default to those of JENNAH_ENDPOINT
    (http://127.0.0.1:8080).

    \b
    Example:
      jnh serve --data-dir ~/.jennah --port 8080
    """,
)
@click.option("--host", default=None, help="Interface to listen on [default: 127.0.0.1].")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=None,
    help="Port to listen on; 0 picks a free one [default: 8080].",
)  # fmt: skip
@data_dir_option
@click.option(
    "--no-preload", is_flag=True, help="Load the embedding model on the first request instead."
)
def serve(host: str | None, port: int | None, data_dir: Path | None, no_preload: bool) -> None:
    from jennah.api.app import create_app  # the server's imports stay off other commands
    from jennah.api.server import make_server
    from jennah.bootstrap import Container
    from jennah.services.formation.recovery import recover

    settings = load_settings(data_dir)
    default_host, default_port = _endpoint_address(settings.endpoint)
    container = Container(settings)
    root = ensure_local_root(container)
    if no_preload:
        _ = container.access
    else:
        container.warm()
    if settings.formation_queue == "local":  # what the last server left queued or running
        recover(container.formation, restart=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(
        create_app(container),
        host or default_host,
        default_port if port is None else port,
        kind=settings.http_server,
        request_timeout=settings.request_timeout_seconds,
    )
    _print_banner(settings, host or default_host, server.port, root)
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        container.close()


def ensure_local_root(container: Container) -> LocalRoot:
    """Make `<data_dir>/credentials.json` hold a working root credential of the local
    enterprise (`services.local_enterprise`); the credential and what it took."""
    from jennah.services.local_enterprise import ensure_local_root as ensure

    data_dir = container.settings.data_dir
    root = ensure(
        container.identity, container.ledger, container.access, container.now(),
        _known_token(data_dir),
    )  # fmt: skip
    if root.changed:
        write_local_credentials(data_dir, LocalCredentials(token=root.token))
    return root


def _known_token(data_dir: Path) -> str | None:
    if not credentials_path(data_dir).exists():
        return None
    try:
        return read_local_credentials(data_dir).token
    except JennahError:
        return None


def _endpoint_address(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint)
    return parts.hostname or "127.0.0.1", parts.port or DEFAULT_PORT


def _print_banner(settings: Settings, host: str, port: int, root: LocalRoot) -> None:
    url = f"http://{host}:{port}"
    store = (
        f"sqlite at {settings.data_dir / 'memory.db'}"
        if settings.store == "sqlite"
        else f"spanner projects/{settings.spanner_project}/instances/"
        f"{settings.spanner_instance}/databases/{settings.spanner_database}"
    )
    click.echo(f"Jennah Memory is listening on {url}")
    click.echo(f"  store      {store}")
    click.echo(f"  embedder   {settings.embedder}")
    click.echo(f"  openapi    {url}/openapi.json")
    click.echo(f"  root       {ROOT_PRINCIPAL} of enterprise "
               f"{LOCAL_ENTERPRISE_ID!r}: {_root_news(root)}")  # fmt: skip
    click.echo(f"  token      jnh auth print-token --data-dir {settings.data_dir}")
    click.echo(f"             (held in {credentials_path(settings.data_dir)}; jnh uses it")
    click.echo("             when no --token, JENNAH_TOKEN or `jnh auth login` says otherwise)")
    click.echo("Press Ctrl+C to stop.", nl=True)


def _root_news(root: LocalRoot) -> str:
    if root.created_enterprise:
        return "created now"
    if root.rotated:
        return "new credential (the previous one was missing or stale)"
    return "reused"


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
