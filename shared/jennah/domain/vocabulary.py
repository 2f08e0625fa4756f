"""Memory vocabulary: entity classes, relation types, and what resolves for a scope.

Pure rules, no I/O. A vocabulary is declared at the enterprise level (the
default for every scope) or at the scope level (replacing the default outright,
never merged). Each level is in one of three states:

- absent: no declaration at that level (a scope inherits the enterprise's);
- present with entity classes: that vocabulary resolves;
- present with no entity classes: nothing resolves (classification is off).

`validated` is the one gate a declaration passes before it is stored: it checks
every bound and returns the declaration with descriptions flattened, or raises
InvalidArgument naming the offending item by its field path on the wire
(`vocabulary.entityClasses[3].name`). Nothing is stored for a rejected one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from jennah.errors import InvalidArgument

MAX_ENTITY_CLASSES = 32
MAX_RELATION_TYPES = 32
MAX_SIGNATURES = 6  # per relation type
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 200  # counted after line breaks are flattened
FIELD = "vocabulary"
# A name's characters: letters of any script (with the marks written on them), decimal
# digits, and '_', '.' and '-'. None of them can alter the structure of the JSON data
# block a name is rendered into (spaces, quotes, brackets and line breaks are not letters).
_NAME_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Nd"})
_NAME_PUNCTUATION = frozenset("_.-")

# A run of line breaks (any that str.splitlines() knows), with the spaces and
# tabs around it, becomes one space.
_LINE_BREAKS = re.compile(r"[ \t]*(?:[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029][ \t]*)+")


class EntityClass(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""


class Signature(BaseModel):
    """An expected (source class, target class) pair of a relation type; never enforced."""

    model_config = ConfigDict(frozen=True)

    source_class: str
    target_class: str


class RelationType(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    signatures: tuple[Signature, ...] = ()


class Vocabulary(BaseModel):
    """One level's declaration; with no entity classes it turns classification off."""

    model_config = ConfigDict(frozen=True)

    entity_classes: tuple[EntityClass, ...] = ()
    relation_types: tuple[RelationType, ...] = ()

    @property
    def classifies(self) -> bool:
        """True when it declares at least one entity class."""
        return bool(self.entity_classes)


class Declaration(BaseModel):
    """What one level declares, as stored, and when it was last written."""

    model_config = ConfigDict(frozen=True)

    vocabulary: Vocabulary
    update_time: datetime


# resolution


def resolve(enterprise: Vocabulary | None, scope: Vocabulary | None) -> Vocabulary | None:
    """What formation uses for a scope, given what each level declares (None: absent).

    A scope declaration replaces the enterprise one outright; an absent one
    inherits it (which may itself be absent). Whichever applies resolves to
    nothing when it declares no entity classes.
    """
    applies = scope if scope is not None else enterprise
    return applies if applies is not None and applies.classifies else None


# validation


def flatten(description: str) -> str:
    """The description on one line: each run of line breaks becomes one space, ends trimmed."""
    return _LINE_BREAKS.sub(" ", description).strip()


def validated(vocabulary: Vocabulary) -> Vocabulary:
    """The declaration with descriptions flattened, if it keeps every bound.

    Raises InvalidArgument (metadata `field`: the offending item's wire path)
    for the first breach found, in this order: the class count, the relation
    count, each class (name, description), a repeated class name, each relation
    (name, description, signature count, each signature's classes), a repeated
    relation name. Descriptions are bounded after flattening; they may be empty.
    """
    classes_field, relations_field = f"{FIELD}.entityClasses", f"{FIELD}.relationTypes"
    _check_count(vocabulary.entity_classes, MAX_ENTITY_CLASSES, classes_field, "entity classes")
    _check_count(vocabulary.relation_types, MAX_RELATION_TYPES, relations_field, "relation types")
    classes = tuple(
        _checked_class(entity_class, f"{classes_field}[{i}]")
        for i, entity_class in enumerate(vocabulary.entity_classes)
    )
    _check_unique((c.name for c in classes), classes_field, "entity class")
    declared = frozenset(c.name for c in classes)
    relations = tuple(
        _checked_relation(relation, declared, f"{relations_field}[{i}]")
        for i, relation in enumerate(vocabulary.relation_types)
    )
    _check_unique((r.name for r in relations), relations_field, "relation type")
    return Vocabulary(entity_classes=classes, relation_types=relations)


