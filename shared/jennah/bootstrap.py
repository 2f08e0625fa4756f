"""Wiring: Settings in, the adapters the services use out.

Nothing is built at import time. A `Container` builds each adapter on first
use, once, under a lock (Cloud Functions "lazy globals"), so a cold start
that never queries never loads the embedding model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jennah.auth import (
    LOCAL_ENTERPRISE_ID,
    ROOT_PRINCIPAL,
    LocalCredentials,
    credentials_path,
    read_local_credentials,
    write_local_credentials,
)
from jennah.domain.access import User
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.errors import AlreadyExists, Internal, JennahError
from jennah.ports.embedder import Embedder
from jennah.ports.identity import IdentityStore
from jennah.ports.model import LanguageModel
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.tasks import FormationTask, TaskQueue
from jennah.ports.usage import UsageLedger
from jennah.ports.vocabulary import VocabularyStore
from jennah.services.access import (
    Access,
    IdTokenVerifier,
    create_enterprise,
    hash_secret,
    new_secret,
    user_token,
)
from jennah.services.metered_formation import FormationDeps
from jennah.settings import Settings, get_settings

log = logging.getLogger(__name__)


@runtime_checkable
class _Loadable(Protocol):
    def load(self) -> None: ...


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


def utc_now() -> datetime:
    return datetime.now(UTC)


class Container:
    """The store, identity store, vocabulary store, embedder, formation model and access
    checks of one process, each built lazily once. The identity and vocabulary stores
    share one Firestore client when the control documents are in Firestore.

    Tests pass ready-made fakes; anything not passed is built from `settings`.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: MemoryStore | None = None,
        identity: IdentityStore | None = None,
        vocabularies: VocabularyStore | None = None,
        usage: UsageLedger | None = None,
        operations: OperationStore | None = None,
        tasks: TaskQueue | None = None,
        embedder: Embedder | None = None,
        model: LanguageModel | None = None,
        verifier: IdTokenVerifier | None = None,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.now = now
        self._store = store
        self._identity = identity
        self._vocabularies = vocabularies
        self._usage = usage
        self._operations = operations
        self._tasks = tasks
        self._spanner_database: Any = None
        self._firestore_client: Any = None
        self._embedder = embedder
        self._model = model
        self._verifier = verifier
        self._access: Access | None = None
        self._lock = threading.RLock()

    @property
    def store(self) -> MemoryStore:
        with self._lock:
            if self._store is None:
                self._store = build_store(self.settings, self._spanner)
            return self._store

    @property
    def identity(self) -> IdentityStore:
        with self._lock:
            if self._identity is None:
                self._identity = build_identity(self.settings, self._firestore)
            return self._identity

    @property
    def vocabularies(self) -> VocabularyStore:
        """The memory vocabulary declarations, beside the identities (control documents)."""
        with self._lock:
            if self._vocabularies is None:
                self._vocabularies = build_vocabularies(self.settings, self._firestore)
            return self._vocabularies

    @property
    def usage(self) -> UsageLedger:
        """The usage ledger and billing settings, in the memory store's database."""
        with self._lock:
            if self._usage is None:
                self._usage = build_usage(self.settings, self._spanner)
            return self._usage

    @property
    def operations(self) -> OperationStore:
        """memory:form operations: control documents, beside the identities."""
        with self._lock:
            if self._operations is None:
                self._operations = build_operations(self.settings, self._firestore)
            return self._operations

    @property
    def tasks(self) -> TaskQueue:
        """Where memory:form operations are queued: Cloud Tasks, or the in-process pool
        that runs `form-worker`'s work on this container."""
        with self._lock:
            if self._tasks is None:
                self._tasks = build_tasks(self.settings, self)
            return self._tasks

    def _spanner(self) -> Any:
        """The one Spanner database handle of the store and the ledger, built on first use."""
        with self._lock:
            if self._spanner_database is None:
                self._spanner_database = build_spanner_database(self.settings)
            return self._spanner_database

    def _firestore(self) -> Any:
        """The one Firestore client of the control documents, built on first use."""
        with self._lock:
            if self._firestore_client is None:
                self._firestore_client = build_firestore_client(self.settings)
            return self._firestore_client

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.settings)
            return self._embedder

    @property
    def model(self) -> LanguageModel:
        """The formation model (extraction and reconciliation), per Settings.formation_model."""
        with self._lock:
            if self._model is None:
                self._model = build_model(self.settings)
            return self._model

    @property
    def access(self) -> Access:
        with self._lock:
            if self._access is None:
                verifier = self._verifier or build_verifier(self.settings)
                self._access = Access(self.identity, self.store, self.now, verifier)
            return self._access

    def warm(self) -> None:
        """Build everything now and load the embedding model (for `jnh serve`)."""
        _ = self.access
        _ = self.vocabularies
        embedder = self.embedder
        if isinstance(embedder, _Loadable):
            embedder.load()

    def close(self) -> None:
        if isinstance(self._tasks, _Closable):  # first: the workers still use the stores
            self._tasks.close()
        for adapter in (
            self._store,
            self._identity,
            self._vocabularies,
            self._usage,
            self._operations,
        ):
            if isinstance(adapter, _Closable):
                adapter.close()


