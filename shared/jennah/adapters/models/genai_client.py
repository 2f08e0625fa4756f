"""google-genai on Vertex AI: one lazily built client, and its failures as jennah errors.

Shared by the Vertex model (`vertex.py`) and the Vertex embedder
(`jennah.adapters.embedding.vertex`). The client is built on first use, not at
import or construction (Cloud Functions "lazy globals"). It never retries: a
call is made once, and its failure is reported.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from google.auth.credentials import Credentials
from google.genai import Client, types
from google.genai import errors as genai_errors

from jennah.adapters.models.bounds import time_bound_exceeded
from jennah.errors import Internal, InvalidArgument, JennahError, ResourceExhausted, Unavailable


@dataclass(frozen=True)
class VertexTarget:
    """Where Vertex AI calls go.

    `base_url` None means Vertex AI's own regional endpoint; set it for a local
    stand-in or a proxy. `credentials` None means application default credentials.
    `trust_env` False ignores proxy variables in the environment (local stand-ins).
    """

    project: str
    location: str
    base_url: str | None = None
    credentials: Credentials | None = None
    trust_env: bool = True


class LazyClient:
    """A `google.genai.Client` for a target, built once on first `get()` (thread-safe)."""

    def __init__(self, target: VertexTarget) -> None:
        self.target = target
        self._client: Client | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._client is not None

    def get(self) -> Client:
        with self._lock:
            if self._client is None:
                self._client = _build(self.target)
            return self._client


def _build(target: VertexTarget) -> Client:
    # Our own httpx client: its timeouts raise httpx.TimeoutException, whichever
    # HTTP backend google-genai would otherwise pick (it prefers httpx2).
    options = types.HttpOptions(
        base_url=target.base_url,
        httpx_client=httpx.Client(trust_env=target.trust_env, follow_redirects=True),
    )
    return Client(
        vertexai=True,
        project=target.project,
        location=target.location,
        credentials=target.credentials,
        http_options=options,
    )


def timeout_ms(seconds: float) -> int:
    """google-genai's HttpOptions.timeout is whole milliseconds."""
    return max(1, math.ceil(seconds * 1000))


@contextmanager
def vertex_errors(call: str, deadline_seconds: float) -> Iterator[None]:
    """Map what google-genai raises during one call to the service's errors."""
    try:
        yield
    except httpx.TimeoutException:
        raise time_bound_exceeded(deadline_seconds, call=call) from None
    except httpx.TransportError as err:
        raise Unavailable(f"the {call} could not reach Vertex AI: {err}") from None
    except genai_errors.APIError as err:
        raise api_error(err, call, deadline_seconds) from None
    except genai_errors.UnknownApiResponseError:
        raise Internal(f"the {call} returned a body that is not JSON") from None


def api_error(err: genai_errors.APIError, call: str, deadline_seconds: float) -> JennahError:
    """An error status Vertex AI answered, as the service's error.

    429 -> RESOURCE_EXHAUSTED; 504 -> DEADLINE_EXCEEDED naming the bound (Vertex
    AI ends a call at the X-Server-Timeout the client sends); other 5xx ->
    UNAVAILABLE; 400 -> INVALID_ARGUMENT (the conversation as sent was refused,
    e.g. too long for the model); any other 4xx (credentials, permissions, an
    unknown model) is the service's configuration: INTERNAL.
    """
    code = int(err.code or 0)
    answered = f"Vertex AI answered {code} {err.status or ''}: {err.message or ''}".strip()
    if code == 504 or err.status == "DEADLINE_EXCEEDED":
        return time_bound_exceeded(deadline_seconds, call=call)
    if code == 429:
        return ResourceExhausted(f"the {call} was refused for quota ({answered})")
    if code >= 500:
        return Unavailable(f"the {call} failed ({answered})")
    if code == 400:
        return InvalidArgument(f"the {call} was refused ({answered})")
    return Internal(f"the {call} failed ({answered})")
