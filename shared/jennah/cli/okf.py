"""`jnh … memory export|import DIR` (OKF files, through memory:export and memory:import) and
`jnh agents memory backfill AGENT DIR` (past conversations through memory:form, in order)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from jennah.api.dto import parse_timestamp
from jennah.cli import render
from jennah.cli.client import ApiClient, ApiError, resource_path
from jennah.cli.formation import FORM_TIMEOUT, form_body, post_formation
from jennah.cli.inputs import parse_document
from jennah.cli.options import ClientOptions, client_options, client_options_with
from jennah.cli.progress import Bar, waiting
from jennah.domain import okf, okf_archive

_OKF_PARTS = (okf.INDEX_FILE, okf.CLAIMS_DIR, okf.EVIDENCE_DIR, "graph", okf.SUPPRESSIONS_FILE)
LEDGER_NAME = ".jnh-backfill.jsonl"
CONVERSATION_SUFFIXES = (".json", ".yaml", ".yml")
DECISIONS = ("new", "revised", "known", "rejected")


# export and import


def export_command(collection: str, metavar: str, noun: str) -> click.Command:
    @click.command(
        "export",
        short_help="Write the memory as OKF files into a folder.",
        help=f"""Write all the memory of {noun} {metavar} into folder DIR as OKF files
        (GET /v1/{collection}/{{id}}/memory:export): index.md, claims/{{id}}.md (YAML
        front matter and the claim's text, every claim whatever its status),
        evidence/{{id}}.jsonl, graph/nodes.jsonl, graph/edges.jsonl and
        suppressions.jsonl (the forgotten facts' rules, so they stay forgotten). The same
        memory always writes the same bytes, so two exports diff cleanly.

        DIR is created; when it already holds files, --overwrite replaces the
        export's files (index.md, claims/, evidence/, graph/, suppressions.jsonl) and
        leaves any other
        file (such as .git) alone.

        \b
        Example:
          jnh {collection} memory export {_sample(collection)} ./memory-export
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
    @click.option("--overwrite", is_flag=True, help="Replace a previous export in DIR.")
    @client_options
    def export(resource_id: str, folder: Path, overwrite: bool, opts: ClientOptions) -> None:
        _check_target(folder, overwrite)
        with waiting(f"exporting {resource_id}"):
            data = opts.client().get_bytes(resource_path(collection, resource_id, "export"))
        files = okf_archive.unpack(data)
        write_folder(folder, files)
        if opts.output == "json":
            render.emit_json({"directory": str(folder), "files": len(files)})
        else:
            claims = sum(1 for path in files if path.startswith(okf.CLAIMS_DIR + "/"))
            click.echo(f"wrote {len(files)} files ({claims} claims) to {folder}")

    return export


def import_command(collection: str, metavar: str, noun: str) -> click.Command:
    @click.command(
        "import",
        short_help="Read OKF files from a folder into an empty scope.",
        help=f"""Read the OKF files of folder DIR (as `export` writes them) into
        {noun} {metavar}, which must hold no memory yet; the first import creates it
        (POST /v1/{collection}/{{id}}/memory:import, the files sent as a .tar.gz).

        Every file is checked before anything is written, and every fault is listed,
        one a line, with its file and field (claims/abc.md: confidence); nothing is written
        unless all is good. Unknown front-matter keys are kept and exported again.
        Hidden files and folders (a name starting with '.') and symbolic links are
        left out; index.md is derived and ignored.

        \b
        Example:
          jnh {collection} memory import {_sample(collection)}-copy ./memory-export
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument(
        "folder", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path)
    )
    @client_options
    def import_(resource_id: str, folder: Path, opts: ClientOptions) -> None:
        body = okf_archive.pack(read_folder(folder))
        path = resource_path(collection, resource_id, "import")
        with waiting(f"importing into {resource_id}"):
            answer = opts.client().post_bytes(path, body, okf_archive.MEDIA_TYPE)
        if opts.output == "json":
            render.emit_json(answer)
        else:
            render.emit_pairs(list(answer.items()))

    return import_


def _check_target(folder: Path, overwrite: bool) -> None:
    if folder.exists() and any(folder.iterdir()) and not overwrite:
        raise click.BadParameter(
            f"{folder} is not empty; give --overwrite to replace a previous export there",
            param_hint="DIR",
        )


def write_folder(folder: Path, files: dict[str, bytes]) -> None:
    """The export's files under `folder`, after removing a previous export's."""
    folder.mkdir(parents=True, exist_ok=True)
    for part in _OKF_PARTS:
        old = folder / part
        if old.is_file():
            old.unlink()
        elif old.is_dir():
            for stale in sorted(old.rglob("*"), reverse=True):
                stale.unlink() if stale.is_file() else stale.rmdir()
    for relative, content in files.items():
        target = folder / okf_archive.check_path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def read_folder(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` by relative path, hidden ones and links left out."""
    files: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        files[relative.as_posix()] = path.read_bytes()
    return files


# backfill


@dataclass(frozen=True)
class Conversation:
    path: Path
    observed_at: str
    body: dict[str, Any]

    @property
    def key(self) -> str:
        return str(self.body["formationKey"])


def backfill_command() -> click.Command:
    @click.command(
        "backfill",
        short_help="Form memory from a folder of past conversations, oldest first.",
        help=f"""Send every past conversation in folder DIR through memory:form, in
        chronological order (by observedAt, then file name), so a later statement
        supersedes an earlier one; then run one lifecycle pass
        (POST /v1/agents/{{id}}/memory:dream).

        \b
        One file per conversation (*.json, *.yaml or *.yml), the body
        `jnh agents memory form` reads, with its observedAt required:
          observedAt: 2024-03-01T18:30:00Z
          turns:
            - {{role: TURN_ROLE_USER, content: "I moved to Porto."}}
            - {{role: TURN_ROLE_ASSISTANT, content: "Noted!"}}

        Each conversation is formed under a formationKey derived from its content
        (turns and observedAt; a file's own formationKey wins), and each one formed
        is recorded in a ledger, DIR/{LEDGER_NAME} (--ledger names another file): a
        stopped run continues where it left off, and a conversation is never formed
        twice (the ledger skips it; without the ledger, its key replays the receipt).
        A failed formation stops the run; run the same command again to continue.

        Shows a progress bar on a terminal, then a report: per conversation the
        counts of new, revised, known and rejected memories, and what the lifecycle
        pass at the end changed (skipped with a note when the server answers NOT_FOUND:
        no workspace was formed, or a server without memory:dream).

        \b
        Example:
          jnh agents memory backfill support-bot ./past-conversations
        """,
    )
    @click.argument("agent", metavar="AGENT")
    @click.argument(
        "folder", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path)
    )
    @click.option(
        "--ledger", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help=f"The ledger file (default: DIR/{LEDGER_NAME}).",
    )  # fmt: skip
    @click.option("--no-dream", is_flag=True, help="Skip the lifecycle pass at the end.")
    @client_options_with(FORM_TIMEOUT, "Seconds to wait for each formation (30 minutes).")
    def backfill(
        agent: str, folder: Path, ledger: Path | None, no_dream: bool, opts: ClientOptions
    ) -> None:
        conversations = read_conversations(folder)
        ledger_path = ledger or folder / LEDGER_NAME
        done = read_ledger(ledger_path)
        client = opts.client()
        rows = run_backfill(client, agent, conversations, done, ledger_path)
        dream = "skipped (--no-dream)" if no_dream else lifecycle_pass(client, agent)
        emit_report(rows, dream, opts.output)

    return backfill


def read_conversations(folder: Path) -> list[Conversation]:
    """The folder's conversations, oldest first; a usage error names a file without a
    readable observedAt."""
    found: list[tuple[Any, str, Conversation]] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.suffix not in CONVERSATION_SUFFIXES:
            continue
        document = parse_document(path.read_text(encoding="utf-8"), str(path), "DIR")
        observed = document.get("observedAt")
        try:
            instant = parse_timestamp(observed) if isinstance(observed, str) else None
        except ValueError:
            instant = None
        if instant is None:
            raise click.BadParameter(
                f"{path.name} needs an observedAt (RFC 3339) to be placed in time",
                param_hint="DIR",
            )
        body = form_body(document, None, None, False)
        found.append((instant, path.name, Conversation(path, body["observedAt"], body)))
    found.sort(key=lambda item: (item[0], item[1]))
    return [conversation for _, _, conversation in found]


def read_ledger(path: Path) -> dict[str, dict[str, Any]]:
    """The finished conversations by formationKey; a torn last line (a run killed while
    writing it) is ignored."""
    if not path.exists():
        return {}
    done: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("formationKey"), str):
            done[entry["formationKey"]] = entry
    return done


def run_backfill(
    client: ApiClient,
    agent: str,
    conversations: list[Conversation],
    done: dict[str, dict[str, Any]],
    ledger: Path,
) -> list[dict[str, Any]]:
    """Form each conversation not in the ledger, in order, appending each to the ledger
    as soon as it is committed; the report's rows."""
    bar = Bar(len(conversations))
    rows: list[dict[str, Any]] = []
    try:
        for index, conversation in enumerate(conversations):
            bar.show(index, conversation.path.name)
            entry = done.get(conversation.key)
            if entry is None:
                answer = post_formation(client, agent, conversation.body)
                entry = _ledger_entry(conversation, answer)
                _append(ledger, entry)
                rows.append(entry | {"status": "replayed" if answer.get("replay") else "formed"})
            else:
                rows.append(entry | {"status": "done before"})
        bar.show(len(conversations))
    finally:
        bar.close()
    return rows


def _ledger_entry(conversation: Conversation, answer: dict[str, Any]) -> dict[str, Any]:
    counts = Counter(
        str(c.get("decision", "")).removeprefix("MEMORY_DECISION_").lower()
        for c in answer.get("candidates", [])
    )
    return {
        "file": conversation.path.name,
        "observedAt": conversation.observed_at,
        "formationKey": conversation.key,
        **{decision: counts.get(decision, 0) for decision in DECISIONS},
        "committedAt": answer.get("commitTimestamp"),
    }


def _append(ledger: Path, entry: dict[str, Any]) -> None:
    with ledger.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        out.flush()


def lifecycle_pass(client: ApiClient, agent: str) -> str:
    """POST memory:dream once; a NOT_FOUND (no workspace, or a server without the route)
    is told, not failed."""
    try:
        with waiting(f"running the lifecycle pass of {agent}"):
            answer = client.post(resource_path("agents", agent, "dream"), {})
    except ApiError as err:
        if err.status != "NOT_FOUND":
            raise
        return f"skipped: {err}; run `jnh agents memory dream {agent}` later"
    return "done" + (f": {json.dumps(answer, separators=(',', ':'))}" if answer else "")


def emit_report(rows: list[dict[str, Any]], dream: str, output: str) -> None:
    if output == "json":
        render.emit_json({"conversations": rows, "lifecyclePass": dream})
        return
    columns = ["file", "observedAt", "status", *DECISIONS]
    render.emit_section("conversations", columns, rows)
    totals = {d: sum(int(r.get(d, 0)) for r in rows) for d in DECISIONS}
    formed = sum(1 for r in rows if r["status"] != "done before")
    click.echo(
        f"{len(rows)} conversations ({formed} sent this run); "
        + ", ".join(f"{totals[d]} {d}" for d in DECISIONS)
    )
    click.echo(f"lifecycle pass: {dream}")


def _sample(collection: str) -> str:
    return "support-bot" if collection == "agents" else "team-alpha"
