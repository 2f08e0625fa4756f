"""`jnh agents memory form` and `jnh agents memory step`: memory:form and the
execution-log steps it writes (agent workspaces only, like the routes)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import click

from jennah.api.dto import format_timestamp, parse_timestamp
from jennah.cli import render
from jennah.cli.client import ApiClient, ApiError, local_failure, resource_path, segment
from jennah.cli.inputs import load_document, parse_instant
from jennah.cli.options import ClientOptions, client_options, client_options_with
from jennah.cli.progress import waiting
from jennah.domain.formation import TURN_OFFSETS
from jennah.errors import InvalidArgument

FORM_TIMEOUT = 1800.0  # no formation runs longer than 30 minutes end to end
DERIVED_KEY_PREFIX = "jnh-"
# a formation that failed with these wrote nothing: resending under its key is safe
RESEND_STATUSES = frozenset({"ABORTED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "CANCELLED"})
_PREFIXES = ("MEMORY_DECISION_", "CANDIDATE_KIND_")


# the request


def form_body(
    document: dict[str, Any],
    observed_at: str | None,
    formation_key: str | None,
    no_formation_key: bool,
) -> dict[str, Any]:
    """The memory:form request: the file's body, --observed-at over its observedAt, and
    the formationKey: --formation-key, none with --no-formation-key, else the file's,
    else one derived from the request's content (`derive_formation_key`)."""
    if formation_key is not None and no_formation_key:
        raise click.UsageError("give --formation-key or --no-formation-key, not both")
    body = dict(document)
    if observed_at is not None:
        body["observedAt"] = parse_instant(observed_at, "--observed-at")
    elif isinstance(body.get("observedAt"), str):
        body["observedAt"] = _canonical_instant(body["observedAt"])
    _set_formation_key(body, formation_key, no_formation_key)
    return body


def _set_formation_key(body: dict[str, Any], given: str | None, none: bool) -> None:
    if given is not None:
        body["formationKey"] = given
    elif none:
        body.pop("formationKey", None)
    elif "formationKey" not in body:
        body["formationKey"] = derive_formation_key(body)


def derive_formation_key(body: dict[str, Any]) -> str:
    """'jnh-' and the SHA-256 of the canonical JSON of the turns and observedAt: the same
    conversation observed at the same time always gets the same key, so running the
    same command again replays the committed receipt instead of forming twice (68
    characters, within the 256 a formationKey may have)."""
    content = {"turns": body.get("turns"), "observedAt": body.get("observedAt")}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return DERIVED_KEY_PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _canonical_instant(text: str) -> str:
    """One spelling per instant (Z-normalized), so the derived key does not depend on how
    the file writes observedAt; a value that is not RFC 3339 is sent as it is, for the
    server to refuse."""
    try:
        return format_timestamp(parse_timestamp(text))
    except ValueError:
        return text


