"""GoogleIdTokenVerifier for real: google-auth verifies RS256 JWTs against certificates
served by a local HTTP server in Google's format ({"kid": "<X.509 PEM>"})."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt

from jennah.adapters.google_id_token import GoogleIdTokenVerifier
from jennah.api.app import create_app
from jennah.domain.access import Role, RoleBinding, User
from jennah.errors import Unauthenticated, Unavailable
from tests.unit.fakes import make_container

AUDIENCE = "https://jennah.example.com"
KID = "test-key-1"


def _key_pair() -> tuple[str, str]:
    """A private key (PEM) and a self-signed certificate for it (PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jennah-test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return private, cert.public_bytes(serialization.Encoding.PEM).decode()


@dataclass
class Certs:
    url: str
    private_pem: str
    fetches: list[str] = field(default_factory=list)

    def token(self, private_pem: str | None = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": "https://accounts.google.com",
            "aud": AUDIENCE,
            "sub": "1234567890",
            "email": "ana@example.com",
            "email_verified": True,
            "iat": now,
            "exp": now + 3600,
        } | claims
        payload = {k: v for k, v in payload.items() if v is not None}
        signer = crypt.RSASigner.from_string(private_pem or self.private_pem, key_id=KID)
        return jwt.encode(signer, payload).decode()


@pytest.fixture(scope="module")
def certs() -> Iterator[Certs]:
    private_pem, cert_pem = _key_pair()
    body = json.dumps({KID: cert_pem}).encode()
    fetches: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetches.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "public, max-age=3600")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Certs(f"http://127.0.0.1:{server.server_address[1]}/certs", private_pem, fetches)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def verifier(certs: Certs) -> GoogleIdTokenVerifier:
    return GoogleIdTokenVerifier(AUDIENCE, certs_url=certs.url, clock_skew_seconds=0)


def refused(verifier: GoogleIdTokenVerifier, token: str) -> str:
    with pytest.raises(Unauthenticated) as err:
        verifier.verify(token)
    return err.value.message


def test_a_valid_token_gives_its_verified_email(
    certs: Certs, verifier: GoogleIdTokenVerifier
) -> None:
    assert verifier.verify(certs.token()) == "ana@example.com"


def test_the_certificates_are_fetched_once_while_fresh(certs: Certs) -> None:
    verifier = GoogleIdTokenVerifier(AUDIENCE, certs_url=certs.url)
    before = len(certs.fetches)
    for _ in range(3):
        assert verifier.verify(certs.token()) == "ana@example.com"
    assert len(certs.fetches) - before == 1


def test_a_wrong_audience_is_refused(certs: Certs, verifier: GoogleIdTokenVerifier) -> None:
    message = refused(verifier, certs.token(aud="https://other.example.com"))
    assert message.startswith("the ID token is not valid:") and "audience" in message.lower()


def test_an_expired_token_is_refused(certs: Certs, verifier: GoogleIdTokenVerifier) -> None:
    past = int(time.time()) - 7200
    message = refused(verifier, certs.token(iat=past, exp=past + 600))
    assert "expired" in message.lower()


def test_a_bad_signature_is_refused(certs: Certs, verifier: GoogleIdTokenVerifier) -> None:
    forged = certs.token(private_pem=_key_pair()[0])  # same kid, another key
    assert "signature" in refused(verifier, forged).lower()
    good = certs.token()
    header, payload, signature = good.split(".")
    tampered = ".".join([header, payload, signature[:-4] + ("AAAA" if signature[-4:] != "AAAA"
                                                              else "BBBB")])  # fmt: skip
    refused(verifier, tampered)


def test_an_unverified_or_missing_email_is_refused(
    certs: Certs, verifier: GoogleIdTokenVerifier
) -> None:
    assert "not verified" in refused(verifier, certs.token(email_verified=False))
    assert "carries no email" in refused(verifier, certs.token(email=None))


def test_another_issuer_is_refused(certs: Certs, verifier: GoogleIdTokenVerifier) -> None:
    assert "not by Google" in refused(verifier, certs.token(iss="https://evil.example.com"))


@pytest.mark.parametrize("token", ["not-a-jwt", "a.b.c", ""])
def test_garbage_is_refused(verifier: GoogleIdTokenVerifier, token: str) -> None:
    refused(verifier, token)


def test_unreachable_certificates_are_unavailable_not_unauthenticated(certs: Certs) -> None:
    verifier = GoogleIdTokenVerifier(AUDIENCE, certs_url="http://127.0.0.1:9/certs")
    with pytest.raises(Unavailable):
        verifier.verify(certs.token())


def test_the_server_accepts_a_google_user(
    certs: Certs, verifier: GoogleIdTokenVerifier, tmp_path: Path
) -> None:
    container = make_container(tmp_path, verifier=verifier)
    identity = container.identity
    identity.put_user(User(enterprise_id="local", principal="user:ana@example.com"))
    identity.put_binding(RoleBinding(enterprise_id="local", principal="user:ana@example.com",
                                     role=Role.MEMBER, agent_selectors=["bot.*"]))  # fmt: skip
    client = create_app(container).test_client()
    answer = client.get("/v1/caller", headers={"Authorization": f"Bearer {certs.token()}"})
    assert answer.status_code == 200
    assert answer.get_json()["principal"] == "user:ana@example.com"
    stranger = certs.token(email="eve@example.com")
    refusal = client.get("/v1/caller", headers={"Authorization": f"Bearer {stranger}"})
    assert refusal.status_code == 401
    assert "not a user of any enterprise" in refusal.get_json()["error"]["message"]
    wrong = client.get("/v1/caller", headers={"Authorization": f"Bearer {certs.token(aud='x')}"})
    assert wrong.status_code == 401