SpannerDatabaseFactory = Callable[[], Any]  # the database handle, built on first call


def build_store(settings: Settings, spanner: SpannerDatabaseFactory | None = None) -> MemoryStore:
    """Spanner in production, `<data_dir>/memory.db` locally. `spanner` gives the database
    handle to use (one built from `settings` when None)."""
    if settings.store == "spanner":
        from jennah.adapters.spanner.store import SpannerStore

        return SpannerStore(
            _spanner_database(settings, spanner), timeout_seconds=settings.spanner_timeout_seconds
        )
    from jennah.adapters.sqlite.store import SqliteStore

    return SqliteStore(_local_control_file(settings))


def build_usage(settings: Settings, spanner: SpannerDatabaseFactory | None = None) -> UsageLedger:
    """The usage ledger beside the memory store: in the same Spanner database or SQLite
    file, so admission reads usage and settings in one transaction."""
    if settings.store == "spanner":
        from jennah.adapters.spanner.usage import SpannerUsageLedger

        return SpannerUsageLedger(
            _spanner_database(settings, spanner),
            timeout_seconds=settings.spanner_timeout_seconds,
            default_plan=settings.default_plan,
        )
    from jennah.adapters.sqlite.usage import SqliteUsageLedger

    return SqliteUsageLedger(_local_control_file(settings), default_plan=settings.default_plan)


def build_spanner_database(settings: Settings) -> Any:
    from google.cloud import spanner

    # SPANNER_EMULATOR_HOST, when set, points this client at the emulator.
    client: Any = spanner.Client(project=settings.spanner_project)
    return client.instance(settings.spanner_instance).database(settings.spanner_database)


def _spanner_database(settings: Settings, spanner: SpannerDatabaseFactory | None) -> Any:
    return spanner() if spanner is not None else build_spanner_database(settings)


FirestoreClientFactory = Callable[[], Any]  # the client, built on first call


def build_firestore_client(settings: Settings) -> Any:
    from google.cloud import firestore

    # FIRESTORE_EMULATOR_HOST, when set, points this client at the emulator.
    return firestore.Client(
        project=settings.firestore_project, database=settings.firestore_database
    )


def build_identity(
    settings: Settings, firestore: FirestoreClientFactory | None = None
) -> IdentityStore:
    """Control documents: Firestore in production, the memory store's SQLite file locally.

    `firestore` gives the Firestore client to use (one built from `settings` when None).
    """
    if settings.control == "firestore":
        from jennah.adapters.firestore.identity import FirestoreIdentityStore

        return FirestoreIdentityStore(_firestore_client(settings, firestore))
    from jennah.adapters.sqlite.identity import SqliteIdentityStore

    return SqliteIdentityStore(_local_control_file(settings))


