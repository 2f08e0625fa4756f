"""HTTP routing shared by every Cloud Function and by `jnh serve`.

Each function serves its own routes only (`COMMIT_ROUTES`, `QUERY_ROUTES`,
`INSPECT_ROUTES`); `jnh serve` mounts `ALL_ROUTES`. A request goes through:
match the path (404) and the method (405), authenticate (401), validate the
path id (400), parse the body or query parameters strictly (400), call one
handler, and map any error once, in `jennah.api.errors`.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import flask
from pydantic import BaseModel, ValidationError

from jennah.api import dto, handlers, logs
from jennah.api.errors import MethodNotAllowed, error_response, from_validation_error
from jennah.bootstrap import Container
from jennah.domain import rules
from jennah.domain.models import ScopeRef
from jennah.errors import Internal, InvalidArgument, JennahError, NotFound

Handler = Callable[[ScopeRef, Any, Container], handlers.Reply]
_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """One operation: a path template such as /v1/scopes/{scopeId}/memory:commit."""

    method: str
    template: str
    handler: Handler
    operation_id: str
    summary: str
    request_model: type[BaseModel] | None = None  # the JSON body
    params_model: type[BaseModel] | None = None  # the query parameters
    response_model: type[BaseModel] | None = None

    @property
    def path_param(self) -> str | None:
        found = _PARAM.search(self.template)
        return found.group(1) if found else None

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compile(self.template)


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> re.Pattern[str]:
    """'/v1/scopes/{scopeId}/memory:query' -> a regex with one named group per parameter."""
    parts = _PARAM.split(template)
    regex = "".join(
        f"(?P<{part}>[^/]*)" if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(f"^{regex}$")


def _memory_routes(
    method: str, verb: str, handler: Handler, summary: str, **models: type[BaseModel]
) -> tuple[Route, ...]:
    return tuple(
        Route(
            method=method,
            template=f"/v1/{collection}/{{{param}}}/memory:{verb}",
            handler=handler,
            operation_id=f"{collection}.memory.{verb}",
            summary=f"{summary} ({noun})",
            **models,
        )
        for collection, param, noun in (
            ("agents", "agentInstanceId", "agent workspace"),
            ("scopes", "scopeId", "subject scope"),
        )
    )


COMMIT_ROUTES = _memory_routes(
    "POST",
    "commit",
    handlers.commit,
    "Write chunks, nodes, edges and supersessions in one atomic transaction",
    request_model=dto.CommitRequest,
    response_model=dto.CommitResponse,
)
QUERY_ROUTES = _memory_routes(
    "POST",
    "query",
    handlers.query,
    "Query memory by meaning and metadata, through the graph, now or as of a valid time",
    request_model=dto.QueryRequest,
    response_model=dto.QueryResponse,
)
INSPECT_ROUTES = _memory_routes(
    "GET",
    "inspect",
    handlers.inspect,
    "List a scope's chunks and, with graph=true, its nodes and edges, page by page",
    params_model=dto.InspectParams,
    response_model=dto.InspectResponse,
)
ALL_ROUTES: tuple[Route, ...] = COMMIT_ROUTES + QUERY_ROUTES + INSPECT_ROUTES


def serve(request: flask.Request, routes: Sequence[Route], container: Container) -> flask.Response:
    """Answer one HTTP request with the routes given; never raises."""
    started = time.perf_counter()
    logs.bind_trace(
        logs.trace_from_header(
            request.headers.get("X-Cloud-Trace-Context"), container.settings.spanner_project
        )
    )
    try:
        reply = dispatch(request, routes, container)
        response = json_response(dto_body(reply.body), 200, reply.headers)
    except JennahError as err:
        response = error_reply(err)
    except Exception as exc:  # anything unexpected: log it, tell the caller nothing inside
        logs.log_exception(f"unhandled error on {request.method} {request.path}", exc)
        response = error_reply(Internal("internal error; the server log has the details"))
    logs.log(
        "INFO" if response.status_code < 500 else "ERROR",
        f"{request.method} {request.path} {response.status_code}",
        httpRequest={
            "requestMethod": request.method,
            "requestUrl": request.path,
            "status": response.status_code,
            "latency": f"{time.perf_counter() - started:.6f}s",
        },
    )
    return response


def dispatch(
    request: flask.Request, routes: Sequence[Route], container: Container
) -> handlers.Reply:
    """Route, authenticate, parse and handle; raises JennahError on any refusal."""
    route, path_id = match(request.method, request.path, routes)
    caller = container.authenticator.authenticate(request.headers.get("Authorization"))
    param = route.path_param or "id"
    rules.validate_identifier(path_id, param)
    scope = ScopeRef(enterprise_id=caller.enterprise_id, scope_id=path_id)
    if route.request_model is not None:
        parsed = parse_body(request.get_data(cache=False), route.request_model)
    elif route.params_model is not None:
        parsed = parse_params(request.args, route.params_model)
    else:
        parsed = None
    return route.handler(scope, parsed, container)


def match(method: str, path: str, routes: Sequence[Route]) -> tuple[Route, str]:
    """The route for a method and path, and the path id; NotFound or MethodNotAllowed."""
    found: list[tuple[Route, str]] = []
    for route in routes:
        hit = route.pattern.match(path)
        if hit is not None:
            found.append((route, next(iter(hit.groupdict().values()), "")))
    if not found:
        raise NotFound(
            f"no such resource: {path}", reason="ROUTE_NOT_FOUND", metadata={"path": path[:200]}
        )
    for route, path_id in found:
        if route.method == method or (method == "HEAD" and route.method == "GET"):
            return route, path_id
    raise MethodNotAllowed(method, path, sorted({route.method for route, _ in found}))


def parse_body(raw: bytes, model: type[BaseModel]) -> BaseModel:
    """Strict proto3-JSON parsing: malformed JSON, unknown fields and bad values are refused."""
    try:
        payload = json.loads(raw or b"{}", parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"Invalid JSON payload: {exc}", reason="MALFORMED_JSON") from None
    if not isinstance(payload, dict):
        raise InvalidArgument(
            "Invalid JSON payload: the body must be a JSON object", reason="MALFORMED_JSON"
        )
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def parse_params(args: Any, model: type[BaseModel]) -> BaseModel:
    """Query parameters, each given at most once, validated like a body."""
    values: dict[str, str] = {}
    for name in args:
        given = args.getlist(name)
        if len(given) > 1:
            raise InvalidArgument(
                f"query parameter {name!r} is given {len(given)} times",
                reason="INVALID_FIELD",
                field=name,
            )
        values[name] = given[0]
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def dto_body(body: BaseModel | dict[str, object]) -> dict[str, object]:
    return dto.dump(body) if isinstance(body, BaseModel) else body


def json_response(
    body: dict[str, object], status: int, headers: dict[str, str] | None = None
) -> flask.Response:
    return flask.Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n",
        status=status,
        headers=headers or {},
        mimetype="application/json",
    )


def error_reply(err: JennahError) -> flask.Response:
    headers: dict[str, str] = {}
    if isinstance(err, MethodNotAllowed):
        headers["Allow"] = ", ".join(err.allowed)
    if err.status == "UNAUTHENTICATED":
        headers["WWW-Authenticate"] = 'Bearer realm="jennah"'
    if err.http_status >= 500:
        logs.log("ERROR", f"{err.status}: {err.message}")
    return json_response(dto.dump(error_response(err)), err.http_status, headers)
