"""jennah.client's typed errors, its retry policy and where it finds its credential."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from jennah import errors as service_errors
from jennah.auth import LocalCredentials, write_local_credentials
from jennah.client import errors
from jennah.client.credentials import Connection, SavedLogin, login_path
from jennah.client.retry import Retry
from jennah.errors import HTTP_STATUS


def google_error(status: str, code: int, reason: str = "SOME_REASON") -> httpx.Response:
    body = {
        "error": {
            "code": code, "status": status, "message": f"{status} happened",
            "details": [{
                "@type": errors.ERROR_INFO, "reason": reason, "domain": "jennah",
                "metadata": {"field": "query"},
            }],
        }
    }  # fmt: skip
    return httpx.Response(code, content=json.dumps(body).encode())


@pytest.mark.parametrize("status", sorted(HTTP_STATUS))
def test_each_status_is_its_own_class_and_the_services_one(status: str) -> None:
    err = errors.from_response(google_error(status, HTTP_STATUS[status]))
    assert type(err) is errors.BY_STATUS[status]
    assert (err.status, err.code, err.message) == (
        status,
        HTTP_STATUS[status],
        f"{status} happened",
    )
    assert (err.reason, err.metadata) == ("SOME_REASON", {"field": "query"})
    assert err.details[0]["domain"] == "jennah"
    same = [cls for cls in vars(service_errors).values() if getattr(cls, "status", None) == status]
    if same:
        assert isinstance(err, tuple(same))  # `except jennah.errors.NotFound` catches it


def test_an_answer_that_is_no_google_error_is_unknown() -> None:
    err = errors.from_response(httpx.Response(502, content=b"<html>bad gateway</html>"))
    assert isinstance(err, errors.Unknown)
    assert (err.status, err.code, err.message) == ("UNKNOWN", 502, "unexpected HTTP 502 answer")


def test_field_violations_are_read_from_a_bad_request() -> None:
    detail = {
        "@type": errors.BAD_REQUEST,
        "fieldViolations": [{"field": "a", "description": "x"}, {"field": "b", "description": "y"}],
    }
    err = errors.from_status({"status": "INVALID_ARGUMENT", "details": [detail]}, 400)
    assert err.field_violations == [("a", "x"), ("b", "y")]


def test_backoff_grows_with_full_jitter_up_to_the_maximum() -> None:
    policy = Retry(initial=1.0, multiplier=2.0, maximum=5.0)
    delays = policy.delays()
    for backoff in (1.0, 2.0, 4.0, 5.0, 5.0):
        assert 0.0 <= next(delays) <= min(backoff * 2.0, 5.0)
    samples = [next(Retry(initial=1.0).delays()) for _ in range(200)]
    assert len(set(samples)) > 100  # jittered, not a fixed schedule


def test_only_retryable_errors_are_retried() -> None:
    slept: list[float] = []
    policy = Retry(initial=0.01, maximum=0.01, deadline=60, sleep=slept.append)
    answers: list[Exception] = [
        errors.Unavailable("down", code=503),
        errors.Aborted("conflict", code=409),
    ]

    def attempt() -> str:
        if answers:
            raise answers.pop(0)
        return "ok"

    assert policy.call(attempt) == "ok" and len(slept) == 2
    with pytest.raises(errors.InvalidArgument):
        policy.call(lambda: (_ for _ in ()).throw(errors.InvalidArgument("no", code=400)))
    assert len(slept) == 2


def test_the_credential_comes_from_where_jnh_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JENNAH_TOKEN", "JENNAH_ENDPOINT", "JENNAH_ENTERPRISE", "JENNAH_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    data = tmp_path / "data"
    write_local_credentials(
        data, LocalCredentials(enterprise_id="local", principal="user:root", token="ju_local")
    )
    assert Connection.resolve(data_dir=data).token == "ju_local"
    login_path().parent.mkdir(parents=True)
    login_path().write_text(SavedLogin(token="ju_saved").model_dump_json())
    assert Connection.resolve(data_dir=data).token == "ju_saved"
    monkeypatch.setenv("JENNAH_TOKEN", "ju_env")
    monkeypatch.setenv("JENNAH_ENDPOINT", "http://elsewhere:1")
    monkeypatch.setenv("JENNAH_ENTERPRISE", "acme")
    found = Connection.resolve(data_dir=data)
    assert (found.token, found.endpoint, found.enterprise) == (
        "ju_env",
        "http://elsewhere:1",
        "acme",
    )
    given = Connection.resolve("http://given:2", "ju_given", enterprise="e2", data_dir=data)
    assert (given.endpoint, given.token, given.enterprise) == ("http://given:2", "ju_given", "e2")
