"""The ID-token port: a Google-signed ID token in, the caller's verified email out.

Adapter: `google_id_token` (google-auth against Google's published certificates).
"""

from __future__ import annotations

from typing import Protocol


class IdTokenVerifier(Protocol):
    def verify(self, token: str) -> str:
        """The verified email of a Google-signed ID token; raises Unauthenticated."""
        ...