def build_vocabularies(
    settings: Settings, firestore: FirestoreClientFactory | None = None
) -> VocabularyStore:
    """Where vocabularies are declared: beside the identities, as `build_identity` chooses."""
    if settings.control == "firestore":
        from jennah.adapters.firestore.vocabulary import FirestoreVocabularyStore

        return FirestoreVocabularyStore(_firestore_client(settings, firestore))
    from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore

    return SqliteVocabularyStore(_local_control_file(settings))


def build_operations(
    settings: Settings, firestore: FirestoreClientFactory | None = None
) -> OperationStore:
    """Operations are control documents: beside the identities, as `build_identity` chooses."""
    if settings.control == "firestore":
        from jennah.adapters.firestore.operations import FirestoreOperationStore

        return FirestoreOperationStore(_firestore_client(settings, firestore))
    from jennah.adapters.sqlite.operations import SqliteOperationStore

    return SqliteOperationStore(_local_control_file(settings))


def build_tasks(settings: Settings, container: Container) -> TaskQueue:
    """Cloud Tasks (to the form-worker function), or a pool of threads doing its work here.

    The pool also deletes expired operations (what Firestore's TTL policy does in
    production), at most once per SWEEP_INTERVAL, after a delivery.
    """
    if settings.formation_queue == "cloud_tasks":
        from jennah.adapters.cloud_tasks.queue import make_queue

        return make_queue(settings)
    from jennah.adapters.local_queue import LocalTaskQueue
    from jennah.api import logs
    from jennah.services import formation_operations

    sweep = _sweeper(container)

    def deliver(task: FormationTask) -> bool:
        outcome = formation_operations.work(
            task,
            formation_deps(container),
            container.operations,
            formation_operations.worker_id(),
            lease=timedelta(seconds=settings.operation_lease_seconds),
            report=logs.log_formation,
        )
        sweep()
        return outcome is formation_operations.Outcome.ACK

    def abandon(task: FormationTask) -> None:
        formation_operations.abandon(task, container.operations, container.now())

    return LocalTaskQueue(deliver, workers=settings.local_form_workers, on_abandon=abandon)


SWEEP_INTERVAL = timedelta(hours=1)


def _sweeper(container: Container) -> Callable[[], None]:
    """Delete expired operations, at most once per SWEEP_INTERVAL."""
    last: list[datetime] = []

    def sweep() -> None:
        now = container.now()
        if last and now - last[-1] < SWEEP_INTERVAL:
            return
        last[:] = [now]
        swept = container.operations.sweep(now)
        if swept:
            log.info("deleted %d expired formation operations", swept)

    return sweep


def formation_deps(container: Container) -> FormationDeps:
    return FormationDeps(
        store=container.store,
        embedder=container.embedder,
        model=container.model,
        ledger=container.usage,
        now=container.now,
    )


def _firestore_client(settings: Settings, firestore: FirestoreClientFactory | None) -> Any:
    return firestore() if firestore is not None else build_firestore_client(settings)


def _local_control_file(settings: Settings) -> Path:
    """The memory store's SQLite file, which also holds the control documents locally."""
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    return settings.data_dir / "memory.db"


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        from jennah.adapters.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    if settings.embedder == "vertex":
        from jennah.adapters.embedding.vertex import VertexEmbedder

        return VertexEmbedder(
            project=_vertex_project(settings, "JENNAH_EMBEDDER=vertex"),
            location=settings.vertex_location,
            model=settings.vertex_embedding_model,
            base_url=settings.vertex_base_url,
            timeout_seconds=settings.embedding_timeout_seconds,
        )
    from jennah.adapters.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder(cache_dir=settings.model_cache_dir)


