"""The Firestore emulator for tests: one emulator per test session.

`firestore_test_client()` uses the emulator at FIRESTORE_EMULATOR_HOST when
set (scripts/test and .ci/run start one with scripts/firestore-emulator),
otherwise starts the emulator jar itself on a free port and stops it when the
interpreter exits. Tests isolate themselves by unique ids, not by resets;
`reset()` clears every document when a test needs an empty database.
"""

from __future__ import annotations

import functools
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.emulator_process import Emulator, free_port, launch

EMULATOR_JAR = Path(
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
)
EMULATOR_MAIN = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"
PROJECT = "demo-test"
STARTUP_SECONDS = 60.0

# The emulator is local: never send its requests through an HTTP proxy from the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def emulator_command(port: int) -> list[str]:
    """The command that runs the emulator on 127.0.0.1:`port`; RuntimeError if it cannot."""
    java = shutil.which("java")
    if java is None:
        raise RuntimeError(
            "the Firestore emulator needs java, which is not on PATH (install a JRE 11+, "
            "e.g. the openjdk-17-jre-headless package, or set FIRESTORE_EMULATOR_HOST)"
        )
    if not EMULATOR_JAR.is_file():
        raise RuntimeError(
            f"the Firestore emulator is not installed: {EMULATOR_JAR} is missing (install "
            "the google-cloud-cli-firestore-emulator package, or set FIRESTORE_EMULATOR_HOST)"
        )
    return [
        java,
        "-Duser.language=en",  # the emulator only supports English messages
        "-cp",
        str(EMULATOR_JAR),
        EMULATOR_MAIN,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--project_id",
        PROJECT,
    ]


def start_emulator() -> Emulator:
    """Start the emulator on a free local port and wait until it answers HTTP."""
    port = free_port()
    command = emulator_command(port)
    return launch("Firestore emulator", command, f"127.0.0.1:{port}", ready, STARTUP_SECONDS)


@functools.cache
def session_emulator() -> Emulator:
    """The emulator at FIRESTORE_EMULATOR_HOST, or one started for this test session."""
    host = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if not host:
        return start_emulator()
    if not ready(host):
        raise RuntimeError(
            f"FIRESTORE_EMULATOR_HOST={host} does not answer; start it with "
            "scripts/firestore-emulator start, or unset it to let the tests start one"
        )
    return Emulator(host)


def emulator_client(host: str) -> Any:
    """A Firestore client (project demo-test, anonymous) for the emulator at `host`."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import firestore

    # The client reads FIRESTORE_EMULATOR_HOST once, when it is built.
    saved = os.environ.get("FIRESTORE_EMULATOR_HOST")
    os.environ["FIRESTORE_EMULATOR_HOST"] = host
    try:
        return firestore.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
    finally:
        if saved is None:
            del os.environ["FIRESTORE_EMULATOR_HOST"]
        else:
            os.environ["FIRESTORE_EMULATOR_HOST"] = saved


@functools.cache
def firestore_test_client() -> Any:
    """The session's google.cloud.firestore.Client on the emulator."""
    return emulator_client(session_emulator().host)


def reset(host: str | None = None) -> None:
    """Delete every document of the emulator's demo-test database."""
    host = host or session_emulator().host
    url = f"http://{host}/emulator/v1/projects/{PROJECT}/databases/(default)/documents"
    request = urllib.request.Request(url, method="DELETE")
    with _DIRECT.open(request, timeout=30) as response:
        response.read()


def ready(host: str) -> bool:
    """The emulator answers 'Ok' on / once it serves requests."""
    try:
        with _DIRECT.open(f"http://{host}/", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False
