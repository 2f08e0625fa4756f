"""Forming one conversation synchronously, for tests and benchmarks of the formation
itself: `prepare` then `run`, with the clock read once, on receipt (what the use case's
worker does, without an operation, a queue or the ledger)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from jennah.domain.formation import FormationReceipt
from jennah.ports.embedder import Embedder
from jennah.ports.model import LanguageModel
from jennah.ports.store import MemoryStore
from jennah.services.formation import (
    SIMILARITY_THRESHOLD,
    FormationCommand,
    FormationUsage,
    prepare,
    run,
)


def form(
    command: FormationCommand,
    store: MemoryStore,
    embedder: Embedder,
    model: LanguageModel,
    now: Callable[[], datetime],
    *,
    usage: FormationUsage | None = None,
    similarity_threshold: float = SIMILARITY_THRESHOLD,
) -> FormationReceipt:
    """The receipt of forming `command` now (a replay's, for a committed formationKey)."""
    prepared = prepare(command, store, now())
    if isinstance(prepared, FormationReceipt):
        return prepared
    return run(
        prepared,
        store,
        embedder,
        model,
        usage=usage if usage is not None else FormationUsage(),
        similarity_threshold=similarity_threshold,
    )
