"""`jnh vocabulary` (alias `jnh vocab`): declare, read and remove a memory vocabulary.

The level is the enterprise without --scope, else that scope, exactly as a
request without or with `scopeId`. A declaration replaces the level's whole
declaration, so `declare` reads the current one first and shows what the new
one adds, drops and re-describes before asking. Declaring and removing are
management-class: `jnh` refuses them here, before any request, when its
credential is an API key.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import local_failure
from jennah.cli.inputs import load_document
from jennah.cli.options import ClientOptions, client_options
from jennah.domain.access import API_KEY_PREFIX
from jennah.domain.vocabulary import flatten
from jennah.errors import PermissionDenied

PATH = "/v1/memory/vocabulary"
CLASS_COLUMNS = ["class", "description"]
RELATION_COLUMNS = ["relation", "description", "signatures"]
_NAME_HINT = (
    "the '=' is required even when the description is empty ({option} {name}=), because a "
    "description is an input to classification, not documentation"
)

_scope_option = click.option(
    "--scope", "scope_id", metavar="SCOPE",
    help="The scope's level (an agent workspace or a subject scope) [default: the "
    "enterprise level, the default for every scope].",
)  # fmt: skip
_yes_option = click.option(
    "--yes", "-y", is_flag=True,
    help="Do not ask for confirmation (required when standard input is not a terminal).",
)  # fmt: skip


@click.group(
    "vocabulary",
    short_help="Memory vocabulary (alias vocab): declare, get, remove.",
    help="""The memory vocabulary: the entity classes formed memory is classified
    against, and the relation types formation is expected to use. It steers
    formation and gates nothing.

    It is declared at the enterprise level (omit --scope), the default for every
    scope, or at one scope's level (--scope), which replaces the default for that
    scope outright. A scope declaring nothing inherits the default; a scope
    declaring an empty vocabulary (--none) classifies nothing. `jnh vocab` is the
    same command.

    \b
    Examples:
      jnh vocabulary declare --class Person="an individual human being" \\
        --class Organization="a company, employer, school or agency" \\
        --relation WORKS_AT="employment of a person by an organization" \\
        --signature WORKS_AT=Person:Organization
      jnh vocabulary get --scope bot.support
      jnh vocabulary declare --scope bot.support --none
      jnh vocabulary remove --scope bot.support
    """,
)
def vocabulary() -> None:
    """The `vocabulary` group."""


# declare


@vocabulary.command(
    "declare",
    short_help="Declare a level's vocabulary (replaces it whole).",
    help="""Declare the vocabulary of a level, replacing its declaration whole (PUT
    /v1/memory/vocabulary). Give it with flags, from a file, or as empty (--none):

    \b
      --class NAME=DESCRIPTION       an entity class (repeatable)
      --relation NAME=DESCRIPTION    a relation type (repeatable)
      --signature NAME=SOURCE:TARGET an expected (source, target) class pair of a
                                     relation type declared by a --relation here
      --from-file F                  the PUT body as JSON or YAML, with or without
                                     the `vocabulary` wrapper ('-': standard input)
      --none                         an empty vocabulary: classification off here

    The '=' is required even when the description is empty (--class Person=): the
    description is what the extraction model classifies by, beside the name.

    It first reads the level's current declaration and prints what the new one
    adds, drops and re-describes, then asks for confirmation: --yes skips the
    question (and is required when standard input is not a terminal); --dry-run
    prints the changes and the request without sending it. Needs
    agent.vocabulary:manage, which an API key never has: jnh refuses locally when
    its credential is one.

    \b
    Examples:
      jnh vocabulary declare \\
        --class Person="an individual human being, including colleagues" \\
        --class Organization="a company, employer, school or agency" \\
        --relation WORKS_AT="employment of a person by an organization" \\
        --signature WORKS_AT=Person:Organization
      jnh vocabulary declare --scope bot.support --from-file support-vocab.yaml
      jnh vocabulary declare --scope bot.support --none --yes
      jnh vocab declare --class Person= --dry-run
    """,
)
@_scope_option
@click.option("--class", "classes", multiple=True, metavar="NAME=DESCRIPTION",
              help="An entity class; repeatable.")  # fmt: skip
@click.option("--relation", "relations", multiple=True, metavar="NAME=DESCRIPTION",
              help="A relation type; repeatable.")  # fmt: skip
@click.option("--signature", "signatures", multiple=True, metavar="NAME=SOURCE:TARGET",
              help="A signature of a relation type given by --relation; repeatable.")  # fmt: skip
@click.option("--from-file", "-f", "source", metavar="FILE",
              help="The declaration as JSON or YAML ('-' reads standard input).")  # fmt: skip
@click.option("--none", "empty", is_flag=True,
              help="Declare an empty vocabulary: classification off at this level.")  # fmt: skip
@_yes_option
@click.option("--dry-run", is_flag=True, help="Print the changes and the request; send nothing.")
@client_options
def declare(
    scope_id: str | None,
    classes: tuple[str, ...],
    relations: tuple[str, ...],
    signatures: tuple[str, ...],
    source: str | None,
    empty: bool,
    yes: bool,
    dry_run: bool,
    opts: ClientOptions,
) -> None:
    refuse_api_key(opts, "declaring")
    declared = declared_vocabulary(classes, relations, signatures, source, empty, scope_id)
    if not (yes or dry_run):
        require_terminal("declaring replaces the level's declaration whole")
    client = opts.client()
    current = client.get(PATH, level_params(scope_id)).get("declaration")
    click.echo(describe_changes(current, declared, scope_id), err=True)
    body = declare_body(scope_id, declared)
    if dry_run:
        click.echo(f"PUT {PATH}")
        render.emit_json(body)
        return
    if not yes:
        click.confirm(f"Declare it at {level_name(scope_id)}?", abort=True, err=True)
    emit_view(client.put(PATH, body), scope_id, opts.output)


def declared_vocabulary(
    classes: Sequence[str],
    relations: Sequence[str],
    signatures: Sequence[str],
    source: str | None,
    empty: bool,
    scope_id: str | None,
) -> dict[str, Any]:
    """The `vocabulary` to declare, from exactly one of: flags, a file, --none."""
    given = [bool(classes or relations or signatures), source is not None, empty]
    if sum(given) != 1:
        raise click.UsageError(
            "give the vocabulary one way: --class/--relation/--signature flags, --from-file, "
            "or --none (an empty vocabulary)"
        )
    if empty:
        return {"entityClasses": [], "relationTypes": []}
    if source is not None:
        return file_vocabulary(source, scope_id)
    return flag_vocabulary(classes, relations, signatures)


def flag_vocabulary(
    classes: Sequence[str], relations: Sequence[str], signatures: Sequence[str]
) -> dict[str, Any]:
    relation_types: list[dict[str, Any]] = [
        {"name": name, "description": description, "signatures": []}
        for name, description in (parse_pair(text, "--relation") for text in relations)
    ]
    by_name: dict[str, dict[str, Any]] = {}
    for relation in relation_types:
        by_name.setdefault(relation["name"], relation)
    for text in signatures:
        name, source, target = parse_signature(text)
        if name not in by_name:
            raise click.BadParameter(
                f"{text!r} names the relation type {name!r}, which no --relation on this "
                f"command line declares; add --relation {name}=DESCRIPTION",
                param_hint="--signature",
            )
        by_name[name]["signatures"].append({"sourceClass": source, "targetClass": target})
    return {
        "entityClasses": [
            {"name": name, "description": description}
            for name, description in (parse_pair(text, "--class") for text in classes)
        ],
        "relationTypes": relation_types,
    }


def parse_pair(text: str, option: str) -> tuple[str, str]:
    """'NAME=DESCRIPTION' (the description may be empty, the '=' may not be missing)."""
    name, separator, description = text.partition("=")
    if not separator or not name.strip():
        hint = _NAME_HINT.format(option=option, name=name.strip() or "NAME")
        raise click.BadParameter(f"{text!r}: write NAME=DESCRIPTION; {hint}", param_hint=option)
    return name.strip(), description.strip()


def parse_signature(text: str) -> tuple[str, str, str]:
    """'NAME=SOURCE:TARGET' as (relation, source class, target class)."""
    name, _, pair = text.partition("=")
    source, _, target = pair.partition(":")
    parts = (name.strip(), source.strip(), target.strip())
    if not all(parts):
        raise click.BadParameter(
            f"{text!r}: write NAME=SOURCE:TARGET, such as WORKS_AT=Person:Organization",
            param_hint="--signature",
        )
    return parts


def file_vocabulary(source: str, scope_id: str | None) -> dict[str, Any]:
    """The file's vocabulary: the PUT body's `vocabulary`, or the whole file without one."""
    document = load_document(source, "--from-file")
    named = document.get("scopeId")
    if named is not None and named != scope_id:
        where = "no --scope (the enterprise level)" if scope_id is None else f"--scope {scope_id}"
        raise click.BadParameter(
            f"{source} names scopeId {named!r}, but the command gives {where}; the level is "
            f"chosen by --scope: pass --scope {named} to declare there",
            param_hint="--from-file",
        )
    if "vocabulary" not in document:
        return _unwrapped(document, source)
    wrapped = document["vocabulary"]
    if not isinstance(wrapped, dict):
        raise click.BadParameter(
            f"{source}: vocabulary must be an object (use --none for an empty vocabulary)",
            param_hint="--from-file",
        )
    return wrapped


def _unwrapped(document: dict[str, Any], source: str) -> dict[str, Any]:
    """A file without the wrapper, which must hold a vocabulary: a PUT body missing
    `vocabulary` is refused, as the server refuses it, never read as empty."""
    vocabulary = {k: v for k, v in document.items() if k != "scopeId"}
    if not {"entityClasses", "relationTypes"} & vocabulary.keys():
        raise click.BadParameter(
            f"{source} holds no vocabulary (no vocabulary, entityClasses or relationTypes); "
            "to declare an empty vocabulary pass --none, and to remove one use "
            "`jnh vocabulary remove`",
            param_hint="--from-file",
        )
    return vocabulary


def declare_body(scope_id: str | None, declared: dict[str, Any]) -> dict[str, Any]:
    """The PUT body: scopeId belongs in it (a scopeId query parameter is ignored on PUT)."""
    return ({} if scope_id is None else {"scopeId": scope_id}) | {"vocabulary": declared}


# what a declaration changes


def describe_changes(
    current: dict[str, Any] | None, declared: dict[str, Any], scope_id: str | None
) -> str:
    """What the level declares now, then what the new declaration adds, drops and
    re-describes, one line each."""
    replaces = "The new declaration:" if current is None else "The new one replaces it whole:"
    lines = [_now_line(current, scope_id), replaces]
    changes = [f"  {change}" for change in _changes(current or {}, declared)]
    if current is None:
        lines += changes or ["  declares no entity class and no relation type"]
    else:
        lines += changes or ["  changes no entity class and no relation type"]
    if not declared.get("entityClasses"):
        lines.append(
            "It declares no entity classes: classification is OFF at this level"
            + ("." if scope_id is None else " (the enterprise default no longer applies here).")
        )
    return "\n".join(lines)


def _now_line(current: dict[str, Any] | None, scope_id: str | None) -> str:
    level = level_name(scope_id)
    if current is None:
        inherits = "" if scope_id is None else ": it inherits the enterprise default"
        return f"Now {level} declares no vocabulary{inherits}."
    if not current.get("entityClasses"):
        return f"Now {level} declares an empty vocabulary: classification is off there."
    return f"Now {level} declares {_counts(current)}."


def _counts(vocabulary: dict[str, Any]) -> str:
    classes = len(vocabulary.get("entityClasses") or [])
    relations = len(vocabulary.get("relationTypes") or [])
    return (
        f"{classes} entity class{'es' if classes != 1 else ''} and "
        f"{relations} relation type{'s' if relations != 1 else ''}"
    )


def _changes(current: dict[str, Any], declared: dict[str, Any]) -> list[str]:
    changes: list[str] = []
    for key, noun in (("entityClasses", "class"), ("relationTypes", "relation type")):
        before, after = _by_name(current.get(key)), _by_name(declared.get(key))
        changes += [_added(noun, item) for name, item in after.items() if name not in before]
        changes += [f"drops {noun} {name}" for name in before if name not in after]
        for name in after.keys() & before.keys():
            changes += _altered(noun, before[name], after[name])
    return changes


def _by_name(items: Any) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for item in items or []:
        if isinstance(item, dict):
            found.setdefault(str(item.get("name", "")), item)
    return found


def _added(noun: str, item: dict[str, Any]) -> str:
    signatures = _signatures(item)
    shape = f" ({signatures})" if signatures else ""
    return f"adds {noun} {item.get('name')}{shape}: {_quoted(item)}"


def _altered(noun: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    name, altered = after.get("name"), []
    if _quoted(before) != _quoted(after):
        altered.append(f"re-describes {noun} {name}: {_quoted(before)} -> {_quoted(after)}")
    if _signatures(before) != _signatures(after):
        was, now = _signatures(before) or "none", _signatures(after) or "none"
        altered.append(f"changes the signatures of {noun} {name}: {was} -> {now}")
    return altered


def _quoted(item: dict[str, Any]) -> str:
    """The description as the server stores it (line breaks flattened), quoted."""
    return json.dumps(flatten(str(item.get("description") or "")), ensure_ascii=False)


def _signatures(item: dict[str, Any]) -> str:
    return ", ".join(
        f"{s.get('sourceClass')}:{s.get('targetClass')}"
        for s in item.get("signatures") or []
        if isinstance(s, dict)
    )


# get


@vocabulary.command(
    "get",
    short_help="Show what a level declares and what resolves there.",
    help="""Show what a level declares and what formation resolves there (GET
    /v1/memory/vocabulary). The LEVEL, DECLARATION and RESOLVES lines tell the three
    states apart: a scope declaring nothing inherits the enterprise default; a scope
    declaring an empty vocabulary classifies nothing. The classes and relation types
    that resolve follow. -o json prints the response verbatim (`declaration` is
    absent when the level declares nothing); -o name lists the resolved entity class
    names. Needs agent.vocabulary:read (an API key may hold it).

    \b
    Examples:
      jnh vocabulary get
      jnh vocabulary get --scope bot.support
      jnh vocab get --scope bot.support -o name
    """,
)
@_scope_option
@client_options
def get(scope_id: str | None, opts: ClientOptions) -> None:
    emit_view(opts.client().get(PATH, level_params(scope_id)), scope_id, opts.output)


def emit_view(answer: dict[str, Any], scope_id: str | None, output: str) -> None:
    resolved = answer.get("resolved")
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names(c["name"] for c in (resolved or {}).get("entityClasses", []))
    else:
        render.emit_pairs(level_lines(answer, scope_id), full=("level", "declaration"))
        if resolved:
            _emit_vocabulary(resolved)


def level_lines(answer: dict[str, Any], scope_id: str | None) -> list[tuple[str, str]]:
    """The LEVEL, DECLARATION and RESOLVES lines of a GET answer."""
    level = "enterprise" if scope_id is None else f"scope {scope_id}"
    return [
        ("level", level),
        ("declaration", _declaration_text(answer.get("declaration"), scope_id)),
        ("resolves", _resolves_text(answer, scope_id)),
    ]


def _declaration_text(declaration: dict[str, Any] | None, scope_id: str | None) -> str:
    if declaration is None:
        if scope_id is None:
            return "none: the enterprise declares no default"
        return "none: this scope inherits the enterprise default"
    if not declaration.get("entityClasses"):
        return "empty: classification is off at this level"
    stamp = declaration.get("updateTime")
    return _counts(declaration) + (f" (declared {stamp})" if stamp else "")


def _resolves_text(answer: dict[str, Any], scope_id: str | None) -> str:
    if not answer.get("resolved"):
        return "nothing: classification is off"
    if scope_id is not None and answer.get("declaration") is None:
        return "the enterprise default"
    return "this declaration"


def _emit_vocabulary(resolved: dict[str, Any]) -> None:
    """The resolved classes, then its relation types (with their signatures), as tables."""
    classes = resolved.get("entityClasses") or []
    rows = [{"class": c.get("name"), "description": c.get("description")} for c in classes]
    click.echo()
    click.echo(render.table(CLASS_COLUMNS, rows))
    relations = resolved.get("relationTypes") or []
    if relations:
        rows = [
            {"relation": r.get("name"), "description": r.get("description"),
             "signatures": _signatures(r)}
            for r in relations
        ]  # fmt: skip
        click.echo()
        click.echo(render.table(RELATION_COLUMNS, rows))


# remove


@vocabulary.command(
    "remove",
    short_help="Remove a level's declaration (a scope inherits again).",
    help="""Remove a level's declaration (DELETE /v1/memory/vocabulary): a scope
    inherits the enterprise default again; at the enterprise level, scopes that
    inherit it classify nothing. Removing is not declaring an empty vocabulary
    (`declare --none`), which turns classification off instead of inheriting.
    NOT_FOUND (exit 4) when the level declares nothing.

    It asks for confirmation; --yes skips the question, and is required when
    standard input is not a terminal. Needs agent.vocabulary:manage, which an API
    key never has: jnh refuses locally when its credential is one.

    \b
    Examples:
      jnh vocabulary remove --scope bot.support
      jnh vocab remove --yes
    """,
)
@_scope_option
@_yes_option
@client_options
def remove(scope_id: str | None, yes: bool, opts: ClientOptions) -> None:
    refuse_api_key(opts, "removing")
    if not yes:
        require_terminal("removing changes what formation classifies")
        click.confirm(f"Remove the vocabulary {_removal(scope_id)}?", abort=True, err=True)
    answer = opts.client().delete(PATH, level_params(scope_id))
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([] if scope_id is None else [scope_id])
    else:
        click.echo(f"Removed the vocabulary {_removal(scope_id)}.")


def _removal(scope_id: str | None) -> str:
    if scope_id is None:
        return "declared at the enterprise level (scopes that inherit it classify nothing)"
    return f"declared at scope {scope_id} (it inherits the enterprise default again)"


# shared


def level_params(scope_id: str | None) -> dict[str, str]:
    """The query naming the level (an empty --scope is sent, for the server to refuse)."""
    return {} if scope_id is None else {"scopeId": scope_id}


def level_name(scope_id: str | None) -> str:
    return "the enterprise level" if scope_id is None else f"scope {scope_id}"


def refuse_api_key(opts: ClientOptions, act: str) -> None:
    """Exit 5 before any request when the credential is an API key (`jk_…`)."""
    token = opts.credential()
    if token is not None and token.startswith(API_KEY_PREFIX):
        raise local_failure(
            PermissionDenied(
                f"{act} a vocabulary needs agent.vocabulary:manage, a management permission "
                "that can never be used with an API key, so jnh sent nothing; call as a user "
                "(--token with a user credential, or `jnh auth login`)"
            )
        )


def stdin_is_interactive() -> bool:
    return sys.stdin.isatty()


def require_terminal(why: str) -> None:
    if not stdin_is_interactive():
        raise click.UsageError(
            f"{why} and asks for confirmation: pass --yes to confirm when standard input is "
            "not a terminal (or --dry-run to see the change)"
        )