def _vertex_project(settings: Settings, what: str) -> str:
    if not settings.vertex_project:
        raise Internal(f"the service is misconfigured: {what} needs JENNAH_VERTEX_PROJECT")
    return settings.vertex_project


def build_model(settings: Settings) -> LanguageModel:
    """`rules` (offline, deterministic: the embedded default) or Gemini on Vertex AI."""
    if settings.formation_model == "vertex":
        from jennah.adapters.models.vertex import VertexModel

        return VertexModel(
            project=_vertex_project(settings, "JENNAH_FORMATION_MODEL=vertex"),
            location=settings.vertex_location,
            model=settings.vertex_model,
            base_url=settings.vertex_base_url,
        )
    from jennah.adapters.models.rules import RulesModel

    return RulesModel()


def build_verifier(settings: Settings) -> IdTokenVerifier | None:
    """Google ID tokens are accepted only when an audience is configured."""
    if settings.oidc_audience is None:
        return None
    from jennah.adapters.google_id_token import GoogleIdTokenVerifier

    return GoogleIdTokenVerifier(settings.oidc_audience)


# The local enterprise `jnh serve` creates is on the Enterprise plan (input cap 100,000
# tokens, 25,000 formation units a month): the embedded default is for development.
LOCAL_BILLING = EnterpriseBilling(enterprise_id=LOCAL_ENTERPRISE_ID, plan=Plan.ENTERPRISE)


@dataclass(frozen=True)
class LocalRoot:
    """The local root credential, and what `ensure_local_root` had to do to have it."""

    credentials: LocalCredentials
    created_enterprise: bool = False
    rotated: bool = False


def ensure_local_root(container: Container) -> LocalRoot:
    """Make `<data_dir>/credentials.json` hold a working root credential of the local
    enterprise: the first start creates the enterprise (on LOCAL_BILLING's plan) and its
    root user; later starts reuse the file; a missing or stale file gets a new root
    credential."""
    data_dir = container.settings.data_dir
    identity = container.identity
    existing = _readable_credentials(container)
    enterprise = identity.get_enterprise(LOCAL_ENTERPRISE_ID)
    if existing is not None and enterprise is not None and _works(container, existing):
        return LocalRoot(existing)
    if enterprise is None:
        try:
            token = create_enterprise(
                identity, LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL, container.now()
            )
        except AlreadyExists:  # another process created it first: take a credential of our own
            token = _rotate_root(identity, container.now())
            created = False
        else:
            created = True
            container.usage.put_billing(LOCAL_BILLING)
    else:
        token, created = _rotate_root(identity, container.now()), False
    credentials = LocalCredentials(token=token)
    write_local_credentials(data_dir, credentials)
    return LocalRoot(credentials, created_enterprise=created, rotated=not created)


def _readable_credentials(container: Container) -> LocalCredentials | None:
    if not credentials_path(container.settings.data_dir).exists():
        return None
    try:
        return read_local_credentials(container.settings.data_dir)
    except JennahError:
        return None


def _works(container: Container, credentials: LocalCredentials) -> bool:
    try:
        caller = container.access.authenticate(f"Bearer {credentials.token}")
    except JennahError:
        return False
    return (caller.enterprise_id, caller.principal) == (LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL)


def _rotate_root(identity: IdentityStore, now: datetime) -> str:
    """A new development credential for the local root user (its bindings stay as they are)."""
    secret = new_secret()
    known = identity.get_user(LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL)
    identity.put_user(
        User(
            enterprise_id=LOCAL_ENTERPRISE_ID,
            principal=ROOT_PRINCIPAL,
            token_hash=hash_secret(secret),
            created_at=known.created_at if known is not None else now,
        )
    )
    return user_token(LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL, secret)


_process_container: Container | None = None
_process_lock = threading.Lock()


def container() -> Container:
    """The process-wide container, built from the environment's Settings on first call."""
    global _process_container
    with _process_lock:
        if _process_container is None:
            _process_container = Container(get_settings())
        return _process_container
