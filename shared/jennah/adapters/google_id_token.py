"""Google-signed ID tokens (production users), verified with `google-auth`: the
`IdTokenVerifier` of `jennah.ports.id_token`.

The verifier checks the signature against Google's published certificates, the
audience (the service's configured OIDC audience), the expiry and the issuer,
and requires a verified email: the caller is `user:<email>`. Certificates are
fetched once and reused for as long as their Cache-Control max-age allows, so
a request does not wait on Google's certificate endpoint.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from jennah.errors import Unauthenticated, Unavailable

GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"
GOOGLE_ISSUERS = frozenset({"accounts.google.com", "https://accounts.google.com"})
CERTS_TIMEOUT_SECONDS = 10.0
DEFAULT_CERTS_MAX_AGE = 300.0
_MAX_AGE = re.compile(r"max-age=(\d+)")


class GoogleIdTokenVerifier:
    """An `IdTokenVerifier`: a Google ID token in, its verified email out."""

    def __init__(
        self,
        audience: str,
        *,
        certs_url: str = GOOGLE_CERTS_URL,
        clock_skew_seconds: int = 10,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._audience = audience
        self._certs_url = certs_url
        self._clock_skew = clock_skew_seconds
        self._monotonic = monotonic
        self._request: Any = None
        self._lock = threading.Lock()

    def verify(self, token: str) -> str:
        """The token's verified email; Unauthenticated when the token is not good."""
        claims = self._claims(token)
        issuer = claims.get("iss")
        if issuer not in GOOGLE_ISSUERS:
            raise Unauthenticated(
                f"the ID token was issued by {str(issuer)[:100]!r}, not by Google",
                reason="ID_TOKEN_INVALID",
            )
        email = claims.get("email")
        if not isinstance(email, str) or not email:
            raise Unauthenticated(
                "the ID token carries no email; request one with the email scope",
                reason="ID_TOKEN_INVALID",
            )
        if claims.get("email_verified") is not True:
            raise Unauthenticated(
                f"the ID token's email {email!r} is not verified", reason="ID_TOKEN_INVALID"
            )
        return email

    def _claims(self, token: str) -> Mapping[str, Any]:
        from google.auth import exceptions
        from google.oauth2 import id_token

        try:
            claims: Mapping[str, Any] = id_token.verify_token(
                token,
                self._transport(),
                audience=self._audience,
                certs_url=self._certs_url,
                clock_skew_in_seconds=self._clock_skew,
            )
        except exceptions.TransportError as exc:
            raise Unavailable(
                f"cannot fetch Google's ID token certificates: {exc}", reason="ID_TOKEN_CERTS"
            ) from None
        except (ValueError, exceptions.GoogleAuthError) as exc:
            raise Unauthenticated(
                f"the ID token is not valid: {_describe(exc)}", reason="ID_TOKEN_INVALID"
            ) from None
        return claims

    def _transport(self) -> Any:
        with self._lock:
            if self._request is None:
                self._request = _caching_request(self._monotonic)
            return self._request


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def _caching_request(monotonic: Callable[[], float]) -> Any:
    """A google.auth transport Request that reuses GET answers for their max-age."""
    from google.auth import transport
    from google.auth.transport import requests as requests_transport

    class CachingRequest(transport.Request):
        def __init__(self) -> None:
            self._inner = requests_transport.Request()
            self._cache: dict[str, tuple[float, Any]] = {}
            self._lock = threading.Lock()

        def __call__(
            self,
            url: Any,
            method: Any = "GET",
            body: Any = None,
            headers: Any = None,
            timeout: Any = None,
            **kwargs: Any,
        ) -> Any:
            timeout = CERTS_TIMEOUT_SECONDS if timeout is None else timeout
            if method != "GET" or body is not None:
                return self._inner(url, method, body, headers, timeout, **kwargs)
            with self._lock:
                cached = self._cache.get(url)
                if cached is not None and cached[0] > monotonic():
                    return cached[1]
            response = self._inner(url, "GET", None, headers, timeout, **kwargs)
            if response.status == 200:
                with self._lock:
                    self._cache[url] = (monotonic() + _max_age(response.headers), response)
            return response

    return CachingRequest()


def _max_age(headers: Mapping[str, str]) -> float:
    control = next((v for k, v in headers.items() if k.lower() == "cache-control"), "")
    found = _MAX_AGE.search(control)
    return float(found.group(1)) if found else DEFAULT_CERTS_MAX_AGE
