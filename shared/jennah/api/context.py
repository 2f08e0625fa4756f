"""What the HTTP layer needs from its caller: the services of one deployment.

The API never builds an adapter. Its caller (a function entry point in
`functions/*/main.py`, or `jnh serve`) hands it an object with these members,
built from the deployment's settings (`jennah.bootstrap.Container` is the one
implementation; tests pass one holding fakes).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from jennah.ports.cursors import CursorStore
from jennah.ports.embedder import Embedder
from jennah.ports.identity import IdentityStore
from jennah.ports.keyed import RecallJudge
from jennah.ports.ledger import UsageLedger
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.vocabulary import VocabularyStore
from jennah.services.access import Access
from jennah.services.formation import Formation
from jennah.services.lifecycle import Passes


class Services(Protocol):
    """The stores, the embedder, the access checks and the formation use case."""

    @property
    def access(self) -> Access: ...

    @property
    def store(self) -> MemoryStore: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def identity(self) -> IdentityStore: ...

    @property
    def vocabularies(self) -> VocabularyStore: ...

    @property
    def ledger(self) -> UsageLedger: ...

    @property
    def operations(self) -> OperationStore: ...

    @property
    def formation(self) -> Formation: ...

    @property
    def passes(self) -> Passes:
        """The lifecycle pass after a write that changed claims (in the request, or deferred)."""
        ...

    @property
    def cursors(self) -> CursorStore:
        """The nightly lifecycle walk's cursor (the private `lifecycle` function)."""
        ...

    @property
    def recall_judge(self) -> RecallJudge | None:
        """The model call keyed-memory recall may make about its shortlist (None: off)."""
        ...

    @property
    def trace_project(self) -> str:
        """The project named in Cloud Logging trace ids."""
        ...

    def now(self) -> datetime: ...
