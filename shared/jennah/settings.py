"""One Settings object, read once from the environment (prefix JENNAH_)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from jennah.domain.billing import Plan
from jennah.domain.operations import LEASE


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JENNAH_", extra="ignore")

    # which adapters to wire
    store: Literal["sqlite", "spanner"] = "sqlite"
    # control documents (enterprises, users, API keys, role bindings; later
    # vocabularies, operations): Firestore in production, the SQLite file locally
    control: Literal["sqlite", "firestore"] = "sqlite"
    embedder: Literal["minilm", "hashing", "vertex"] = "minilm"
    # the formation model: "rules" (offline, deterministic: the library's default, fast for
    # tests), "local" (Qwen2.5-Coder-1.5B in-process: `jnh serve`'s default) or "vertex"
    formation_model: Literal["rules", "vertex", "local"] = "rules"
    # keyed-memory recall's optional judge: one call of the formation model over the
    # lexical shortlist (off by default: recall is then lexical only)
    keyed_recall_judge: bool = False

    # embedded default
    data_dir: Path = Path.home() / ".jennah"
    # where the local embedder keeps its quantized model (built on first load) and the
    # local formation model its reassembled weights
    model_cache_dir: Path = Path.home() / ".cache" / "jennah"
    # the local formation model: its threads (0: one per usable core), and each call's
    # time bound (it runs on the CPU, one call at a time: far slower than Vertex AI)
    local_model_threads: int = Field(default=0, ge=0)
    local_model_call_timeout_seconds: float = Field(default=600.0, gt=0)
    # speculative decoding with Qwen2.5-Coder-0.5B as the draft (same answers; off: on 2
    # CPU cores it measured 8-21 % slower) and the tokens it drafts per target forward
    local_model_draft: bool = False
    local_model_draft_tokens: int = Field(default=5, ge=1, le=8)
    # each pick checks the plain greedy token against the grammar and masks the whole
    # vocabulary only when it is not allowed (same answers; off: every pick masks)
    local_model_grammar_check: bool = True

    # Cloud Spanner (SPANNER_EMULATOR_HOST switches the client to the emulator)
    spanner_project: str = "jennah-local"
    spanner_instance: str = "jennah"
    spanner_database: str = "memory"
    spanner_timeout_seconds: float = 30.0

    # Firestore (FIRESTORE_EMULATOR_HOST switches the client to the emulator)
    firestore_project: str = "jennah-local"
    firestore_database: str = "(default)"

    # the plan of an enterprise with no billing settings stored (any but TRIAL)
    default_plan: Plan = Plan.FREE
    # where memory:form operations run: "local", an in-process worker pool (the embedded
    # default), or "cloud_tasks", a Cloud Tasks queue delivering to the form-worker function
    formation_queue: Literal["local", "cloud_tasks"] = "local"
    local_form_workers: int = 4
    # a form-worker's claim on an operation: longer than a formation may run (30 minutes),
    # so a live worker is never overtaken; a crashed one's operation is retried after it
    operation_lease_seconds: float = LEASE.total_seconds()
    # Cloud Tasks: the formation queue and the form-worker its tasks are sent to
    tasks_project: str = "demo-test"
    tasks_location: str = "us-central1"
    tasks_queue: str = "formations"
    form_worker_url: str = ""
    # when set, tasks carry an OIDC token of this service account, audience form_worker_url
    tasks_service_account: str = ""
    tasks_dispatch_deadline_seconds: int = 1800
    # CLOUD_TASKS_EMULATOR_HOST (no JENNAH_ prefix) switches the client to the emulator:
    # unlike the Spanner and Firestore libraries, google-cloud-tasks does not read it itself
    cloud_tasks_emulator_host: str = Field(
        default="",
        validation_alias=AliasChoices("CLOUD_TASKS_EMULATOR_HOST", "cloud_tasks_emulator_host"),
    )

    # Google-signed ID tokens (production users): the audience they must carry.
    # Unset: only API keys and development user credentials are accepted.
    oidc_audience: str | None = None

    # Vertex AI (Gemini for formation, text embeddings); base_url points at a stand-in
    vertex_project: str | None = None
    vertex_location: str = "us-central1"
    vertex_model: str = "gemini-2.5-flash"
    vertex_base_url: str | None = None
    vertex_embedding_model: str = "text-embedding-005"
    model_call_timeout_seconds: float = 30.0
    embedding_timeout_seconds: float = 30.0

    # the CLI's server, and the enterprise it acts in when its Google ID token's user
    # belongs to several (sent as the X-Jennah-Enterprise header). The `mcp` Cloud Function's
    # tools call the API here too; there `{function}` stands for the name of the function
    # serving a route (https://REGION-PROJECT.cloudfunctions.net/jennah-{function}).
    endpoint: str = "http://127.0.0.1:8080"
    enterprise: str | None = None
    # `jnh serve`'s HTTP server (werkzeug's development server only for comparison) and
    # how long it waits for a request to arrive whole, from its first byte
    http_server: Literal["waitress", "werkzeug"] = "waitress"
    request_timeout_seconds: float = 30.0


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
