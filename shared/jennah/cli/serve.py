"""`jnh serve`: every function's routes in one local process."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any
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
MCP_PATH = "/mcp"
CONSOLE_PATH = "/console"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
FORMATION_MODELS = ("rules", "vertex", "local")


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
    memory:form uses from --model, else JENNAH_FORMATION_MODEL, else local:
    Qwen2.5-Coder-1.5B in this process, on the CPU, installed by scripts/bootstrap
    (without its packages jnh serve says so and uses rules); rules, offline and
    deterministic; or vertex, Gemini on Vertex AI with JENNAH_VERTEX_PROJECT. Formations
    run as operations on a pool of JENNAH_LOCAL_FORM_WORKERS threads (4), as the
    form-worker function runs them in production; one at a time does its own work, the
    others wait meanwhile on their model or for their turn, and requests are served
    before formations where both wait (the file's write lock, the embedding model).
    The local enterprise is on the
    Enterprise plan. --host and --port default to those of JENNAH_ENDPOINT
    (http://127.0.0.1:8080).

    It serves the memory console, the pages to see, correct and forget memory in a
    browser, at /console/ (sign in with the token `jnh auth print-token` prints, or an
    API key).

    It also serves the MCP tools over streamable HTTP (stateless, JSON answers) at
    /mcp/agents/AGENT, /mcp/scopes/SCOPE and /mcp/scopes/SCOPE/shared (household
    mode), with the caller's bearer credential (see `jnh mcp`).

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
    "--model",
    type=click.Choice(FORMATION_MODELS),
    default=None,
    help="The formation model [default: JENNAH_FORMATION_MODEL, else local].",
)
@click.option(
    "--no-preload",
    is_flag=True,
    help="Load the embedding and formation models on first use instead.",
)
def serve(
    host: str | None, port: int | None, data_dir: Path | None, model: str | None, no_preload: bool
) -> None:
    from jennah.api.app import create_app  # the server's imports stay off other commands
    from jennah.api.server import make_server
    from jennah.bootstrap import Container
    from jennah.services.formation.recovery import recover

    settings, fallback = formation_model(load_settings(data_dir), model)
    if fallback:
        from jennah.api.logs import log

        log("WARNING", fallback)
    default_host, default_port = _endpoint_address(settings.endpoint)
    container = Container(settings, defer_passes=True)  # it lives between requests
    root = ensure_local_root(container)
    if no_preload:
        _ = container.access
    else:
        container.warm()
    if settings.formation_queue == "local":  # what the last server left queued or running
        recover(container.formation, restart=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(
        with_console(with_mcp(create_app(container))),
        host or default_host,
        default_port if port is None else port,
        kind=settings.http_server,
        request_timeout=settings.request_timeout_seconds,
    )
    _print_banner(settings, host or default_host, server.port, root, fallback)
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        container.close()


def with_mcp(app: WsgiApp) -> WsgiApp:
    """`app`, with the streamable-HTTP MCP endpoint under /mcp (`jennah.mcp.endpoint`), whose
    tools call `app` in process with the caller's credentials."""
    import httpx

    from jennah.mcp.endpoint import McpEndpoint

    endpoint = McpEndpoint(
        "http://jennah.local", mount=MCP_PATH, transport=httpx.WSGITransport(app=app)
    )

    def dispatch(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        served = endpoint if path == MCP_PATH or path.startswith(MCP_PATH + "/") else app
        return served(environ, start_response)

    return dispatch


def with_console(app: WsgiApp) -> WsgiApp:
    """`app`, with the memory console's pages under /console/ (`jennah.console.site`),
    which call `app` from the browser on this same origin."""
    from jennah.console.site import ConsoleSite
    from jennah.console.site import with_console as mount

    return mount(app, ConsoleSite())


def formation_model(settings: Settings, requested: str | None) -> tuple[Settings, str | None]:
    """The settings `jnh serve` runs with: the formation model --model names, else the one
    JENNAH_FORMATION_MODEL names, else `local`; `rules` when `local` cannot run here, with
    the sentence saying why (None when nothing fell back)."""
    from jennah.bootstrap import local_model_missing

    named = "formation_model" in settings.model_fields_set
    wanted = requested or (settings.formation_model if named else "local")
    missing = local_model_missing() if wanted == "local" else None
    if missing is None:
        return settings.model_copy(update={"formation_model": wanted}), None
    fallback = (
        f"the local formation model cannot run: {missing}; formations use the rules model "
        "(run scripts/bootstrap to install the local model)"
    )
    return settings.model_copy(update={"formation_model": "rules"}), fallback


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


def _print_banner(
    settings: Settings, host: str, port: int, root: LocalRoot, fallback: str | None
) -> None:
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
    click.echo(f"  model      {_model_line(settings)}")
    if fallback:
        click.echo(f"             ({fallback})")
    click.echo(f"  console    {url}{CONSOLE_PATH}/ (sign in with the token below)")
    click.echo(f"  openapi    {url}/openapi.json")
    click.echo(f"  mcp        {url}{MCP_PATH}/agents/AGENT, {url}{MCP_PATH}/scopes/SCOPE[/shared]")
    click.echo(f"  root       {ROOT_PRINCIPAL} of enterprise "
               f"{LOCAL_ENTERPRISE_ID!r}: {_root_news(root)}")  # fmt: skip
    click.echo(f"  token      jnh auth print-token --data-dir {settings.data_dir}")
    click.echo(f"             (held in {credentials_path(settings.data_dir)}; jnh uses it")
    click.echo("             when no --token, JENNAH_TOKEN or `jnh auth login` says otherwise)")
    click.echo("Press Ctrl+C to stop.", nl=True)


def _model_line(settings: Settings) -> str:
    if settings.formation_model == "local":
        from jennah.adapters.models.local import MODEL

        return f"local ({MODEL}, in this process, on the CPU)"
    if settings.formation_model == "vertex":
        return f"vertex ({settings.vertex_model} in {settings.vertex_location})"
    return "rules (offline, deterministic)"


def _root_news(root: LocalRoot) -> str:
    if root.created_enterprise:
        return "created now"
    if root.rotated:
        return "new credential (the previous one was missing or stale)"
    return "reused"


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
