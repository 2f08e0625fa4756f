"""Hostile input at the HTTP edge (issue 13 items 4, 6 and 7): every route's body is
bounded, read whole and parsed strictly before a handler runs; each refusal is a 4xx
Google error body and changes nothing."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jennah.api import bodies, routes
from jennah.errors import NotFound
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_api_errors import error_of, field_of

COMMIT = "/v1/scopes/bot/memory:commit"
QUERY = "/v1/scopes/bot/memory:query"
INSPECT = "/v1/scopes/bot/memory:inspect"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    api = Api.create(tmp_path)
    created = api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"})
    assert created.status_code == 200, created.get_data(as_text=True)
    return api


def nothing_written(api: Api) -> bool:
    listed = api.get(INSPECT, graph="true", allHistory="true")
    assert listed.status_code == 200, listed.get_data(as_text=True)
    body = listed.get_json()
    return not body.get("chunks") and not body.get("nodes")


def reason_of(error: dict[str, Any]) -> str:
    reason: str = error["details"][0]["reason"]
    return reason


# item 4: 400s, not 500s


def test_json_nested_a_thousand_levels_deep_is_invalid_argument(api: Api) -> None:
    deep = '{"chunks": [{"text": "x", "metadata": ' + "[" * 1000 + "]" * 1000 + "}]}"
    error = error_of(api.post(COMMIT, deep), 400, "INVALID_ARGUMENT")
    assert reason_of(error) == "MALFORMED_JSON" and "nested too deeply" in error["message"]
    assert nothing_written(api)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"chunks": [{"text": "a\\ud800b"}]}', "chunks[0].text"),
        ('{"chunks": [{"text": "x", "metadata": {"k\\udc00": "v"}}]}', "chunks[0].metadata"),
        ('{"nodes": [{"nodeId": "n", "label": "\\udbff"}]}', "nodes[0].label"),
    ],
)
def test_an_unpaired_surrogate_is_refused_naming_the_field(api: Api, body: str, field: str) -> None:
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == field and "surrogate" in error["message"]
    assert nothing_written(api)


def test_an_unpaired_surrogate_in_a_query_is_refused(api: Api) -> None:
    body = '{"semantic": {"queryText": "\\ud800"}}'
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "semantic.queryText"


def test_a_surrogate_pair_is_one_character_and_accepted(api: Api) -> None:
    response = api.post(COMMIT, '{"chunks": [{"text": "smile \\ud83d\\ude00"}]}')
    assert response.status_code == 200, response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (COMMIT, {"chunks": [{"text": "x", "validAt": "0001-01-01T00:00:00+14:00"}]},
         "chunks[0].validAt"),
        (COMMIT, {"edges": [{"source": "a", "relation": "R", "target": "b",
                             "validAt": "9999-12-31T23:59:59-14:00"}]}, "edges[0].validAt"),
        (QUERY, {"semantic": {"queryText": "x", "asOfValid": "9999-12-31T23:59:59-14:00"}},
         "semantic.asOfValid"),
    ],
)  # fmt: skip
def test_a_timestamp_that_overflows_in_utc_is_refused_naming_the_field(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    error = error_of(api.post(path, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == field and "0001-01-01T00:00:00Z" in error["message"]
    assert nothing_written(api)


def test_a_body_shorter_than_its_content_length_is_invalid_argument(api: Api) -> None:
    response = api.app.test_client().post(
        COMMIT, input_stream=io.BytesIO(b'{"chunks": [{"text": "x"}]}'), headers=AUTH,
        content_type="application/json", environ_overrides={"CONTENT_LENGTH": "100"},
    )  # fmt: skip
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert reason_of(error) == "TRUNCATED_BODY"
    assert error["details"][0]["metadata"] == {"contentLength": "100", "received": "27"}
    assert nothing_written(api)


# item 6: bounds


class Unseekable(io.RawIOBase):
    """A request stream of unknown length (the test client asks where it ends)."""

    def tell(self) -> int:
        return 0

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0


class Unreadable(Unseekable):
    """A body that must not be read."""

    def readinto(self, buffer: Any) -> int:
        raise AssertionError("the body was read")


class Endless(Unseekable):
    """A chunked body that never ends; counts what was read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.read_bytes > 2 * bodies.MAX_BODY_BYTES:
            raise AssertionError("the body was read past the cap")
        size = len(buffer)
        buffer[:size] = b" " * size
        self.read_bytes += size
        return size


