"""`jnh operations list|get|wait`: memory:form operations (GET /v1/operations[/{id}]).

`jnh agents memory form --async` answers with an operation instead of the
receipt; these read it back. `wait` polls until the operation is done, then
prints the receipt as `form` does, or exits with the operation's error.
"""

from __future__ import annotations

import time
from typing import Any

import click

from jennah.cli import pages, render
from jennah.cli.client import ApiClient, ApiError, local_failure, segment
from jennah.cli.formation import FORM_TIMEOUT, RESEND_STATUSES, emit_receipt
from jennah.cli.options import ClientOptions, client_options, client_options_with
from jennah.cli.progress import waiting
from jennah.errors import DeadlineExceeded

NAME_PREFIX = "operations/"
DEFAULT_INTERVAL = 2.0  # seconds between two polls of `wait`


def operation_path(name: str) -> str:
    """/v1/operations/{id} for NAME, "operations/op_…" or "op_…"."""
    operation_id = name.strip().removeprefix(NAME_PREFIX)
    if not operation_id or "/" in operation_id:
        raise click.BadParameter(
            f"{name!r} is not an operation name (operations/op_… or op_…)", param_hint="NAME"
        )
    return f"/v1/operations/{segment(operation_id)}"


def wait_for(client: ApiClient, name: str, timeout: float, interval: float) -> dict[str, Any]:
    """Poll the operation until it is done (a spinner on a terminal); DEADLINE_EXCEEDED
    (exit 8) when it is not done within `timeout` seconds. Waiting cancels nothing."""
    path = operation_path(name)
    deadline = time.monotonic() + timeout
    with waiting(f"waiting for {name}"):
        while True:
            operation = client.get(path)
            if operation.get("done"):
                return operation
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise local_failure(_not_done(operation, timeout))
            time.sleep(min(interval, remaining))


def _not_done(operation: dict[str, Any], timeout: float) -> DeadlineExceeded:
    name = operation.get("name", "the operation")
    state = operation.get("metadata", {}).get("state", "unknown")
    return DeadlineExceeded(
        f"{name} is not done after {timeout:g} s (state {state}); it keeps running: "
        f"`jnh operations wait {name}` waits again"
    )


def receipt_of(operation: dict[str, Any]) -> dict[str, Any]:
    """The receipt of a done operation; its error raised as the server's (exit code by
    its status), naming the formationKey to resend with when resending is safe."""
    error = operation.get("error")
    if not isinstance(error, dict):
        response: dict[str, Any] = operation.get("response", {})
        return response
    status = str(error.get("status", "UNKNOWN"))
    message = str(error.get("message", ""))
    key = operation.get("metadata", {}).get("formationKey")
    if key and status in RESEND_STATUSES:
        message += f" (resend with formationKey {key})"
    raise ApiError(status, int(error.get("code", 500)), message)


def emit_operation(operation: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(operation)
        return
    if output == "name":
        render.emit_names([operation["name"]])
        return
    metadata = operation.get("metadata", {})
    error = operation.get("error")
    pairs: list[tuple[str, Any]] = [
        ("name", operation.get("name")),
        ("state", metadata.get("state")),
        ("done", "yes" if operation.get("done") else "no"),
        ("agentInstanceId", metadata.get("agentInstanceId")),
        ("caller", metadata.get("caller")),
        ("formationKey", metadata.get("formationKey")),
        ("attempts", metadata.get("attempts")),
        ("createTime", metadata.get("createTime")),
        ("updateTime", metadata.get("updateTime")),
        ("expireTime", metadata.get("expireTime")),
    ]
    if isinstance(error, dict):
        pairs.append(("error", f"{error.get('status')}: {error.get('message')}"))
    render.emit_pairs(pairs)
    if "response" in operation:
        click.echo()
        emit_receipt(operation["response"], output, metadata.get("formationKey"))


@click.group(
    "operations",
    short_help="memory:form operations: list, get, wait.",
    help="""memory:form operations. `jnh agents memory form --async` answers at once
    with an operation (operations/op_…) instead of waiting for the receipt; read
    it here. NAME is the operation's name, with or without "operations/".
    Operations are kept for 7 days.

    \b
    Examples:
      jnh agents memory form support-bot --from-file turns.json --async
      jnh operations list
      jnh operations get operations/op_0123456789abcdef0123456789abcdef
      jnh operations wait op_0123456789abcdef0123456789abcdef
    """,
)
def operations() -> None:
    """The `operations` group."""


LIST_COLUMNS = ["name", "state", "agentInstanceId", "caller", "createTime", "updateTime"]


@operations.command(
    "list",
    short_help="List the operations of the agent workspaces you reach, newest first.",
    help="""List the memory:form operations of the agent workspaces you reach, newest
    first (GET /v1/operations), every page of them; --page-size or --page-token asks
    for one page. Needs agent.memory:form. -o json prints the operations as the API
    answers them (each with its receipt or error once done).

    \b
    Examples:
      jnh operations list
      jnh operations list --page-size 20 -o name
    """,
)
@pages.page_options
@client_options
def list_operations(page_size: int | None, page_token: str | None, opts: ClientOptions) -> None:
    answer = pages.fetch(opts.client(), "/v1/operations", {}, "operations", page_size, page_token)
    found = answer.get("operations", [])
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([operation["name"] for operation in found])
    else:
        rows = [{"name": o["name"], **o.get("metadata", {})} for o in found]
        render.emit_section("operations", LIST_COLUMNS, rows)
    pages.note_next_page(answer, opts.output)


@operations.command(
    "get",
    short_help="Show an operation: its state, and its receipt or error once done.",
    help="""Show operation NAME (GET /v1/operations/{operationId}): its state
    (QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED), its agent workspace,
    caller, formationKey and attempts, and once done its receipt or its error.
    -o json prints the operation as the API answers it.

    \b
    Examples:
      jnh operations get operations/op_0123456789abcdef0123456789abcdef
      jnh operations get op_0123456789abcdef0123456789abcdef -o json
    """,
)
@click.argument("name", metavar="NAME")
@client_options
def get(name: str, opts: ClientOptions) -> None:
    emit_operation(opts.client().get(operation_path(name)), opts.output)


@operations.command(
    "wait",
    short_help="Wait for an operation, then print its receipt.",
    help="""Wait for operation NAME to finish, polling it every --interval seconds
    (showing the time elapsed on a terminal), then print its receipt as
    `jnh agents memory form` does (-o json: the receipt verbatim). An operation
    that failed exits with its error's status and message (see the exit codes
    of `jnh --help`); one still running after --timeout seconds exits 8, and
    keeps running: waiting cancels nothing.

    \b
    Examples:
      jnh operations wait operations/op_0123456789abcdef0123456789abcdef
      jnh operations wait op_0123456789abcdef0123456789abcdef --timeout 60 -o json
    """,
)
@click.argument("name", metavar="NAME")
@click.option(
    "--interval", type=click.FloatRange(min=0.01), default=DEFAULT_INTERVAL,
    show_default=True, metavar="SECONDS", help="Seconds between two polls.",
)  # fmt: skip
@client_options_with(FORM_TIMEOUT, "Seconds to wait for the operation (30 minutes).")
def wait(name: str, interval: float, opts: ClientOptions) -> None:
    operation = wait_for(opts.client(), name, opts.timeout, interval)
    receipt = receipt_of(operation)
    emit_receipt(receipt, opts.output, operation.get("metadata", {}).get("formationKey"))
