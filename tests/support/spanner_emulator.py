"""The Cloud Spanner emulator for tests: one emulator and one database per test session.

`spanner_test_database()` uses the emulator at SPANNER_EMULATOR_HOST when set
(`.ci/run` starts one with scripts/spanner-emulator), otherwise starts the
emulator binary itself on a free port and stops it when the interpreter
exits. The database gets schema.sql applied once; tests isolate themselves
by unique scope ids, not by databases.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.api_core import exceptions as google_errors
from google.auth.credentials import AnonymousCredentials
from google.cloud import spanner

from jennah.adapters.spanner.schema import ddl_statements

EMULATOR_BINARY = Path("/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main")
PROJECT = "jennah-test"
INSTANCE = "jennah-test"
INSTANCE_CONFIG = "emulator-config"  # the emulator's one built-in instance config
STARTUP_SECONDS = 30.0
ADMIN_SECONDS = 120.0


@dataclass
class Emulator:
    """A running emulator: `host` is its gRPC address; `stop()` ends it if we started it."""

    host: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def stop(self) -> None:
        """Stop the emulator we started and delete its log; a no-op for one we did not start."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


def start_emulator(*flags: str) -> Emulator:
    """Start the emulator binary on a free local port and wait until it accepts connections."""
    if not EMULATOR_BINARY.is_file():
        raise RuntimeError(
            f"the Cloud Spanner emulator is not installed: {EMULATOR_BINARY} is missing "
            "(install the google-cloud-sdk cloud-spanner-emulator component, or set "
            "SPANNER_EMULATOR_HOST to a running emulator)"
        )
    host = f"127.0.0.1:{_free_port()}"
    log_path = Path(tempfile.mkstemp(prefix="spanner-emulator-", suffix=".log")[1])
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(EMULATOR_BINARY), f"--host_port={host}", *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    emulator = Emulator(host, process, log_path)
    atexit.register(emulator.stop)
    _wait_until_listening(emulator)
    return emulator


def create_database(host: str, database_id: str | None = None) -> Any:
    """Create the test instance (if missing) and a new database with schema.sql on `host`."""
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
    database = instance.database(
        database_id or f"memory-{uuid.uuid4().hex[:12]}", ddl_statements=ddl_statements()
    )
    database.create().result(ADMIN_SECONDS)
    return database


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_listening(emulator: Emulator) -> None:
    address, port = emulator.host.rsplit(":", 1)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if emulator.process is not None and emulator.process.poll() is not None:
            raise RuntimeError(
                f"the Spanner emulator exited with {emulator.process.returncode} at startup; "
                f"see {emulator.log_path}"
            )
        try:
            with socket.create_connection((address, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    assert emulator.process is not None
    emulator.process.kill()
    emulator.process.wait(timeout=10)
    raise RuntimeError(
        f"the Spanner emulator did not listen on {emulator.host} within "
        f"{STARTUP_SECONDS:g} s; see {emulator.log_path}"
    )
