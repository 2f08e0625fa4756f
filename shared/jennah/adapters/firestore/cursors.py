"""The walk cursors of the production deployment: Firestore control documents.

    walkCursors/{name}    afterEnterpriseId, afterScopeId (null at the walk's start),
                          startedAt, finishedAt (null while the walk is unfinished)

A top-level collection: a cursor walks every enterprise, so it belongs to none.
`put` is one `set` (the whole document replaced).
"""

from __future__ import annotations

from typing import Any

from jennah.adapters.firestore.calls import DEFAULT_TIMEOUT_SECONDS, CallBounds
from jennah.adapters.firestore.documents import document_id, from_fields
from jennah.domain.lifecycle import WalkCursor
from jennah.domain.models import ScopeRef

WALK_CURSORS = "walkCursors"


class FirestoreCursorStore:
    """CursorStore on a google.cloud.firestore.Client (see the module docstring)."""

    def __init__(self, client: Any, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._client = client
        self._calls = CallBounds(timeout_seconds)

    def get(self, name: str) -> WalkCursor | None:
        with self._calls.mapped("read walk cursor"):
            snapshot = self._document(name).get(**self._calls.idempotent)
        if not snapshot.exists:
            return None
        fields = snapshot.to_dict()
        enterprise, scope = fields.pop("afterEnterpriseId"), fields.pop("afterScopeId")
        after = None if scope is None else ScopeRef(enterprise_id=enterprise, scope_id=scope)
        return from_fields(WalkCursor, fields).model_copy(update={"after": after})

    def put(self, name: str, cursor: WalkCursor) -> None:
        after = cursor.after
        fields = {
            "afterEnterpriseId": None if after is None else after.enterprise_id,
            "afterScopeId": None if after is None else after.scope_id,
            "startedAt": cursor.started_at,
            "finishedAt": cursor.finished_at,
        }
        with self._calls.mapped("write walk cursor"):
            self._document(name).set(fields, **self._calls.idempotent)

    def _document(self, name: str) -> Any:
        return self._client.collection(WALK_CURSORS).document(document_id(name, "cursor"))
