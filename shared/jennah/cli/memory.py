"""`jnh agents memory …` and `jnh scopes memory …`: commit, query, inspect, evidence
(`jennah.cli.evidence`); and, for agent workspaces only, form and step
(`jennah.cli.formation`).

Agent workspaces and subject scopes share one identifier space, so both
groups reach the same memory; each mirrors its REST routes.
"""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import (
    brief,
    edit,
    evidence,
    forget,
    formation,
    lifecycle,
    okf,
    reading,
    render,
    search,
)
from jennah.cli.client import resource_path
from jennah.cli.inputs import (
    FILTER_HELP,
    load_document,
    parse_document,
    parse_filter,
    parse_instant,
)
from jennah.cli.options import ClientOptions, client_options

_EXAMPLE_INDENT = "\n" + " " * 10


def memory_group(collection: str, metavar: str, noun: str) -> click.Group:
    """The `memory` group of `jnh agents` (collection 'agents') or `jnh scopes`."""
    sample = _sample(collection)
    forms = collection == "agents"  # memory:form is published for agent workspaces only
    verbs = "Form, commit, query and inspect" if forms else "Commit, query and inspect"
    examples = [
        f"jnh {collection} memory commit {sample} --from-file memories.yaml",
        f'jnh {collection} memory query {sample} --text "where does Alice work"',
        f"jnh {collection} memory inspect {sample} --graph",
        f'jnh {collection} memory search {sample} "the dentist"',
        f"jnh {collection} memory list {sample}",
        f"jnh {collection} memory forget {sample} MEMORY_ID",
    ]
    if forms:
        examples.insert(0, f"jnh {collection} memory form {sample} --from-file turns.json")
    group = click.Group(
        "memory",
        help=f"""{verbs} the memory of {noun}; search it, read a claim whole, its
        evidence and the turns it came from; list the memory card; correct a claim (edit) or
        forget it for good, and manage the suppression rules forgetting leaves.

        \b
        Examples:
          {_EXAMPLE_INDENT.join(examples)}
        """,
    )
    if forms:
        group.add_command(formation.form_command())
        group.add_command(formation.step_command())
    group.add_command(_commit_command(collection, metavar, noun))
    group.add_command(_query_command(collection, metavar, noun))
    group.add_command(search.search_command(collection, metavar, noun))
    group.add_command(_inspect_command(collection, metavar, noun))
    group.add_command(evidence.evidence_command(collection, metavar, noun))
    group.add_command(reading.show_command(collection, metavar, noun))
    group.add_command(reading.excerpt_command(collection, metavar, noun))
    group.add_command(reading.list_command(collection, metavar, noun))
    group.add_command(edit.edit_command(collection, metavar, noun))
    group.add_command(forget.forget_command(collection, metavar, noun))
    group.add_command(forget.forget_group_command(collection, metavar, noun))
    group.add_command(forget.suppressions_command(collection, metavar, noun))
    group.add_command(brief.brief_command(collection, metavar, noun))
    group.add_command(okf.export_command(collection, metavar, noun))
    group.add_command(okf.import_command(collection, metavar, noun))
    if forms:
        group.add_command(okf.backfill_command())
    group.add_command(lifecycle.dream_command(collection, metavar, noun))
    return group


# commit


