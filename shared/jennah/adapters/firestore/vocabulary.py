"""The vocabulary store of the production deployment: Firestore control documents.

Documents, per enterprise:

    enterprises/{enterpriseId}/vocabulary/enterprise          the enterprise level
    enterprises/{enterpriseId}/scopeVocabularies/{scopeId}    one per declaring scope

Two collections rather than one with a reserved id for the enterprise level, so
no scope id can ever address the enterprise's document. A document's fields are
the declaration in its wire shape (`entityClasses`, `relationTypes`:
`jennah.domain.vocabulary.to_data`); an empty declaration is a document with
two empty arrays, distinct from absence (no document). `put` is one `set` (the
whole document replaced, never merged); its update time is the declaration's.
Ids are encoded by `documents.document_id`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as google_errors

from jennah.adapters.firestore.calls import DEFAULT_TIMEOUT_SECONDS, CallBounds
from jennah.adapters.firestore.documents import document_id
from jennah.domain.vocabulary import Declaration, Vocabulary, from_data, to_data

ENTERPRISES = "enterprises"
ENTERPRISE_VOCABULARY = "vocabulary"
ENTERPRISE_LEVEL = "enterprise"
SCOPE_VOCABULARIES = "scopeVocabularies"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FirestoreVocabularyStore:
    """VocabularyStore on a google.cloud.firestore.Client (see the module docstring).

    `timeout_seconds` bounds each Firestore call (idempotent ones also retry
    UNAVAILABLE within it); errors surface as `jennah.errors`.
    """

    def __init__(self, client: Any, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._client = client
        self._calls = CallBounds(timeout_seconds)

    def get(self, enterprise_id: str, scope_id: str | None) -> Declaration | None:
        with self._calls.mapped("read vocabulary"):
            snapshot = self._document(enterprise_id, scope_id).get(**self._calls.idempotent)
        if not snapshot.exists:
            return None
        return Declaration(
            vocabulary=from_data(snapshot.to_dict()), update_time=_plain(snapshot.update_time)
        )

    def put(self, enterprise_id: str, scope_id: str | None, vocabulary: Vocabulary) -> Declaration:
        with self._calls.mapped("write vocabulary"):
            result = self._document(enterprise_id, scope_id).set(
                to_data(vocabulary), **self._calls.idempotent
            )
        return Declaration(vocabulary=vocabulary, update_time=_plain(result.update_time))

    def delete(self, enterprise_id: str, scope_id: str | None) -> bool:
        ref = self._document(enterprise_id, scope_id)
        with self._calls.mapped("delete vocabulary"):
            try:
                ref.delete(option=self._client.write_option(exists=True), **self._calls.once)
            except google_errors.NotFound:
                return False
        return True

    def delete_scope(self, enterprise_id: str, scope_id: str) -> None:
        ref = self._document(enterprise_id, scope_id)
        with self._calls.mapped("erase scope vocabulary"):
            ref.delete(**self._calls.idempotent)  # no precondition: absent is fine

    def _document(self, enterprise_id: str, scope_id: str | None) -> Any:
        enterprise = self._client.collection(ENTERPRISES).document(
            document_id(enterprise_id, "enterprise")
        )
        if scope_id is None:
            return enterprise.collection(ENTERPRISE_VOCABULARY).document(ENTERPRISE_LEVEL)
        return enterprise.collection(SCOPE_VOCABULARIES).document(document_id(scope_id, "scopeId"))


def _plain(value: datetime) -> datetime:
    """A plain UTC datetime for the client's DatetimeWithNanoseconds."""
    return _EPOCH + (value - _EPOCH)
