"""kill -9 of `jnh serve` in the middle of its work, then a restart: what a crash may lose,
strand or leak. The harness of tests/e2e/test_serve_crash.py (a few rounds, in CI) and of
bench/crash.py (10 rounds, with figures).

One round:
1. start `jnh serve` (a subprocess on a free loopback port) on a data directory kept across
   rounds: SQLite, the hashing embedder, and Gemini on the Vertex AI stand-in
   (tests/support/vertex_standin.py) answering from the rules model only when the round
   hurries it (or after `delay` seconds, when one is given), so formations are still
   running or queued when the server dies, however slow the machine;
2. COMMITTERS threads commit three chunks at a time (memory:commit) in a loop, while
   FORMATIONS asynchronous formations (memory:form, "async": true) are submitted at once;
3. once every worker is in a model call and some commits are acknowledged, kill -9;
4. restart on the same directory (that server then serves the next round), with the
   model answering at once, and check what the file holds: every acknowledged commit
   (answered 200) is there, and every commit is all there or absent; every acknowledged
   formation (its operation answered) reaches a done state and commits once; no operation
   is left unfinished, no reservation is held; then a burst of BURST formations is
   admitted (none answered 429) and finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from jennah.adapters.models.rules import RulesModel
from jennah.adapters.sqlite.connection import open_connection
from jennah.ports.model import LanguageModel, ModelResult
from tests.support.vertex_standin import LOCATION, PROJECT, VertexStandIn

COMMITTERS = 3
FORMATIONS = 10  # the in-progress cap of one enterprise (billing.MAX_FORMATIONS_IN_PROGRESS)
BURST = 10
WORKERS = 4  # JENNAH_LOCAL_FORM_WORKERS
MIN_COMMITS_BEFORE_KILL = 10
COMMIT_AGENT = "crash-commits"
FORM_AGENT = "crash-forms"
OPERATION_KEY_PREFIX = "jennah.operation/"
START_SECONDS = 180.0  # the import of the API takes seconds on a busy machine
SETTLE_SECONDS = 120.0  # for every operation to finish after the restart


class SlowRules:
    """The rules model answering once `hurry()` is called (which also ends the waits in
    progress), or after `delay` seconds when one is given."""

    name = "rules-slow"
    region = "local"

    def __init__(self, delay: float | None) -> None:
        self.delay = delay
        self._hurry = threading.Event()
        self._rules: LanguageModel = RulesModel()

    def hurry(self) -> None:
        self._hurry.set()

    def slow_down(self) -> None:
        self._hurry.clear()

    def generate(
        self, prompt: str, schema: dict[str, Any], max_output_tokens: int, deadline_seconds: float
    ) -> ModelResult:
        self._hurry.wait(self.delay)
        return self._rules.generate(prompt, schema, max_output_tokens, deadline_seconds)


@dataclass
class RoundFigures:
    """What one round found. A healthy round has 0 lost, partial, stranded, failed,
    duplicated, reservations left and refused."""

    round: int
    commits_acknowledged: int = 0
    commits_lost: int = 0  # acknowledged, then missing after the restart
    commits_partial: int = 0  # some of a commit's chunks present, not all
    formations_acknowledged: int = 0
    running_at_kill: int = 0
    queued_at_kill: int = 0
    stranded: int = 0  # not done SETTLE_SECONDS after the restart
    failed: int = 0  # done, but not SUCCEEDED
    duplicated: int = 0  # formations committed more than once
    unfinished_in_file: int = 0  # operations of any round not done
    reservations_left: int = 0
    burst_admitted: int = 0
    burst_refused: int = 0
    restart_seconds: float = 0.0  # from the restart until every recovered formation is done
    errors: list[str] = field(default_factory=list)  # unexpected answers

    @property
    def healthy(self) -> bool:
        bad = (
            self.commits_lost, self.commits_partial, self.stranded, self.failed,
            self.duplicated, self.unfinished_in_file, self.reservations_left,
            self.burst_refused, len(self.errors),
        )  # fmt: skip
        return not any(bad) and self.burst_admitted == BURST


class Server:
    """One `jnh serve` process on the rig's data directory."""

    def __init__(self, rig: CrashRig) -> None:
        self.rig = rig
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = rig.workdir / f"serve-{self.port}.log"
        self.log_path = log
        with log.open("w") as sink:
            self.process = subprocess.Popen(
                [*_jnh(), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                 "--data-dir", str(rig.data_dir)],
                env=rig.env(), stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self._wait_listening()
        token = json.loads((rig.data_dir / "credentials.json").read_text())["token"]
        self.headers = {"Authorization": f"Bearer {token}"}

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"jnh serve exited: {self.log_path.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise AssertionError(f"jnh serve did not listen within {START_SECONDS:g} s")

    def kill(self) -> None:
        """kill -9."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.url + path, json=body, headers=self.headers, timeout=30)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, headers=self.headers, timeout=30)


class CrashRig:
    """The data directory, the Vertex AI stand-in and the rounds run against them."""

    def __init__(self, workdir: Path, delay: float | None = None) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.model = SlowRules(delay)
        self.standin = VertexStandIn(model=self.model)
        self._adc = workdir / "adc.json"
        self._server: Server | None = None

    def __enter__(self) -> CrashRig:
        # google-genai asks Application Default Credentials for a token on every call: an
        # authorized-user file whose token is valid until 2099 is never refreshed.
        self._adc.write_text(json.dumps({
            "type": "authorized_user", "client_id": "standin", "client_secret": "standin",
            "refresh_token": "standin", "token": "standin-token",
            "expiry": "2099-01-01T00:00:00Z",
        }))  # fmt: skip
        self.standin.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.model.hurry()
        if self._server is not None:
            self._server.stop()
        self.standin.stop()

    def env(self) -> dict[str, str]:
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JENNAH_", "GOOGLE_", "CLOUDSDK_"))
            and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
            and not k.endswith("_EMULATOR_HOST")
        }
        return inherited | {
            "JENNAH_STORE": "sqlite",
            "JENNAH_EMBEDDER": "hashing",
            "JENNAH_FORMATION_MODEL": "vertex",
            "JENNAH_VERTEX_PROJECT": PROJECT,
            "JENNAH_VERTEX_LOCATION": LOCATION,
            "JENNAH_VERTEX_BASE_URL": self.standin.base_url,
            "JENNAH_LOCAL_FORM_WORKERS": str(WORKERS),
            "GOOGLE_APPLICATION_CREDENTIALS": str(self._adc),
            "XDG_CONFIG_HOME": str(self.workdir / "config"),
        }

    def model_calls(self) -> int:
        return sum(1 for r in self.standin.requests if r.method == "generateContent")

    # One round.

    def round(self, number: int) -> RoundFigures:
        """Work, kill -9, restart, check. The server the restart started serves the next
        round (`close` stops it)."""
        figures = RoundFigures(number)
        self.model.slow_down()
        server = self._server or Server(self)
        self._server = None
        try:
            acked_commits, sent_commits, operation_ids = self._work_then_kill(server, figures)
        finally:
            server.kill()
        figures.commits_acknowledged = len(acked_commits)
        figures.formations_acknowledged = len(operation_ids)
        states = self._operation_states()
        figures.running_at_kill = sum(states.get(o) == "RUNNING" for o in operation_ids)
        figures.queued_at_kill = sum(states.get(o) == "QUEUED" for o in operation_ids)

        self.model.hurry()
        started = time.monotonic()
        self._server = server = Server(self)
        done = self._wait_done(server, operation_ids, figures)
        figures.restart_seconds = time.monotonic() - started
        figures.stranded = len(operation_ids) - len(done)
        figures.failed = sum(state != "SUCCEEDED" for state in done.values())
        self._check_commits(acked_commits, sent_commits, figures)
        self._check_formations(operation_ids, figures)
        self._burst(server, figures)
        return figures

    def _work_then_kill(
        self, server: Server, figures: RoundFigures
    ) -> tuple[list[list[str]], list[list[str]], list[str]]:
        stop = threading.Event()
        acked: list[list[str]] = []
        sent: list[list[str]] = []
        loop = self._commit_loop
        committers = [
            threading.Thread(target=loop, args=(server, figures, w, stop, acked, sent))
            for w in range(COMMITTERS)
        ]
        for thread in committers:
            thread.start()
        calls = self.model_calls()
        answers = _all_at_once([lambda i=i: self._form(server, f"r{figures.round}-{i}")
                                for i in range(FORMATIONS)])  # fmt: skip
        operation_ids = [o for o in (self._operation_id(a, figures) for a in answers) if o]
        _wait_until(
            lambda: (
                self.model_calls() - calls >= min(WORKERS, len(operation_ids))
                and len(acked) >= MIN_COMMITS_BEFORE_KILL
            ),
            "formations running and commits acknowledged",
        )
        server.kill()  # mid-work
        stop.set()
        for thread in committers:
            thread.join(timeout=30)
        return acked, sent, operation_ids

    def _commit_loop(
        self,
        server: Server,
        figures: RoundFigures,
        writer: int,
        stop: threading.Event,
        acked: list[list[str]],
        sent: list[list[str]],
    ) -> None:
        tag = uuid.uuid4().hex[:8]
        n = 0
        while not stop.is_set():
            texts = [f"round {figures.round} writer {writer}-{tag} commit {n} chunk {k}"
                     for k in range(3)]  # fmt: skip
            sent.append(texts)
            try:
                answer = server.post(
                    f"/v1/agents/{COMMIT_AGENT}/memory:commit",
                    {"chunks": [{"text": text} for text in texts]},
                )
            except httpx.TransportError:
                return  # the server is gone
            if answer.status_code == 200:
                acked.append(texts)
            else:
                figures.errors.append(f"commit answered {answer.status_code}: {answer.text}")
            n += 1

    def _form(self, server: Server, tag: str) -> httpx.Response:
        turns = [{"role": "TURN_ROLE_USER", "content": f"I prefer {tag} tea in the morning."}]
        return server.post(f"/v1/agents/{FORM_AGENT}/memory:form", {"turns": turns, "async": True})

    def _operation_id(self, answer: httpx.Response, figures: RoundFigures) -> str | None:
        if answer.status_code != 200:
            figures.errors.append(f"memory:form answered {answer.status_code}: {answer.text}")
            return None
        name: str = answer.json()["name"]
        return name.removeprefix("operations/")

    def _wait_done(
        self, server: Server, operation_ids: list[str], figures: RoundFigures
    ) -> dict[str, str]:
        """The final state of each operation done within SETTLE_SECONDS, read over HTTP."""
        done: dict[str, str] = {}
        deadline = time.monotonic() + SETTLE_SECONDS
        while len(done) < len(operation_ids) and time.monotonic() < deadline:
            for operation_id in set(operation_ids) - done.keys():
                answer = server.get(f"/v1/operations/{operation_id}")
                if answer.status_code != 200:
                    figures.errors.append(f"operation answered {answer.status_code}")
                elif answer.json()["done"]:
                    done[operation_id] = answer.json()["metadata"]["state"]
            time.sleep(0.05)
        return done

    def _check_commits(
        self, acked: list[list[str]], sent: list[list[str]], figures: RoundFigures
    ) -> None:
        stored = {row[0] for row in self._rows(
            "SELECT text FROM memory_records WHERE scope_id = ?", COMMIT_AGENT
        )}  # fmt: skip
        figures.commits_lost = sum(not set(texts) <= stored for texts in acked)
        figures.commits_partial = sum(0 < len(set(texts) & stored) < 3 for texts in sent)

    def _check_formations(self, operation_ids: list[str], figures: RoundFigures) -> None:
        keys = [row[0] for row in self._rows(
            "SELECT formation_key FROM formation_keys WHERE scope_id = ?", FORM_AGENT
        )]  # fmt: skip
        mine = {OPERATION_KEY_PREFIX + o for o in operation_ids}
        figures.duplicated = sum(keys.count(k) > 1 for k in mine)
        figures.unfinished_in_file = len(self._rows(
            "SELECT operation_id FROM formation_operations WHERE state IN ('QUEUED', 'RUNNING')"
        ))  # fmt: skip
        figures.reservations_left = len(self._rows(
            "SELECT formation_id FROM formation_reservations WHERE expires_at > ?",
            int(time.time() * 1_000_000),
        ))  # fmt: skip

    def _burst(self, server: Server, figures: RoundFigures) -> None:
        answers = _all_at_once([lambda i=i: self._form(server, f"r{figures.round}-burst-{i}")
                                for i in range(BURST)])  # fmt: skip
        figures.burst_admitted = sum(a.status_code == 200 for a in answers)
        figures.burst_refused = sum(a.status_code == 429 for a in answers)
        ids = [a.json()["name"].removeprefix("operations/") for a in answers
               if a.status_code == 200]  # fmt: skip
        finished = self._wait_done(server, ids, figures)
        figures.stranded += len(ids) - len(finished)
        figures.failed += sum(state != "SUCCEEDED" for state in finished.values())

    def _operation_states(self) -> dict[str, str]:
        return dict(self._rows("SELECT operation_id, state FROM formation_operations"))  # type: ignore[arg-type]

    def _rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        conn = open_connection(self.data_dir / "memory.db")
        try:
            return [tuple(row) for row in conn.execute(sql, params)]
        finally:
            conn.close()


def _all_at_once(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def _wait_until(check: Callable[[], bool], what: str, timeout: float = START_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.01)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _jnh() -> list[str]:
    script = Path(sys.executable).with_name("jnh")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jennah.cli"]