def post_formation(client: ApiClient, agent: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST memory:form, showing progress while it runs; an error after which resending
    is safe (the formation wrote nothing) says which formationKey to resend with. With
    "async" the answer is an operation (`is_operation`)."""
    key = body.get("formationKey")
    label = "queueing a formation in" if body.get("async") else "forming memory in"
    try:
        with waiting(f"{label} {agent}"):
            return client.post(resource_path("agents", agent, "form"), body)
    except ApiError as err:
        if not key or err.status not in RESEND_STATUSES:
            raise
        hint = f" (resend with formationKey {key}: the same command does)"
        raise ApiError(err.status, err.code, err.message + hint) from None


# the receipt, or the operation of --async


def is_operation(answer: dict[str, Any]) -> bool:
    """Whether memory:form answered an operation ("async": true), not a receipt."""
    return "name" in answer and "done" in answer


def emit_submitted(operation: dict[str, Any], output: str) -> None:
    """An operation just submitted: its name (-o json: the operation)."""
    if output == "json":
        render.emit_json(operation)
        return
    render.emit_names([operation["name"]])


def emit_receipt(answer: dict[str, Any], output: str, key: str | None) -> None:
    if output == "json":
        render.emit_json(answer)
        return
    candidates = answer.get("candidates", [])
    if output == "name":
        render.emit_names(c["candidateId"] for c in candidates)
        return
    render.emit_section("candidates", _RECEIPT_COLUMNS, [_candidate_row(c) for c in candidates])
    for line in summary_lines(answer, key):
        click.echo(line)


_RECEIPT_COLUMNS = ["decision", "kind", "matchedId", "text/reason"]


def _candidate_row(candidate: dict[str, Any]) -> dict[str, Any]:
    rejected = candidate.get("decision") == "MEMORY_DECISION_REJECTED"
    kind = _short(candidate.get("kind", ""))
    return {
        "decision": _short(candidate.get("decision", "")),
        "kind": kind + (" (verbatim structure)" if candidate.get("preservesStructure") else ""),
        "matchedId": candidate.get("matchedId"),
        "text/reason": candidate.get("rejectionReason") if rejected else candidate.get("text"),
    }


def _short(name: str) -> str:
    for prefix in _PREFIXES:
        name = name.removeprefix(prefix)
    return name


def summary_lines(answer: dict[str, Any], key: str | None) -> list[str]:
    """The receipt's counts under the candidate table."""
    replay = answer.get("replay", False)
    units = answer.get("formationUnits", "0")
    lines = [
        f"{units} formation units"
        + (" (the original formation's; this replay used none)" if replay else "")
        + f", supersessions: {answer.get('chunkSupersessions', '0')} chunks, "
        f"{answer.get('edgeSupersessions', '0')} edges, "
        f"execution-log rows: {answer.get('executionLogRows', '0')}, "
        f"replay: {'yes' if replay else 'no'}"
    ]
    dropped = int(answer.get("candidatesDropped", "0"))
    if dropped:
        lines.append(
            f"{dropped} candidates dropped over the cap of {answer.get('candidateCap')} "
            "per formation: split the conversation"
        )
    for item in answer.get("summarizedStructures", []):
        lines.append(
            f"turn {item['turnIndex']}: {item['description']} summarized as prose "
            "(rows may not be retrievable one by one)"
        )
    committed = answer.get("commitTimestamp")
    lines.append(f"committed {committed}" + (f", formation key {key}" if key else ""))
    return lines


# execution-log steps


def turn_offsets(step: dict[str, Any]) -> list[int]:
    """The step's `jennah.turn_offsets`: the UTF-8 byte offset at which each turn begins."""
    raw = step.get("metadata", {}).get(TURN_OFFSETS, "")
    try:
        return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise click.ClickException(
            f"step {step.get('stepId')} has unreadable {TURN_OFFSETS}: {raw!r}"
        ) from None


def slice_turn(tool_input: str, offsets: list[int], index: int) -> str:
    """Turn `index`: from offsets[index] to offsets[index + 1] (the last to the end) of
    the UTF-8 bytes of tool_input; never found by parsing turn headers."""
    if not 0 <= index < len(offsets):
        span = f"turns 0-{len(offsets) - 1}" if offsets else "no turns"
        raise local_failure(InvalidArgument(f"--turn {index} is out of range: the step has {span}"))
    data = tool_input.encode("utf-8")
    end = offsets[index + 1] if index + 1 < len(offsets) else len(data)
    return data[offsets[index] : end].decode("utf-8")


def emit_step(step: dict[str, Any], turn: int | None, output: str) -> None:
    if output == "name":
        render.emit_names([step["name"]])
        return
    text = step.get("toolInput", "")
    if turn is not None:
        text = slice_turn(text, turn_offsets(step), turn)
    if output == "json":
        shown = step if turn is None else {"name": step["name"], "turn": turn, "text": text}
        render.emit_json(shown)
        return
    click.echo(text, nl=not text.endswith("\n"))


# the commands


def form_command() -> click.Command:
    @click.command(
        "form",
        short_help="Form memory from conversation turns.",
        help="""Form memory from the turns of a conversation in agent workspace AGENT:
        extract facts and relationships, reconcile them with what the workspace
        holds, and commit the result atomically
        (POST /v1/agents/{id}/memory:form). Prints the receipt: one row per
        candidate with its decision.

        The file (JSON or YAML; '-' reads standard input) carries the request
        body: turns [{role: TURN_ROLE_USER|TURN_ROLE_ASSISTANT|TURN_ROLE_TOOL_CALL|
        TURN_ROLE_TOOL_RESULT, content}], and optionally observedAt and
        formationKey.

        Without --formation-key (and without a formationKey in the file) the key
        is derived from the request's content ("jnh-" and the SHA-256 of the
        turns and observedAt), so running the same command again after a
        committed formation replays its receipt instead of forming twice.
        --no-formation-key sends no key, to form the same conversation again on
        purpose. --observed-at sets when the conversation took place, over the
        file's observedAt; a bare date is the start of that day in your local
        time zone.

        A formation takes seconds to minutes (model calls); jnh waits up to 30
        minutes (--timeout), showing the time elapsed on a terminal. With --async it
        does not wait: it prints the name of the formation's operation
        (operations/op_…; -o json: the operation), for `jnh operations wait NAME`
        to print the receipt later (a replayed formationKey's operation is done at
        once).

        \b
        Examples:
          jnh agents memory form support-bot --from-file turns.json
          jnh agents memory form support-bot --from-file chat.yaml --observed-at 2023-05-20
          cat turns.json | jnh agents memory form support-bot --from-file - -o json
          jnh agents memory form support-bot --from-file turns.json --async
          jnh operations wait operations/op_0123456789abcdef0123456789abcdef
        """,
    )
    @click.argument("agent", metavar="AGENT")
    @click.option(
        "--from-file", "-f", "source", required=True, metavar="FILE|-",
        help="The request body, JSON or YAML; '-' for standard input.",
    )  # fmt: skip
    @click.option(
        "--formation-key", metavar="KEY",
        help="Send this formationKey (up to 256 characters) instead of the derived one.",
    )  # fmt: skip
    @click.option("--no-formation-key", is_flag=True, help="Send no formationKey at all.")
    @click.option(
        "--observed-at", metavar="TIME",
        help="When the conversation took place: RFC 3339, or a local date-time or date.",
    )  # fmt: skip
    @click.option(
        "--async", "run_async", is_flag=True,
        help="Print the operation's name at once instead of waiting for the receipt.",
    )  # fmt: skip
    @client_options_with(FORM_TIMEOUT, "Seconds to wait for the receipt (30 minutes).")
    def form(
        agent: str,
        source: str,
        formation_key: str | None,
        no_formation_key: bool,
        observed_at: str | None,
        run_async: bool,
        opts: ClientOptions,
    ) -> None:
        document = load_document(source, "--from-file")
        body = form_body(document, observed_at, formation_key, no_formation_key)
        if run_async:
            body["async"] = True
        answer = post_formation(opts.client(), agent, body)
        if is_operation(answer):
            emit_submitted(answer, opts.output)
        else:
            emit_receipt(answer, opts.output, body.get("formationKey"))

    return form


def step_command() -> click.Command:
    @click.command(
        "step",
        short_help="Print an execution-log step, or one of its turns.",
        help="""Print execution-log step STEP_ID of agent workspace AGENT: the rendered
        turns of the formation that wrote it
        (GET /v1/agents/{id}/memory/steps/{stepId}). Formed facts name their
        step in the metadata key jennah.source_step and their turns in
        jennah.source_turns.

        --turn N prints turn N alone (numbered from 0), sliced at the byte offsets
        the step records in jennah.turn_offsets, never by parsing the turn
        headers. -o json prints the step as the API answers (with --turn: name,
        turn and text).

        \b
        Examples:
          jnh agents memory step support-bot frm_0123456789abcdef0123456789abcdef
          jnh agents memory step support-bot frm_0123456789abcdef0123456789abcdef --turn 2
        """,
    )
    @click.argument("agent", metavar="AGENT")
    @click.argument("step_id", metavar="STEP_ID")
    @click.option("--turn", type=int, default=None, metavar="N", help="Print turn N only.")
    @client_options
    def step(agent: str, step_id: str, turn: int | None, opts: ClientOptions) -> None:
        path = f"/v1/agents/{segment(agent)}/memory/steps/{segment(step_id)}"
        emit_step(opts.client().get(path), turn, opts.output)

    return step