def test_a_content_length_past_the_cap_is_refused_before_reading(api: Api) -> None:
    response = api.app.test_client().post(
        COMMIT, input_stream=Unreadable(), headers=AUTH, content_type="application/json",
        environ_overrides={"CONTENT_LENGTH": str(100 * 1024 * 1024)},
    )  # fmt: skip
    error = error_of(response, 413, "INVALID_ARGUMENT")
    assert reason_of(error) == "PAYLOAD_TOO_LARGE"
    assert error["message"] == "Request payload size exceeds the limit: 10485760 bytes."
    assert error["details"][0]["metadata"] == {"limitBytes": str(bodies.MAX_BODY_BYTES)}


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_cap(api: Api) -> None:
    endless = Endless()
    response = api.app.test_client().post(
        COMMIT, input_stream=endless, headers={**AUTH, "Transfer-Encoding": "chunked"},
        content_type="application/json", environ_overrides={"wsgi.input_terminated": True},
    )  # fmt: skip
    assert reason_of(error_of(response, 413, "INVALID_ARGUMENT")) == "PAYLOAD_TOO_LARGE"
    assert endless.read_bytes <= bodies.MAX_BODY_BYTES + 64 * 1024


def test_a_body_of_tiny_values_is_counted_and_refused_before_it_is_parsed(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def parse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the body was parsed")

    monkeypatch.setattr(bodies, "json", SimpleNamespace(loads=parse))
    body = '{"chunks": [' + ",".join(['{"text":"a"}'] * 700_000) + "]}"  # 8.8 MB
    assert len(body) < bodies.MAX_BODY_BYTES
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert reason_of(error) == "TOO_MANY_VALUES" and "100,000" in error["message"]


def test_commas_inside_strings_do_not_count_as_values(api: Api) -> None:
    text = 'a, [b], {c}, \\"d\\", ' * 700  # ~14,000 characters, ~3,500 commas each
    body = '{"chunks": [' + ",".join(f'{{"text": "{i} {text}"}}' for i in range(40)) + "]}"
    assert body.count(",") > bodies.MAX_JSON_VALUES
    response = api.post(COMMIT, body)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert response.get_json()["chunksWritten"] == "40"


def test_a_list_past_its_bound_is_refused_naming_it(api: Api) -> None:
    body = {"chunks": [{"text": f"t{i}"} for i in range(501)]}
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "chunks" and "at most 500" in error["message"]
    assert nothing_written(api)


def test_operator_in_takes_at_most_100_values(api: Api) -> None:
    def query(count: int) -> Any:
        flt = {"key": "k", "operator": "OPERATOR_IN", "values": [str(i) for i in range(count)]}
        return api.post(QUERY, {"semantic": {"queryText": "x", "filters": [flt]}})

    error = error_of(query(101), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "semantic.filters[0].values"
    assert "at most 100" in error["message"]
    assert query(100).status_code == 200


# item 7: Google error bodies everywhere


@pytest.mark.parametrize("path", ["/nowhere%0A", "/v1/scopes/a%0Ab", "/v1/%0A/x"])
def test_a_path_holding_a_line_break_is_a_google_error(api: Api, path: str) -> None:
    response = api.get(path)
    assert response.mimetype == "application/json"
    error_of(response, response.status_code, "NOT_FOUND")


def test_an_id_holding_a_line_break_is_named(api: Api) -> None:
    response = api.get("/v1/scopes/a%0Ab/memory:inspect")
    assert field_of(error_of(response, 400, "INVALID_ARGUMENT")) == "scopeId"


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND"])
def test_a_method_flask_does_not_know_is_a_google_error(api: Api, method: str) -> None:
    response = api.app.test_client().open(COMMIT, method=method, headers=AUTH)
    error = error_of(response, 404, "NOT_FOUND")
    assert reason_of(error) == "METHOD_NOT_ALLOWED" and response.headers["Allow"] == "POST"


def test_values_are_counted_outside_strings_once_the_rough_count_is_past_the_bound() -> None:
    many = json.dumps({"t": ", " * (bodies.MAX_JSON_VALUES + 1)}).encode()
    assert bodies.count_values(many) == 1


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        (COMMIT, "OPTIONS, POST"),
        ("/v1/scopes/bot", "DELETE, OPTIONS, PATCH"),
        ("/v1/memory/vocabulary", "DELETE, GET, HEAD, OPTIONS, PUT"),
        ("/openapi.json", "GET, HEAD, OPTIONS"),
        # a custom method is not a claim whose id ends ":edit" (no GET of a claim here)
        ("/v1/scopes/bot/memories/chk_1:edit", "OPTIONS, POST"),
        ("/v1/scopes/bot/memories/chk_1", "GET, HEAD, OPTIONS"),
    ],
)
def test_options_lists_the_methods_of_the_path_only(api: Api, path: str, allow: str) -> None:
    response = api.app.test_client().options(path)
    assert (response.status_code, response.headers["Allow"]) == (204, allow)


