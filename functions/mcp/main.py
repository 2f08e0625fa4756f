"""Cloud Function `mcp`: the streamable-HTTP MCP endpoint, POST /agents/{id}, /scopes/{id}
and /scopes/{id}/shared (jennah.mcp.endpoint). Its tools call the API functions at
JENNAH_ENDPOINT (…/jennah-{function}) with the caller's Authorization."""

import functools

import flask
import functions_framework

from jennah.mcp.endpoint import McpEndpoint
from jennah.settings import Settings


@functools.cache
def endpoint() -> McpEndpoint:
    return McpEndpoint(Settings().endpoint)


@functions_framework.http
def mcp(request: flask.Request) -> flask.Response:
    return flask.Response.from_app(endpoint(), request.environ)