def _commit_command(collection: str, metavar: str, noun: str) -> click.Command:
    example = f"jnh {collection} memory commit {_sample(collection)} --from-file memories.yaml"

    @click.command(
        "commit",
        short_help="Write memory in one atomic commit.",
        help=f"""Write chunks, nodes, edges and supersessions to {noun} {metavar},
        in one atomic transaction (POST /v1/{collection}/{{id}}/memory:commit).

        The file (JSON or YAML; '-' reads standard input) carries the request body:
        chunks [{{text, metadata, validAt, and the claim fields: type, about, summary,
        whenToUse, appliesTo, strength, pin, authority, confidence, durability,
        validUntil, status, sensitivity, related, needsEnrichment, extensions}}],
        nodes [{{nodeId, label, nodeType,
        properties}}], edges [{{source, relation, target, validAt}}] and supersessions
        [{{chunkId|edgeId, replacementChunk|replacementEdge}}].

        \b
        Example:
          {example}
          echo '{{"chunks": [{{"text": "Alice works at Acme"}}]}}' | \\
            jnh {collection} memory commit {_sample(collection)} --from-file -
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option(
        "--from-file", "-f", "source", required=True, metavar="FILE|-",
        help="The request body, JSON or YAML; '-' for standard input.",
    )  # fmt: skip
    @client_options
    def commit(resource_id: str, source: str, opts: ClientOptions) -> None:
        body = load_document(source, "--from-file")
        answer = opts.client().post(resource_path(collection, resource_id, "commit"), body)
        if opts.output == "json":
            render.emit_json(answer)
        elif opts.output == "name":
            render.emit_names([*answer.get("chunkIds", []), *answer.get("edgeIds", [])])
        else:
            render.emit_pairs([(key, value) for key, value in answer.items()])

    return commit


# query

SEARCH_MODES = ("hybrid", "semantic", "lexical")  # semantic.mode, in upper case


def _query_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "query",
        short_help="Query by meaning, metadata and graph, now or as of a time.",
        help=f"""Query the memory of {noun} {metavar} by meaning and metadata, through
        the entity graph, now or as of a valid time
        (POST /v1/{collection}/{{id}}/memory:query).

        --text asks the semantic section; --graph-json gives the graph section, a
        JSON document such as {{"start": {{"filters": [{{"key": "NodeType", "value":
        "Person"}}]}}, "traversal": {{"relations": ["WORKS_AT"], "depth": 1}}}}.
        Give either or both. --as-of-valid applies to both sections (unless the
        graph document sets its own asOfValid). --mode picks how --text searches:
        hybrid (the server's default: by meaning and by words, tolerating a typo),
        semantic (by meaning alone) or lexical (by words alone).

        \b
        Examples:
          jnh {collection} memory query {sample} --text "where does Alice work"
          jnh {collection} memory query {sample} --text "employer" --filter source=hr \\
            --as-of-valid 2024-01-01
          jnh {collection} memory query {sample} --text "Lisbon" --mode lexical
          jnh {collection} memory query {sample} --graph-json people.json -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--text", "-t", help="The semantic query text (semantic.queryText).")
    @click.option(
        "--top-k", "-k", type=click.IntRange(min=1), default=None,
        help="Number of semantic results [server default: 10].",
    )  # fmt: skip
    @click.option("--filter", "filters", multiple=True, metavar="FILTER", help=FILTER_HELP + ".")
    @click.option(
        "--mode", type=click.Choice(SEARCH_MODES), default=None,
        help="How --text searches (semantic.mode) [server default: hybrid].",
    )  # fmt: skip
    @click.option(
        "--as-of-valid", metavar="TIME",
        help="What was valid at TIME (RFC 3339, or a local date or date-time) instead of now.",
    )  # fmt: skip
    @click.option(
        "--graph-json", metavar="FILE|JSON",
        help="The graph section: a JSON file, '-' for standard input, or inline JSON.",
    )  # fmt: skip
    @client_options
    def query(
        resource_id: str,
        text: str | None,
        top_k: int | None,
        filters: tuple[str, ...],
        mode: str | None,
        as_of_valid: str | None,
        graph_json: str | None,
        opts: ClientOptions,
    ) -> None:
        body = query_body(text, top_k, filters, as_of_valid, graph_json, mode)
        answer = opts.client().post(resource_path(collection, resource_id, "query"), body)
        _emit_query(answer, opts.output)

    return query


def query_body(
    text: str | None,
    top_k: int | None,
    filters: tuple[str, ...],
    as_of_valid: str | None,
    graph_json: str | None,
    mode: str | None = None,
) -> dict[str, Any]:
    """The memory:query request the flags describe."""
    instant = parse_instant(as_of_valid, "--as-of-valid") if as_of_valid else None
    body: dict[str, Any] = {}
    if text is not None:
        semantic: dict[str, Any] = {"queryText": text}
        if top_k is not None:
            semantic["topK"] = top_k
        if filters:
            semantic["filters"] = [parse_filter(f) for f in filters]
        if instant:
            semantic["asOfValid"] = instant
        if mode is not None:
            semantic["mode"] = mode.upper()
        body["semantic"] = semantic
    elif filters or top_k is not None or mode is not None:
        raise click.UsageError(
            "--filter, --top-k and --mode refine a semantic query: give --text too"
        )
    if graph_json is not None:
        graph = _graph_section(graph_json)
        if instant and "asOfValid" not in graph:
            graph["asOfValid"] = instant
        body["graph"] = graph
    if not body:
        raise click.UsageError("give --text, --graph-json, or both")
    return body


def _graph_section(source: str) -> dict[str, Any]:
    if source.lstrip().startswith("{"):
        document = parse_document(source, "the inline JSON", "--graph-json")
    else:
        document = load_document(source, "--graph-json")
    if set(document) == {"graph"} and isinstance(document["graph"], dict):
        return dict(document["graph"])  # a whole query body: take its graph section
    return document


def _emit_query(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
        return
    semantic = answer.get("semantic")
    graph = answer.get("graph")
    results = semantic.get("results", []) if semantic else []
    nodes = graph.get("nodes", []) if graph else []
    edges = graph.get("edges", []) if graph else []
    if output == "name":
        render.emit_names(
            [r["id"] for r in results] + [n["nodeId"] for n in nodes] + [e["edgeId"] for e in edges]
        )
        return
    blocks: list[tuple[str, list[str], list[dict[str, Any]]]] = []
    if semantic is not None:
        blocks.append(("results", ["id", "score", "validAt", "invalidAt", "text"], results))
    if graph is not None:
        blocks.append(("nodes", render.node_columns(nodes, (), depth=True), nodes))
        blocks.append(("edges", _EDGE_DEFAULTS, edges))
    _emit_blocks(blocks)


# inspect

_CHUNK_DEFAULTS = ["id", "validAt", "invalidAt", "text"]
_EDGE_DEFAULTS = ["edgeId", "source", "relation", "target", "validAt", "invalidAt"]


def _inspect_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "inspect",
        short_help="List chunks, and with --graph nodes and edges.",
        help=f"""List the chunks of {noun} {metavar} valid now (or at --as-of-valid,
        or every row ever written with --all-history), and with --graph its nodes
        and their edges (GET /v1/{collection}/{{id}}/memory:inspect).

        The node table shows a CLASS column beside LABEL only when at least one
        listed node carries a class; --fields nodeType shows it regardless.
        --fields picks the columns of each table by wire field name (the table's
        id column always comes first): {", ".join(render.ALL_FIELDS)}.

        \b
        Examples:
          jnh {collection} memory inspect {sample}
          jnh {collection} memory inspect {sample} --graph
          jnh {collection} memory inspect {sample} --graph --fields label,nodeType
          jnh {collection} memory inspect {sample} --all-history -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--graph", is_flag=True, help="Also list nodes and their edges.")
    @click.option(
        "--fields", multiple=True, metavar="F1,F2",
        help="Columns to show, by wire field name; comma-separated or repeated.",
    )  # fmt: skip
    @click.option("--as-of-valid", metavar="TIME", help="List what was valid at TIME.")
    @click.option("--all-history", is_flag=True, help="List every row, valid or not.")
    @click.option(
        "--page-size", type=click.IntRange(min=1), default=None,
        help="Items per page [server default: 50, at most 1000].",
    )  # fmt: skip
    @click.option("--page-token", metavar="TOKEN", help="Continue from a previous page.")
    @client_options
    def inspect(
        resource_id: str,
        graph: bool,
        fields: tuple[str, ...],
        as_of_valid: str | None,
        all_history: bool,
        page_size: int | None,
        page_token: str | None,
        opts: ClientOptions,
    ) -> None:
        chosen = _fields(fields)
        params = {"graph": "true" if graph else None, "allHistory": "true" if all_history else None}
        params |= {
            "asOfValid": parse_instant(as_of_valid, "--as-of-valid") if as_of_valid else None,
            "pageSize": str(page_size) if page_size else None,
            "pageToken": page_token,
        }
        path = resource_path(collection, resource_id, "inspect")
        answer = opts.client().get(path, {k: v for k, v in params.items() if v is not None})
        _emit_inspect(answer, opts.output, chosen)
        token = answer.get("nextPageToken")
        if token and opts.output == "table":
            click.echo(f"More: repeat the command with --page-token {token}", err=True)

    return inspect


def _fields(given: tuple[str, ...]) -> list[str]:
    fields = [f.strip() for item in given for f in item.split(",") if f.strip()]
    unknown = [f for f in fields if f not in render.ALL_FIELDS]
    if unknown:
        raise click.BadParameter(
            f"unknown field {unknown[0]!r}; choose from {', '.join(render.ALL_FIELDS)}",
            param_hint="--fields",
        )
    return fields


def _emit_inspect(answer: dict[str, Any], output: str, fields: list[str]) -> None:
    if output == "json":
        render.emit_json(answer)
        return
    chunks = answer.get("chunks", [])
    nodes = answer.get("nodes")
    edges = answer.get("edges")
    if output == "name":
        render.emit_names(
            [c["id"] for c in chunks]
            + [n["nodeId"] for n in nodes or []]
            + [e["edgeId"] for e in edges or []]
        )
        return
    blocks = [("chunks", render.pick_columns(_CHUNK_DEFAULTS, render.CHUNK_FIELDS, fields), chunks)]
    if nodes is not None:
        blocks.append(("nodes", _inspect_node_columns(nodes, fields), nodes))
        blocks.append(
            ("edges", render.pick_columns(_EDGE_DEFAULTS, render.EDGE_FIELDS, fields), edges or [])
        )
    _emit_blocks(blocks)


def _inspect_node_columns(nodes: list[dict[str, Any]], fields: list[str]) -> list[str]:
    chosen = [f for f in fields if f in render.NODE_FIELDS and f != "depth"]
    return render.node_columns(nodes, chosen, depth=False)


def _emit_blocks(blocks: list[tuple[str, list[str], list[dict[str, Any]]]]) -> None:
    for i, (title, columns, rows) in enumerate(blocks):
        if i:
            click.echo()
        render.emit_section(title, columns, rows)


def _sample(collection: str) -> str:
    return "support-bot" if collection == "agents" else "bot.support"
