"""`jnh agents notes …` and `jnh scopes notes …`: keyed memory, the agent's notebook.

"notes" rather than "keyed-memories": a notebook of entries named by subject is what the
spec describes, it reads well in a command line (`jnh agents notes remember bot
harbor-status-reports …`), and it does not collide with the claim commands under
`memory`. Each command mirrors one route of …/keyedMemories.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import segment
from jennah.cli.options import ClientOptions, client_options
from jennah.cli.scopes import stdin_is_interactive

ENTRY_COLUMNS = ("key", "version", "updateTime", "links", "content")


def notes_group(collection: str, metavar: str, noun: str) -> click.Group:
    """The `notes` group of `jnh agents` (collection 'agents') or `jnh scopes`."""
    sample = "support-bot" if collection == "agents" else "bot.support"
    group = click.Group(
        "notes",
        help=f"""Keyed memory of {noun}: durable entries named by subject, updated in place
        under a version check, linked (at most 12 links each), recalled within a token
        budget.

        \b
        Examples:
          jnh {collection} notes remember {sample} harbor-status-reports \\
            --content "Outcome first, then blockers, then the next action."
          jnh {collection} notes remember {sample} harbor-status-reports \\
            --from-file status.md --expected-version 1
          jnh {collection} notes recall {sample} "write the harbor status report" --budget 500
          jnh {collection} notes link {sample} project-harbor harbor-status-reports
          jnh {collection} notes forget {sample} harbor-status-reports --yes
        """,
    )
    for build in (_remember, _get, _list, _forget, _link, _unlink, _recall, _search):
        group.add_command(build(collection, metavar))
    return group


def _with_example(text: str, collection: str, tail: str) -> str:
    """A command's help: `text`, then an example `jnh {collection} notes {tail}`."""
    sample = "support-bot" if collection == "agents" else "bot.support"
    return f"{text}\n\n\b\nExample:\n  jnh {collection} notes {tail.format(id=sample)}"


def _base(collection: str, resource_id: str) -> str:
    return f"/v1/{collection}/{segment(resource_id)}/keyedMemories"


