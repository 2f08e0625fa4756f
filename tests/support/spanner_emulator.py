"""The Cloud Spanner emulator for tests: one emulator and one database per test session.

`spanner_test_database()` uses the emulator at SPANNER_EMULATOR_HOST when set
(`.ci/run` starts one with scripts/spanner-emulator), otherwise starts the
emulator binary itself on a free port and stops it when the interpreter
exits. The database gets schema.sql applied once; tests isolate themselves
by unique scope ids, not by databases.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.api_core import exceptions as google_errors
from google.auth.credentials import AnonymousCredentials
from google.cloud import spanner

from jennah.adapters.spanner.schema import ddl_statements
from tests.support.emulator_process import Emulator, free_port, launch, listening

EMULATOR_BINARY = Path("/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main")
PROJECT = "jennah-test"
INSTANCE = "jennah-test"
INSTANCE_CONFIG = "emulator-config"  # the emulator's one built-in instance config
STARTUP_SECONDS = 30.0
ADMIN_SECONDS = 120.0


def start_emulator(*flags: str) -> Emulator:
    """Start the emulator binary on a free local port and wait until it accepts connections."""
    if not EMULATOR_BINARY.is_file():
        raise RuntimeError(
            f"the Cloud Spanner emulator is not installed: {EMULATOR_BINARY} is missing "
            "(install the google-cloud-sdk cloud-spanner-emulator component, or set "
            "SPANNER_EMULATOR_HOST to a running emulator)"
        )
    host = f"127.0.0.1:{free_port()}"
    command = [str(EMULATOR_BINARY), f"--host_port={host}", *flags]
    return launch("Spanner emulator", command, host, listening, STARTUP_SECONDS)


def create_database(host: str, database_id: str | None = None) -> Any:
    """Create the test instance (if missing) and a new database with schema.sql on `host`."""
    database = emulator_instance(host).database(
        database_id or f"memory-{uuid.uuid4().hex[:12]}", ddl_statements=ddl_statements()
    )
    database.create().result(ADMIN_SECONDS)
    return database


def emulator_instance(host: str) -> Any:
    """The test instance on the emulator at `host`, created if missing."""
    client = emulator_client(host)
    instance = client.instance(
        INSTANCE,
        configuration_name=f"projects/{PROJECT}/instanceConfigs/{INSTANCE_CONFIG}",
        display_name="Jennah tests",
        node_count=1,
    )
    if not instance.exists():
        with contextlib.suppress(google_errors.AlreadyExists):  # another session was first
            instance.create().result(ADMIN_SECONDS)
    return instance


def emulator_client(host: str) -> Any:
    """A Spanner client for the emulator at `host` (not necessarily SPANNER_EMULATOR_HOST)."""
    # Multiplexed sessions for read-write transactions are not supported by the
    # emulator: concurrent transactions then fail with "Transaction not found".
    os.environ["GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW"] = "false"
    # The client prefers SPANNER_EMULATOR_HOST over api_endpoint, and reads it
    # only here; AnonymousCredentials with an api_endpoint give a plain-text channel.
    with _env_without("SPANNER_EMULATOR_HOST"):
        return spanner.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": host},
            disable_builtin_metrics=True,
        )


@contextlib.contextmanager
def _env_without(name: str) -> Iterator[None]:
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


@functools.cache
def session_emulator() -> Emulator:
    """The emulator at SPANNER_EMULATOR_HOST, or one started for this test session."""
    host = os.environ.get("SPANNER_EMULATOR_HOST")
    if not host:
        return start_emulator()
    address, port = host.rsplit(":", 1)
    try:
        socket.create_connection((address, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise RuntimeError(
            f"SPANNER_EMULATOR_HOST={host} does not accept connections ({exc}); start it "
            "with scripts/spanner-emulator start, or unset it to let the tests start one"
        ) from exc
    return Emulator(host)


@functools.cache
def spanner_test_database() -> Any:
    """The session's Spanner database (a google.cloud.spanner Database) with schema.sql."""
    return create_database(session_emulator().host)
