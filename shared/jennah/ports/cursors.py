"""Where a long walk records how far it got: the nightly lifecycle pass's cursor.

Control documents: Firestore in production, the memory store's SQLite file in the
embedded default; one contract suite runs against both. A cursor is named (the
lifecycle pass uses `jennah.services.lifecycle.CURSOR`) and replaced whole by `put`.
Cursors belong to no enterprise: only the private lifecycle function uses them.
"""

from __future__ import annotations

from typing import Protocol

from jennah.domain.lifecycle import WalkCursor


class CursorStore(Protocol):
    def get(self, name: str) -> WalkCursor | None:
        """The cursor last put under `name`, or None."""
        ...

    def put(self, name: str, cursor: WalkCursor) -> None:
        """Replace the cursor under `name` in one atomic write."""
        ...