def _emit_entry(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([answer["key"]])
    else:
        render.emit_pairs([(field, answer.get(field, "")) for field in ENTRY_COLUMNS])


def _emit_entries(answer: dict[str, Any], rows: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([row["key"] for row in rows])
    else:
        columns = [c for c in (*ENTRY_COLUMNS, "via", "matchedWords") if any(c in r for r in rows)]
        click.echo(render.table(columns or ENTRY_COLUMNS, rows))
        if answer.get("nextPageToken"):
            click.echo(f"(more: --page-token {answer['nextPageToken']})")


def _read_content(content: str | None, source: str | None) -> str:
    if (content is None) == (source is None):
        raise click.UsageError("give the entry's text with exactly one of --content, --from-file")
    if content is not None:
        return content
    assert source is not None
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {source}: {exc.strerror}", param_hint="--from-file"
        ) from None


def _remember(collection: str, metavar: str) -> click.Command:
    @click.command(
        "remember",
        short_help="Create or update an entry (version-checked).",
        help=_with_example(
            f"""Create KEY (--expected-version 0, the default) or update it while its
            version is --expected-version (PUT /v1/{collection}/{{id}}/keyedMemories/{{key}}).
            A stale version fails with KEYED_MEMORY_VERSION_MISMATCH and the current
            version: reread the entry (`notes get`), reconcile, and write again. The answer
            is the only evidence of the write.""",
            collection,
            "remember {id} harbor-status-reports --from-file status.md --expected-version 1",
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("key")
    @click.option("--content", "-c", help="The entry's text.")
    @click.option("--from-file", "-f", "source", metavar="FILE|-",
                  help="Read the entry's text from a file; '-' for standard input.")  # fmt: skip
    @click.option("--expected-version", type=int, default=0, show_default=True,
                  help="0 creates the key; N updates only while the version is N.")  # fmt: skip
    @client_options
    def remember(
        resource_id: str,
        key: str,
        content: str | None,
        source: str | None,
        expected_version: int,
        opts: ClientOptions,
    ) -> None:
        body = {"content": _read_content(content, source), "expectedVersion": expected_version}
        answer = opts.client().put(f"{_base(collection, resource_id)}/{segment(key)}", body)
        _emit_entry(answer, opts.output)

    return remember


def _get(collection: str, metavar: str) -> click.Command:
    @click.command(
        "get",
        help=_with_example(
            "Read one entry with its links (and its version, for the next remember).",
            collection,
            "get {id} harbor-status-reports -o json",
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("key")
    @client_options
    def get(resource_id: str, key: str, opts: ClientOptions) -> None:
        answer = opts.client().get(f"{_base(collection, resource_id)}/{segment(key)}")
        _emit_entry(answer, opts.output)

    return get


def _list(collection: str, metavar: str) -> click.Command:
    @click.command(
        "list",
        help=_with_example(
            "List the entries, most recently updated first, a page at a time.",
            collection,
            "list {id} --page-size 20",
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--page-size", type=int, default=0, help="Entries per page (0: 50).")
    @click.option("--page-token", default="", help="The nextPageToken of the previous page.")
    @client_options
    def list_(resource_id: str, page_size: int, page_token: str, opts: ClientOptions) -> None:
        params = {"pageSize": str(page_size), "pageToken": page_token}
        answer = opts.client().get(_base(collection, resource_id), params)
        _emit_entries(answer, answer.get("keyedMemories", []), opts.output)

    return list_


def _forget(collection: str, metavar: str) -> click.Command:
    @click.command(
        "forget",
        help=_with_example(
            """forget_memory: delete KEY and every link to or from it. It asks for
            confirmation; --yes skips the question, and is required when standard input
            is not a terminal. Old conversations that mention the fact keep it.""",
            collection,
            "forget {id} harbor-status-reports --yes",
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("key")
    @click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
    @client_options
    def forget(resource_id: str, key: str, yes: bool, opts: ClientOptions) -> None:
        if not yes:
            if not stdin_is_interactive():
                raise click.UsageError(
                    "forgetting deletes the entry and its links for good: pass --yes to "
                    "confirm when standard input is not a terminal"
                )
            click.confirm(f"Forget {key!r} and its links?", abort=True)
        answer = opts.client().delete(f"{_base(collection, resource_id)}/{segment(key)}")
        if opts.output == "json":
            render.emit_json(answer)
        elif opts.output == "name":
            render.emit_names([key])
        else:
            click.echo(f"Forgot {key}.")

    return forget


def _link_command(collection: str, metavar: str, verb: str, help_text: str) -> click.Command:
    @click.command(
        verb,
        help=_with_example(help_text, collection, f"{verb} {{id}} project-harbor conventions"),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("key")
    @click.argument("target")
    @client_options
    def command(resource_id: str, key: str, target: str, opts: ClientOptions) -> None:
        path = f"{_base(collection, resource_id)}/{segment(key)}:{verb}"
        _emit_entry(opts.client().post(path, {"target": target}), opts.output)

    return command


def _link(collection: str, metavar: str) -> click.Command:
    return _link_command(collection, metavar, "link",
                         "Link KEY and TARGET (symmetric, one hop; at most 12 links).")  # fmt: skip


def _unlink(collection: str, metavar: str) -> click.Command:
    return _link_command(collection, metavar, "unlink", "Remove the link between KEY and TARGET.")


def _recall(collection: str, metavar: str) -> click.Command:
    @click.command(
        "recall",
        help=_with_example(
            """The entries that matter for REQUEST within --budget tokens: matches by
            words (ties: most recent update), then linked neighbours (via LINK) while
            space remains.""",
            collection,
            'recall {id} "write the harbor status report" --budget 500',
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("request")
    @click.option("--budget", type=int, default=500, show_default=True, help="Token budget.")
    @client_options
    def recall(resource_id: str, request: str, budget: int, opts: ClientOptions) -> None:
        body = {"request": request, "tokenBudget": budget}
        answer = opts.client().post(f"{_base(collection, resource_id)}:recall", body)
        _emit_entries(answer, answer.get("memories", []), opts.output)
        if opts.output == "table":
            click.echo(f"{answer.get('tokenCount', 0)} of {budget} tokens")

    return recall


def _search(collection: str, metavar: str) -> click.Command:
    @click.command(
        "search",
        help=_with_example(
            "read_memories: the entries holding QUERY's words, most words first, a page.",
            collection,
            'search {id} "harbor report"',
        ),
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("query")
    @click.option("--page-size", type=int, default=0, help="Entries per page (0: 50).")
    @click.option("--page-token", default="", help="The nextPageToken of the previous page.")
    @client_options
    def search(
        resource_id: str, query: str, page_size: int, page_token: str, opts: ClientOptions
    ) -> None:
        body = {"query": query, "pageSize": page_size, "pageToken": page_token}
        answer = opts.client().post(f"{_base(collection, resource_id)}:search", body)
        _emit_entries(answer, answer.get("results", []), opts.output)

    return search
