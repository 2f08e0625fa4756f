"""The Spanner DDL, read from the package's .sql files and split into statements.

`schema.sql` is the one schema source (tests apply it to the emulator;
Terraform applies it to Cloud Spanner). `vector_index.sql` holds DDL only
production can run; it is applied after `schema.sql`. DDL added after the
first deploy goes in files applied after both (`APPENDED_FILES`, in order):
the emulator gets `schema.sql` and then those; production gets all three kinds
in `deployment_statements()` order, which is Terraform's.
"""

from __future__ import annotations

from importlib import resources

SCHEMA_FILE = "schema.sql"
PRODUCTION_ONLY_FILE = "vector_index.sql"
APPENDED_FILES = ("text_ngrams.sql", "claims.sql", "card.sql", "suppressions.sql", "keyed.sql")


def ddl_statements() -> list[str]:
    """Every statement the emulator runs: schema.sql, then each appended file, in order,
    without the trailing ';'."""
    statements = split_statements(_read(SCHEMA_FILE))
    for name in APPENDED_FILES:
        statements.extend(split_statements(_read(name)))
    return statements


def deployment_statements() -> list[str]:
    """Every statement production runs, in Terraform's order: schema.sql, the
    production-only DDL, then each appended file."""
    statements = split_statements(_read(SCHEMA_FILE)) + production_only_statements()
    for name in APPENDED_FILES:
        statements.extend(split_statements(_read(name)))
    return statements


def production_only_statements() -> list[str]:
    """The statements the emulator lacks (the ANN vector index), in order."""
    return split_statements(_read(PRODUCTION_ONLY_FILE))


def split_statements(text: str) -> list[str]:
    """Split DDL on ';' after dropping '--' comments; whitespace runs become one space.

    The schema files keep ';' and '--' out of string literals, so a plain
    split is exact for them.
    """
    code = "\n".join(line.split("--", 1)[0] for line in text.splitlines())
    statements = (" ".join(chunk.split()) for chunk in code.split(";"))
    return [statement for statement in statements if statement]


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