def _check_count(items: tuple[Any, ...], limit: int, field: str, noun: str) -> None:
    if len(items) > limit:
        raise InvalidArgument(
            f"{field} declares {len(items)} {noun}; at most {limit} are allowed", field=field
        )


def _checked_class(entity_class: EntityClass, path: str) -> EntityClass:
    _check_name(entity_class.name, f"{path}.name")
    description = _checked_description(entity_class.description, f"{path}.description")
    return EntityClass(name=entity_class.name, description=description)


def _checked_relation(relation: RelationType, declared: frozenset[str], path: str) -> RelationType:
    _check_name(relation.name, f"{path}.name")
    description = _checked_description(relation.description, f"{path}.description")
    _check_count(relation.signatures, MAX_SIGNATURES, f"{path}.signatures", "signatures")
    for j, signature in enumerate(relation.signatures):
        _check_declared(signature.source_class, declared, f"{path}.signatures[{j}].sourceClass")
        _check_declared(signature.target_class, declared, f"{path}.signatures[{j}].targetClass")
    return RelationType(name=relation.name, description=description, signatures=relation.signatures)


def is_name(name: str) -> bool:
    """A class or relation name a declaration may use: 1-64 characters of letters (any
    script), digits, '_', '.' and '-'."""
    return 1 <= len(name) <= MAX_NAME_LENGTH and all(_name_character(c) for c in name)


def _name_character(character: str) -> bool:
    return character in _NAME_PUNCTUATION or unicodedata.category(character) in _NAME_CATEGORIES


def _check_name(name: str, field: str) -> None:
    if not is_name(name):
        raise InvalidArgument(
            f"{field} {name[:80]!r} must be 1-{MAX_NAME_LENGTH} characters of letters (of any "
            "script), digits, '_', '.' and '-'",
            field=field,
        )


def _checked_description(description: str, field: str) -> str:
    flat = flatten(description)
    if len(flat) > MAX_DESCRIPTION_LENGTH:
        raise InvalidArgument(
            f"{field} is {len(flat)} characters once line breaks are flattened; at most "
            f"{MAX_DESCRIPTION_LENGTH} are allowed",
            field=field,
        )
    return flat


def _check_unique(names: Iterable[str], path: str, noun: str) -> None:
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first:
            field = f"{path}[{i}].name"
            raise InvalidArgument(
                f"{field} {name!r} repeats {path}[{first[name]}].name; each {noun} is "
                "declared once",
                field=field,
            )
        first[name] = i


def _check_declared(name: str, declared: frozenset[str], field: str) -> None:
    if name not in declared:
        raise InvalidArgument(
            f"{field} {name[:80]!r} is not an entity class this declaration declares",
            field=field,
        )


# data: the camelCase shape of the wire's `vocabulary`, the extraction prompt's
# `vocabulary` and the stored Firestore document


def to_data(vocabulary: Vocabulary) -> dict[str, Any]:
    """`{"entityClasses": [{name, description}], "relationTypes": [{name, description,
    signatures: [{sourceClass, targetClass}]}]}`: what formation's prompt receives."""
    return {
        "entityClasses": [
            {"name": c.name, "description": c.description} for c in vocabulary.entity_classes
        ],
        "relationTypes": [
            {
                "name": r.name,
                "description": r.description,
                "signatures": [
                    {"sourceClass": s.source_class, "targetClass": s.target_class}
                    for s in r.signatures
                ],
            }
            for r in vocabulary.relation_types
        ],
    }


def from_data(data: dict[str, Any]) -> Vocabulary:
    """The vocabulary `to_data` wrote (trusted data: no bounds are checked)."""
    return Vocabulary(
        entity_classes=tuple(
            EntityClass(name=c["name"], description=c.get("description", ""))
            for c in data.get("entityClasses") or []
        ),
        relation_types=tuple(
            RelationType(
                name=r["name"],
                description=r.get("description", ""),
                signatures=tuple(
                    Signature(source_class=s["sourceClass"], target_class=s["targetClass"])
                    for s in r.get("signatures") or []
                ),
            )
            for r in data.get("relationTypes") or []
        ),
    )