def test_a_get_of_a_custom_method_is_not_read_as_a_claim(api: Api) -> None:
    response = api.app.test_client().get(
        "/v1/scopes/bot/memories/chk_1:forget", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    error = error_of(response, 404, "NOT_FOUND")
    assert reason_of(error) == "METHOD_NOT_ALLOWED" and response.headers["Allow"] == "POST"


def test_options_on_an_unknown_path_is_not_found(api: Api) -> None:
    response = api.app.test_client().options("/v1/nowhere")
    assert reason_of(error_of(response, 404, "NOT_FOUND")) == "ROUTE_NOT_FOUND"


def test_async_of_memory_form_is_a_json_boolean(api: Api) -> None:
    body = {"turns": [{"role": "TURN_ROLE_USER", "content": "hi"}], "async": 0}
    response = api.app.test_client().post("/v1/agents/bot/memory:form", json=body, headers=AUTH)
    assert field_of(error_of(response, 400, "INVALID_ARGUMENT")) == "async"


def test_matching_by_prefix_first_finds_what_the_patterns_alone_find() -> None:
    def by_patterns(path: str) -> list[tuple[str, str, dict[str, str]]]:
        hits = [(r, r.pattern.match(path)) for r in routes.ALL_ROUTES]
        return [(r.method, r.template, h.groupdict()) for r, h in hits if h is not None]

    def by_router(path: str) -> list[tuple[str, str, dict[str, str]]]:
        try:
            found = routes._routes_at(path, routes.ALL_ROUTES)
        except NotFound:
            return []
        return [(r.method, r.template, params) for r, params in found]

    paths = {"/", "/v1", "/v1/", "/v1/caller\n", "/v1/scopes//memory:query", "/v2/caller"}
    for route in routes.ALL_ROUTES:
        filled = re.sub(r"\{\w+\}", "x-1", route.template)
        paths |= {filled, filled + "/", filled + "\n", filled[:-1], filled + ":edit", "/a" + filled}
        paths.add(re.sub(r"\{\w+\}", "", route.template))
    checked = 0
    for path in sorted(paths):
        expected = by_patterns(path)
        if expected:  # the router keeps the most specific of them
            specific = max(routes._literal_length(t) for _, t, _ in expected)
            expected = [e for e in expected if routes._literal_length(e[1]) == specific]
            checked += 1
        assert by_router(path) == expected, path
    assert checked > len(routes.ALL_ROUTES)
