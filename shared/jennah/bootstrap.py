"""Wiring: Settings in, the adapters the services use out.

Nothing is built at import time. A `Container` builds each adapter on first
use, once, under a lock (Cloud Functions "lazy globals"), so a cold start
that never queries never loads the embedding model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jennah.api.logs import log_formation
from jennah.errors import FailedPrecondition, Internal
from jennah.ports.cursors import CursorStore
from jennah.ports.embedder import Embedder
from jennah.ports.id_token import IdTokenVerifier
from jennah.ports.identity import IdentityStore
from jennah.ports.keyed import RecallJudge
from jennah.ports.ledger import UsageLedger
from jennah.ports.model import LanguageModel, ModelResult
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.tasks import FormationTask, TaskQueue
from jennah.ports.vocabulary import VocabularyStore
from jennah.ports.work import Slots
from jennah.services import lifecycle
from jennah.services.access import Access
from jennah.services.formation import Formation
from jennah.services.formation.expiry import ExpirySweep
from jennah.services.formation.use_case import FIRST_POLL_SECONDS, LOCAL_FIRST_POLL_SECONDS
from jennah.settings import Settings, get_settings


@runtime_checkable
class _Loadable(Protocol):
    def load(self) -> None: ...


@runtime_checkable
class _Warmable(Protocol):
    def warm_indexes(self) -> int: ...


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


def utc_now() -> datetime:
    return datetime.now(UTC)


class Container:
    """The services of one process (`jennah.api.context.Services`): the stores, the
    embedder, the formation model and queue, the access checks and the formation use
    case, each built lazily once. The identity, vocabulary and operation stores share
    one Firestore client when the control documents are in Firestore; the memory store
    and the ledger share one Spanner database.

    Tests pass ready-made fakes; anything not passed is built from `settings`.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: MemoryStore | None = None,
        identity: IdentityStore | None = None,
        vocabularies: VocabularyStore | None = None,
        ledger: UsageLedger | None = None,
        operations: OperationStore | None = None,
        tasks: TaskQueue | None = None,
        embedder: Embedder | None = None,
        model: LanguageModel | None = None,
        verifier: IdTokenVerifier | None = None,
        cursors: CursorStore | None = None,
        now: Callable[[], datetime] = utc_now,
        defer_passes: bool = False,
    ) -> None:
        self.settings = settings
        self.now = now
        self._store = store
        self._identity = identity
        self._vocabularies = vocabularies
        self._ledger = ledger
        self._operations = operations
        self._tasks = tasks
        self._spanner_database: Any = None
        self._firestore_client: Any = None
        self._embedder = embedder
        self._model = model
        self._verifier = verifier
        self._cursors = cursors
        # the lifecycle pass after a change: in the request (Cloud Functions), or on one
        # background thread of this process (`jnh serve`, which lives between requests)
        self._defer_passes = defer_passes
        self._passes: lifecycle.Passes | None = None
        self._access: Access | None = None
        self._formation: Formation | None = None
        self.form_slots = Slots(FORMATION_PLATFORM_SLOTS)  # the local pool's (build_tasks)
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
    def ledger(self) -> UsageLedger:
        """The usage ledger and billing settings, in the memory store's database."""
        with self._lock:
            if self._ledger is None:
                self._ledger = build_ledger(self.settings, self._spanner)
            return self._ledger

    @property
    def operations(self) -> OperationStore:
        """memory:form operations: control documents, beside the identities."""
        with self._lock:
            if self._operations is None:
                self._operations = build_operations(self.settings, self._firestore)
            return self._operations

    @property
    def passes(self) -> lifecycle.Passes:
        """What follows a write that changed claims: the scope's lifecycle pass."""
        with self._lock:
            if self._passes is None:
                deferred = self._defer_passes
                passes = lifecycle.DeferredPasses(self.store) if deferred else lifecycle.INLINE
                self._passes = passes
            return self._passes

    @property
    def cursors(self) -> CursorStore:
        """Where the nightly lifecycle walk resumes: control documents, beside the identities."""
        with self._lock:
            if self._cursors is None:
                self._cursors = build_cursors(self.settings, self._firestore)
            return self._cursors

    @property
    def tasks(self) -> TaskQueue:
        """Where memory:form operations are queued: Cloud Tasks, or the in-process pool
        that runs `form-worker`'s work (`Formation.work`) in this process."""
        with self._lock:
            if self._tasks is None:
                self._tasks = build_tasks(self.settings, self)
            return self._tasks

    @property
    def formation(self) -> Formation:
        """The memory:form use case (submit, wait, work) on this process's adapters."""
        with self._lock:
            if self._formation is None:
                model = self.model
                if self.settings.formation_queue == "local" and not _answers_at_once(model):
                    model = _ModelOutsideSlot(model, self.form_slots)
                self._formation = Formation(
                    store=self.store,
                    embedder=self.embedder,
                    model=model,
                    ledger=self.ledger,
                    vocabularies=self.vocabularies,
                    operations=self.operations,
                    queue=self.tasks,
                    now=self.now,
                    model_call_deadline=model_call_deadline(self.settings),
                    lease=timedelta(seconds=self.settings.operation_lease_seconds),
                    report=log_formation,
                    passes=self.passes,
                    first_poll=first_poll(self.settings),
                )
            return self._formation

    @property
    def recall_judge(self) -> RecallJudge | None:
        """Keyed-memory recall's judge: the formation model, when Settings turn it on."""
        if not self.settings.keyed_recall_judge:
            return None
        from jennah.adapters.models.recall_judge import ModelRecallJudge

        return ModelRecallJudge(self.model, model_call_deadline(self.settings))

    @property
    def trace_project(self) -> str:
        return self.settings.spanner_project

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
        """Build everything now, load the embedding model and a local formation model, and
        build the store's in-process search indexes (for `jnh serve`)."""
        _ = self.access
        _ = self.vocabularies
        for adapter in (self.embedder, self.model):
            if isinstance(adapter, _Loadable):
                adapter.load()
        if isinstance(self.store, _Warmable):
            self.store.warm_indexes()

    def close(self) -> None:
        if isinstance(self._tasks, _Closable):  # first: the workers still use the stores
            self._tasks.close()
        if isinstance(self._passes, _Closable):  # then the passes they left pending
            self._passes.close()
        for adapter in (
            self._store,
            self._identity,
            self._vocabularies,
            self._ledger,
            self._operations,
            self._cursors,
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


def build_ledger(settings: Settings, spanner: SpannerDatabaseFactory | None = None) -> UsageLedger:
    """The usage ledger beside the memory store: in the same Spanner database or SQLite
    file, so admission reads usage and settings in one transaction."""
    if settings.store == "spanner":
        from jennah.adapters.spanner.ledger import SpannerUsageLedger

        return SpannerUsageLedger(
            _spanner_database(settings, spanner),
            timeout_seconds=settings.spanner_timeout_seconds,
            default_plan=settings.default_plan,
        )
    from jennah.adapters.sqlite.ledger import SqliteUsageLedger

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


def build_cursors(
    settings: Settings, firestore: FirestoreClientFactory | None = None
) -> CursorStore:
    """Walk cursors are control documents: beside the identities, as `build_identity` chooses."""
    if settings.control == "firestore":
        from jennah.adapters.firestore.cursors import FirestoreCursorStore

        return FirestoreCursorStore(_firestore_client(settings, firestore))
    from jennah.adapters.sqlite.cursors import SqliteCursorStore

    return SqliteCursorStore(_local_control_file(settings))


def build_cloud_tasks_queue(settings: Settings) -> TaskQueue:
    """The formation queue configured by `settings` (JENNAH_TASKS_*, JENNAH_FORM_WORKER_URL,
    CLOUD_TASKS_EMULATOR_HOST)."""
    if not settings.form_worker_url:
        raise FailedPrecondition(
            "the form-worker URL is not configured: set JENNAH_FORM_WORKER_URL"
        )
    from jennah.adapters.cloud_tasks.queue import make_queue

    return make_queue(
        project=settings.tasks_project,
        location=settings.tasks_location,
        queue=settings.tasks_queue,
        worker_url=settings.form_worker_url,
        service_account_email=settings.tasks_service_account or None,
        dispatch_deadline=timedelta(seconds=settings.tasks_dispatch_deadline_seconds),
        emulator_host=settings.cloud_tasks_emulator_host or None,
    )


def build_tasks(settings: Settings, container: Container) -> TaskQueue:
    """Cloud Tasks (to the form-worker function), or a pool of threads running the same
    work here (`Formation.work`); the pool also deletes expired operations, which
    Firestore's TTL policy does in production."""
    if settings.formation_queue == "cloud_tasks":
        return build_cloud_tasks_queue(settings)
    from jennah.adapters.local_queue import LocalTaskQueue
    from jennah.services.formation import Outcome

    sweep = ExpirySweep(container.operations, container.now)

    def deliver(task: FormationTask) -> bool:
        with container.form_slots.held():
            outcome = container.formation.work(task)
        sweep()
        return outcome is Outcome.ACK

    return LocalTaskQueue(
        deliver,
        workers=settings.local_form_workers,
        on_abandon=lambda task: container.formation.abandon(task),
    )


# How many of the local pool's deliveries (`jnh serve`) do platform work at once: the
# pipeline's Python, under this process's one interpreter lock with every request. A
# delivery gives its slot up while a model that takes time answers (_ModelOutsideSlot;
# the rules model answers at once, in Python: it is platform work), so the pool's
# JENNAH_LOCAL_FORM_WORKERS threads still wait on models together. Under 8 clients
# (bench/load.py, rules) one slot took commit p50 from ~43 to ~30 ms and query from ~31 to
# ~22 against 2 or 4 deliveries at once, with more calls answered.
FORMATION_PLATFORM_SLOTS = 1


def _answers_at_once(model: LanguageModel) -> bool:
    from jennah.adapters.models.rules import RulesModel

    return isinstance(model, RulesModel)


class _ModelOutsideSlot:
    """A LanguageModel whose calls give the calling delivery's platform slot up."""

    def __init__(self, model: LanguageModel, slots: Slots) -> None:
        self._model, self._slots = model, slots
        self.name, self.region = model.name, model.region

    def generate(
        self, prompt: str, json_schema: dict[str, Any], max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:  # fmt: skip
        with self._slots.given_up():
            return self._model.generate(prompt, json_schema, max_output_tokens, deadline_seconds)


def first_poll(settings: Settings) -> float:
    """memory:form's first wait between two polls of its operation: longer when the
    workers run in this process, whose settlements wake the wait (`Formation`)."""
    if settings.formation_queue == "local":
        return LOCAL_FIRST_POLL_SECONDS
    return FIRST_POLL_SECONDS


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
    """`rules` (offline, deterministic), `local` (a GGUF model in-process: `jnh serve`'s
    default) or Gemini on Vertex AI."""
    if settings.formation_model == "local":
        from jennah.adapters.models.local import LocalModel

        return LocalModel(
            settings.model_cache_dir,
            threads=settings.local_model_threads,
            draft_tokens=settings.local_model_draft_tokens if settings.local_model_draft else 0,
            grammar_check=settings.local_model_grammar_check,
        )
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


def model_call_deadline(settings: Settings) -> float:
    """Each formation model call's time bound: the local model's own when it answers."""
    if settings.formation_model == "local":
        return settings.local_model_call_timeout_seconds
    return settings.model_call_timeout_seconds


def local_model_missing() -> str | None:
    """Why the local formation model cannot run here (a sentence), or None when it can."""
    from jennah.adapters.models.local_weights import missing

    return missing()


def build_verifier(settings: Settings) -> IdTokenVerifier | None:
    """Google ID tokens are accepted only when an audience is configured."""
    if settings.oidc_audience is None:
        return None
    from jennah.adapters.google_id_token import GoogleIdTokenVerifier

    return GoogleIdTokenVerifier(settings.oidc_audience)


_process_container: Container | None = None
_process_lock = threading.Lock()


def container() -> Container:
    """The process-wide container, built from the environment's Settings on first call."""
    global _process_container
    with _process_lock:
        if _process_container is None:
            _process_container = Container(get_settings())
        return _process_container
