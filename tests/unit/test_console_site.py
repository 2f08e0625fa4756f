"""The console's static serving (jennah.console.site): files with their types, ETags and
the security headers; a missing file or a path trying to leave static/ is the API's 404;
/console redirects to /console/; config.json names the API; the function serves the same."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client, TestResponse

from jennah.console.site import STATIC, ConsoleSite, content_security_policy, with_console

ROOT = Path(__file__).resolve().parents[2]


def other_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the api"]


@pytest.fixture
def client() -> Client:
    return Client(with_console(other_app, ConsoleSite()))


def assert_security_headers(answer: TestResponse) -> None:
    csp = answer.headers["Content-Security-Policy"]
    for directive in ("script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'",
                      "base-uri 'none'", "object-src 'none'", "style-src 'self'"):  # fmt: skip
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/console/", "text/html; charset=utf-8"),
        ("/console/index.html", "text/html; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
        ("/console/js/main.js", "text/javascript; charset=utf-8"),
        ("/console/config.json", "application/json"),
    ],
)
def test_files_are_served_with_their_type_and_the_security_headers(
    client: Client, path: str, content_type: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == content_type
    assert answer.headers["Cache-Control"] == "no-cache"
    assert re.fullmatch(r'"[0-9a-f]{32}"', answer.headers["ETag"])
    assert_security_headers(answer)


def test_an_etag_that_matches_answers_304(client: Client) -> None:
    tag = client.get("/console/js/api.js").headers["ETag"]
    again = client.get("/console/js/api.js", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.data == b""
    assert_security_headers(again)
    stale = client.get("/console/js/api.js", headers={"If-None-Match": '"other"'})
    assert stale.status_code == 200 and stale.data


def test_head_answers_the_headers_only(client: Client) -> None:
    answer = client.head("/console/console.css")
    assert answer.status_code == 200 and answer.data == b""
    assert int(answer.headers["Content-Length"]) == len((STATIC / "console.css").read_bytes())


def test_console_redirects_to_its_folder(client: Client) -> None:
    answer = client.get("/console")
    assert answer.status_code == 301 and answer.headers["Location"] == "/console/"
    assert_security_headers(answer)


def assert_not_found(answer: TestResponse) -> None:
    assert answer.status_code == 404
    assert answer.headers["Content-Type"] == "application/json"
    error = answer.get_json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    (info,) = error["details"]
    assert (info["reason"], info["domain"]) == ("ROUTE_NOT_FOUND", "jennah")
    assert_security_headers(answer)


def test_a_missing_file_is_the_apis_404(client: Client) -> None:
    assert_not_found(client.get("/console/nothing.js"))
    assert_not_found(client.get("/console/js/"))


@pytest.mark.parametrize(
    "path",
    [
        "/console/../pyproject.toml",
        "/console/js/../../site.py",
        "/console/..%2f..%2fsite.py",
        "/console/%2e%2e/site.py",
        "/console//etc/passwd",
        "/console/js/..\\..\\site.py",
        "/console/\x00",
    ],
)
def test_no_path_leaves_the_static_folder(path: str) -> None:
    site = ConsoleSite()
    # PATH_INFO as a server hands it over, already percent-decoded, never normalised
    environ = {"PATH_INFO": path.replace("%2f", "/").replace("%2e", "."), "REQUEST_METHOD": "GET"}
    status: list[str] = []
    body = b"".join(site(environ, lambda s, h: status.append(s)))
    assert status == ["404 NOT_FOUND"]
    assert json.loads(body)["error"]["status"] == "NOT_FOUND"


def test_only_get_and_head(client: Client) -> None:
    answer = client.post("/console/index.html", data="x")
    assert answer.status_code == 404  # as the API answers an unbound method
    assert answer.headers["Allow"] == "GET, HEAD"
    assert answer.get_json()["error"]["details"][0]["reason"] == "METHOD_NOT_ALLOWED"
    assert_security_headers(answer)


def test_other_paths_go_to_the_api(client: Client) -> None:
    for path in ("/v1/caller", "/consoles", "/"):
        answer = client.get(path)
        assert answer.data == b"the api"
        assert "Content-Security-Policy" not in answer.headers


def test_config_names_the_api_base() -> None:
    same = Client(ConsoleSite()).get("/console/config.json").get_json()
    assert same == {"apiBase": ""}
    base = "https://us-central1-p.cloudfunctions.net/jennah-{function}"
    site = ConsoleSite(mount="", api_base=base)
    assert Client(site).get("/config.json").get_json() == {"apiBase": base}
    csp = Client(site).get("/").headers["Content-Security-Policy"]
    assert "connect-src 'self' https://us-central1-p.cloudfunctions.net;" in csp


def test_the_policy_allows_no_inline_script_and_no_form_submission() -> None:
    policy = content_security_policy("")
    assert "default-src 'none'" in policy and "form-action 'none'" in policy


def test_the_pages_hold_no_inline_script_or_style_and_no_innerhtml() -> None:
    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="js/main.js">']
    assert "<style" not in html and not re.search(r"\s(style|on\w+)=", html)
    sinks = re.compile(r"\.(inner|outer)HTML\b|insertAdjacentHTML|document\.write|\beval\(|"
                       r"new Function|setAttribute\(\s*[\"'](style|on)")  # fmt: skip
    for script in (STATIC / "js").glob("*.js"):
        assert not sinks.search(script.read_text()), script.name


def test_the_wheel_carries_the_static_files() -> None:
    patterns = re.search(r"jennah = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.S)
    assert patterns is not None
    shipped = [p for p in re.findall(r'"(console/[^"]+)"', patterns.group(1))]
    package = STATIC.parent.parent
    covered = {p for pattern in shipped for p in package.glob(pattern)}
    assert covered == {p for p in STATIC.rglob("*") if p.is_file()}


def test_the_console_function_serves_the_same_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JENNAH_ENDPOINT", "https://r-p.cloudfunctions.net/jennah-{function}")
    main_py = ROOT / "functions" / "console" / "main.py"
    spec = importlib.util.spec_from_file_location("console_main", main_py)
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    client = Client(main.site())
    index = client.get("/")
    assert index.status_code == 200 and index.data == (STATIC / "index.html").read_bytes()
    assert_security_headers(index)
    assert client.get("/config.json").get_json()["apiBase"].endswith("jennah-{function}")
    assert_not_found(client.get("/../main.py"))


def luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(one: str, other: str) -> float:
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_text_colours_keep_a_contrast_of_at_least_4_5() -> None:
    css = (STATIC / "console.css").read_text()
    colours = dict(re.findall(r"--([\w-]+): (#[0-9a-f]{6});", css))
    white = "#ffffff"
    pairs = [
        ("ink", "paper"), ("ink", "panel"), ("muted", "paper"), ("muted", "panel"),
        ("link", "paper"), ("link", "panel"), ("danger", "paper"), ("accent", "paper"),
    ]  # fmt: skip
    for text, background in pairs:
        assert contrast(colours[text], colours[background]) >= 4.5, (text, background)
    for button in ("accent", "danger"):  # white text on the filled buttons
        assert contrast(white, colours[button]) >= 4.5, button
    assert contrast(colours["focus"], colours["paper"]) >= 3  # the focus ring (non-text)


# Every call the pages make (js/*.js), as a concrete path.
CONSOLE_CALLS = [
    ("GET", "/v1/caller"), ("GET", "/v1/agents"), ("GET", "/v1/scopes"),
    ("GET", "/v1/scopes/s/memories"), ("GET", "/v1/scopes/s/memories/m"),
    ("GET", "/v1/scopes/s/memories/m/evidence"), ("POST", "/v1/scopes/s/memory:readExcerpt"),
    ("POST", "/v1/scopes/s/memory:search"), ("POST", "/v1/scopes/s/memories/m:edit"),
    ("POST", "/v1/scopes/s/memories/m:forget"), ("POST", "/v1/scopes/s/memories:forgetGroup"),
    ("GET", "/v1/scopes/s/memory/brief"), ("GET", "/v1/scopes/s/suppressions"),
    ("DELETE", "/v1/scopes/s/suppressions/x"), ("GET", "/v1/memory/vocabulary"),
    ("GET", "/v1/billing"), ("GET", "/v1/billing/usage/formation-tokens"),
    ("GET", "/v1/operations"),
]  # fmt: skip


def test_every_call_is_a_public_api_route_sent_to_the_function_serving_it() -> None:
    """The pages call the public API only; deployed, js/api.js picks the function of each
    path (JENNAH_ENDPOINT's {function}): the one whose main.py serves that route."""
    from jennah.api import routes
    from tests.support.artifacts import entrypoint

    table = re.findall(r'\[/(.+?)/, "([\w-]+)"\]', (STATIC / "js" / "api.js").read_text())
    serving: dict[tuple[str, str], set[str]] = {}
    for main in (ROOT / "functions").glob("*/main.py"):
        for group in entrypoint(main).route_groups:
            for route in getattr(routes, group):
                serving.setdefault((route.method, route.template), set()).add(main.parent.name)
    for method, path in CONSOLE_CALLS:
        (route,) = [r for r in routes.ALL_ROUTES if r.method == method and r.pattern.match(path)]
        function = next(name for pattern, name in table if re.search(pattern, path))
        assert function in serving[(method, route.template)], (method, path, function)
