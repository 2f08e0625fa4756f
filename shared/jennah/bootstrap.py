"""Wiring: Settings in, the adapters the services use out.

Nothing is built at import time. A `Container` builds each adapter on first
use, once, under a lock (Cloud Functions "lazy globals"), so a cold start
that never queries never loads the embedding model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from jennah.auth import Authenticator, TokenAuthenticator, ensure_local_credentials
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.settings import Settings, get_settings


@runtime_checkable
class _Loadable(Protocol):
    def load(self) -> None: ...


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


def utc_now() -> datetime:
    return datetime.now(UTC)


class Container:
    """The store, embedder and authenticator for one process, each built lazily once.

    Tests pass ready-made fakes; anything not passed is built from `settings`.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: MemoryStore | None = None,
        embedder: Embedder | None = None,
        authenticator: Authenticator | None = None,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.now = now
        self._store = store
        self._embedder = embedder
        self._authenticator = authenticator
        self._lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        with self._lock:
            if self._store is None:
                self._store = build_store(self.settings)
            return self._store

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.settings)
            return self._embedder

    @property
    def authenticator(self) -> Authenticator:
        with self._lock:
            if self._authenticator is None:
                self._authenticator = build_authenticator(self.settings)
            return self._authenticator

    def warm(self) -> None:
        """Build everything now and load the embedding model (for `jnh serve`)."""
        _ = self.authenticator, self.store
        embedder = self.embedder
        if isinstance(embedder, _Loadable):
            embedder.load()

    def close(self) -> None:
        store = self._store
        if isinstance(store, _Closable):
            store.close()


def build_store(settings: Settings) -> MemoryStore:
    if settings.store == "spanner":
        return _spanner_store(settings)
    from jennah.adapters.sqlite.store import SqliteStore

    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    return SqliteStore(settings.data_dir / "memory.db")


def _spanner_store(settings: Settings) -> MemoryStore:
    from google.cloud import spanner

    from jennah.adapters.spanner.store import SpannerStore

    # SPANNER_EMULATOR_HOST, when set, points this client at the emulator.
    client: Any = spanner.Client(project=settings.spanner_project)
    database = client.instance(settings.spanner_instance).database(settings.spanner_database)
    return SpannerStore(database, timeout_seconds=settings.spanner_timeout_seconds)


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        from jennah.adapters.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from jennah.adapters.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder(cache_dir=settings.model_cache_dir)


def build_authenticator(settings: Settings) -> Authenticator:
    return TokenAuthenticator.from_credentials(ensure_local_credentials(settings.data_dir))


_process_container: Container | None = None
_process_lock = threading.Lock()


def container() -> Container:
    """The process-wide container, built from the environment's Settings on first call."""
    global _process_container
    with _process_lock:
        if _process_container is None:
            _process_container = Container(get_settings())
        return _process_container
