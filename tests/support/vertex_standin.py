"""A local stand-in for Vertex AI: the REST shapes google-genai's Vertex client calls.

    POST /{v1|v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
    POST /{v1|v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:predict

`generateContent` answers from a pluggable LanguageModel (the rules model by
default, or a scripted one): the prompt is the request's text parts, the JSON
schema `generationConfig.responseJsonSchema`, the output bound
`maxOutputTokens`, the time bound the client's `X-Server-Timeout` header. The
answer comes back as `candidates[0].content.parts[0].text` with a finish
reason and `usageMetadata` (plus `thoughtsTokenCount` when `thoughts_tokens`
is set). A model that raises ABORTED at its output bound is answered as
finish reason MAX_TOKENS; DEADLINE_EXCEEDED as 504.

`predict` (what google-genai's `embed_content` calls on Vertex AI for the
text-embedding-* models) embeds `instances[].content` with the hashing
embedder at `parameters.outputDimensionality` (768 when absent, as Vertex
does): deterministic unit vectors, times `embedding_scale` (truncated Vertex
vectors are not unit length); `embedding_dimensions` answers that size
whatever was asked (a model that cannot reduce).

Faults for tests, each consumed by the next request: `slow_next(seconds)`
(answer only after sleeping; a stop ends the sleep), `fail_next(code)` (a
Google error body), `cut_next()` (finish reason MAX_TOKENS, half the text).
Every request is recorded in `requests`. Listens on 127.0.0.1, a free port.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.rules import RulesModel
from jennah.errors import Aborted, DeadlineExceeded, JennahError
from jennah.ports.model import LanguageModel

PROJECT = "standin-project"
LOCATION = "us-central1"
DEFAULT_DIMENSIONS = 768
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_ROUTE = re.compile(
    r"^/(?P<version>v1|v1beta1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/publishers/google/models/(?P<model>[^/:]+):(?P<method>generateContent|predict)$"
)


@dataclass(frozen=True)
class Recorded:
    """One request as the stand-in received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def method(self) -> str:
        return self.path.rsplit(":", 1)[-1]


@dataclass
class _Fault:
    kind: str  # "slow" | "fail" | "cut"
    seconds: float = 0.0
    code: int = 0


