"""Handlers of PUT, GET and DELETE /v1/memory/vocabulary.

The level is the enterprise when the request names no scope (`scopeId` in the
PUT body; `?scopeId=` on GET and DELETE), else that scope. Unlike the routes
whose path names a scope, these leave authorization to the vocabulary service:
it checks reach over a named scope first (a caller without reach is answered
as though the scope did not exist), then the permission; the enterprise level
needs the permission only.
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.domain.vocabulary import (
    Declaration,
    EntityClass,
    RelationType,
    Signature,
    Vocabulary,
    to_data,
)
from jennah.services import vocabulary as service
from jennah.services.vocabulary import VocabularyView


def declare(call: Call) -> Reply:
    request: dto.DeclareVocabularyRequest = call.request
    services = call.services
    view = service.declare(
        call.caller,
        services.access,
        services.vocabularies,
        request.scope_id,
        None if request.vocabulary is None else vocabulary_in(request.vocabulary),
    )
    return Reply(view_out(view))


def get(call: Call) -> Reply:
    params: dto.VocabularyParams = call.request
    services = call.services
    view = service.get(call.caller, services.access, services.vocabularies, params.scope_id)
    return Reply(view_out(view))


def remove(call: Call) -> Reply:
    params: dto.VocabularyParams = call.request
    services = call.services
    service.remove(call.caller, services.access, services.vocabularies, params.scope_id)
    return Reply(dto.Empty())


# wire -> domain


def vocabulary_in(declared: dto.DeclaredVocabulary) -> Vocabulary:
    return Vocabulary(
        entity_classes=tuple(
            EntityClass(name=c.name, description=c.description) for c in declared.entity_classes
        ),
        relation_types=tuple(relation_in(r) for r in declared.relation_types),
    )


def relation_in(declared: dto.DeclaredRelationType) -> RelationType:
    return RelationType(
        name=declared.name,
        description=declared.description,
        signatures=tuple(
            Signature(source_class=s.source_class, target_class=s.target_class)
            for s in declared.signatures
        ),
    )


# domain -> wire


def view_out(view: VocabularyView) -> dto.VocabularyResponse:
    """Both answers; each is omitted when absent, so the three states stay distinct."""
    return dto.VocabularyResponse(
        declaration=None if view.declaration is None else declaration_out(view.declaration),
        resolved=None if view.resolved is None else vocabulary_out(view.resolved),
    )


def vocabulary_out(vocabulary: Vocabulary) -> dto.Vocabulary:
    return dto.Vocabulary.model_validate(to_data(vocabulary))


def declaration_out(declaration: Declaration) -> dto.VocabularyDeclaration:
    return dto.VocabularyDeclaration.model_validate(
        to_data(declaration.vocabulary) | {"updateTime": declaration.update_time}
    )