@dataclass
class VertexStandIn:
    """The stand-in server. Use as a context manager, or `start()` / `stop()`."""

    model: LanguageModel = field(default_factory=RulesModel)
    thoughts_tokens: int = 0
    embedding_scale: float = 1.0
    embedding_dimensions: int | None = None  # answer this size whatever was asked
    requests: list[Recorded] = field(default_factory=list, init=False)
    _faults: deque[_Fault] = field(default_factory=deque, init=False)
    # Set by the next reset (and by stop): a slow answer still sleeping from an earlier
    # test ends then, unanswered, instead of waking later and taking the next test's model.
    _reset: threading.Event = field(default_factory=threading.Event, init=False)
    _answering: int = field(default=0, init=False)  # requests being answered now
    _idle: threading.Condition = field(default_factory=threading.Condition, init=False)
    _server: ThreadingHTTPServer | None = field(default=None, init=False)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the stand-in is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> VertexStandIn:
        self._reset = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._reset.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> VertexStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self, model: LanguageModel | None = None) -> None:
        """Forget requests, faults and settings; answer from `model` (default: the rules).
        A slow answer still sleeping ends now, unanswered (503)."""
        self._reset.set()
        self._reset = threading.Event()
        self.requests.clear()
        self._faults.clear()
        self.thoughts_tokens = 0
        self.embedding_scale = 1.0
        self.embedding_dimensions = None
        self.model = model if model is not None else RulesModel()

    def slow_next(self, seconds: float) -> None:
        self._faults.append(_Fault("slow", seconds=seconds))

    def fail_next(self, code: int) -> None:
        self._faults.append(_Fault("fail", code=code))

    def cut_next(self) -> None:
        self._faults.append(_Fault("cut"))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being answered; False if one still is after `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._answering == 0, timeout)

    # What the handler calls.

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        with self._idle:
            self._answering += 1
        try:
            return self._answer(path, headers, body)
        finally:
            with self._idle:
                self._answering -= 1
                self._idle.notify_all()

    def _answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append(Recorded(path, headers, body))
        route = _ROUTE.match(path)
        if route is None:
            return _error(404, f"no such route on the Vertex AI stand-in: {path}")
        fault = self._faults.popleft() if self._faults else None
        reset, model = self._reset, self.model  # as they are when the request arrives
        if fault is not None and fault.kind == "slow" and reset.wait(fault.seconds):
            return _error(503, "the stand-in was reset or is stopping")
        if fault is not None and fault.kind == "fail":
            return _error(fault.code, f"the stand-in was told to fail with {fault.code}")
        method = route["method"]
        if method == "generateContent":
            return self._generate(
                model, route["model"], headers, body, cut=bool(fault and fault.kind == "cut")
            )
        return 200, self._predict(body)

    def _generate(
        self,
        language_model: LanguageModel,
        model: str,
        headers: dict[str, str],
        body: dict[str, Any],
        *,
        cut: bool,
    ) -> tuple[int, Any]:
        prompt = "".join(
            part.get("text", "") for c in body.get("contents", []) for part in c.get("parts", [])
        )
        config = body.get("generationConfig", {})
        schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
        bound = int(config.get("maxOutputTokens", 8192))
        deadline = float(_header(headers, "x-server-timeout") or 60)
        try:
            result = language_model.generate(prompt, schema, bound, deadline)
        except Aborted as err:
            usage = (int(err.metadata.get("inputTokens", 0)), bound)
            return 200, self._candidate("", "MAX_TOKENS", usage, model)
        except DeadlineExceeded as err:
            return _error(504, err.message)
        except JennahError as err:
            return _error(500, err.message)
        if cut:
            half = result.text[: len(result.text) // 2]
            return 200, self._candidate(half, "MAX_TOKENS", (result.input_tokens, bound), model)
        usage = (result.input_tokens, result.output_tokens)
        return 200, self._candidate(result.text, "STOP", usage, result.model or model)

    def _candidate(self, text: str, finish: str, usage: tuple[int, int], model: str) -> Any:
        prompt_tokens, output_tokens = usage
        metadata = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": prompt_tokens + output_tokens + self.thoughts_tokens,
        }
        if self.thoughts_tokens:
            metadata["thoughtsTokenCount"] = self.thoughts_tokens
        parts = [{"text": text}] if text else []
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
            "usageMetadata": metadata,
            "modelVersion": model,
        }

    def _vector(self, text: str, dimensions: int) -> list[float]:
        size = self.embedding_dimensions or dimensions
        return [v * self.embedding_scale for v in HashingEmbedder(size).embed(text)]

    def _predict(self, body: dict[str, Any]) -> Any:
        dimensions = int(body.get("parameters", {}).get("outputDimensionality", DEFAULT_DIMENSIONS))
        texts = [str(i.get("content", "")) for i in body.get("instances", [])]
        return {
            "predictions": [
                {
                    "embeddings": {
                        "values": self._vector(t, dimensions),
                        "statistics": {"token_count": len(t.split()), "truncated": False},
                    }
                }
                for t in texts
            ],
            "metadata": {"billableCharacterCount": sum(len(t) for t in texts)},
        }


def _header(headers: dict[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _error(code: int, message: str) -> tuple[int, Any]:
    status = STATUS_NAMES.get(code, "UNKNOWN")
    return code, {"error": {"code": code, "message": message, "status": status}}


def _handler_for(standin: VertexStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            code, payload = standin.answer(self.path, dict(self.headers.items()), json.loads(raw))
            data = json.dumps(payload).encode("utf-8")
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
