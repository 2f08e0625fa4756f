"""The local server's WSGI app: every function's routes in one Flask app (`jnh serve`)."""

from __future__ import annotations

import flask
from werkzeug.exceptions import HTTPException

from jennah.api import routes
from jennah.api.context import Services
from jennah.api.errors import MethodNotAllowed, from_http_status
from jennah.api.openapi import OPENAPI_PATH, document_text

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def create_app(
    services: Services, mounted: tuple[routes.Route, ...] = routes.ALL_ROUTES
) -> flask.Flask:
    """A Flask app answering `mounted` plus GET /openapi.json; everything else is a
    Google-style error, Flask's own refusals included (a path its routing does not take,
    such as one holding a line break, and methods it does not know, such as TRACE, go to
    the API's router)."""
    app = flask.Flask("jennah")

    def openapi() -> flask.Response:
        if flask.request.method != "GET":
            err = MethodNotAllowed(flask.request.method, OPENAPI_PATH, ["GET"])
            return routes.error_reply(err)
        return flask.Response(document_text(), mimetype="application/json")

    def api(path: str) -> flask.Response:
        return routes.serve(flask.request, mounted, services)

    app.add_url_rule(OPENAPI_PATH, "openapi", openapi, methods=_METHODS)
    app.add_url_rule("/", "root", api, defaults={"path": ""}, methods=_METHODS)
    app.add_url_rule("/<path:path>", "api", api, methods=_METHODS)

    def refused(exc: HTTPException) -> flask.Response:
        if exc.code in (404, 405):
            return routes.serve(flask.request, mounted, services)
        return routes.error_reply(from_http_status(exc.code or 500, exc.description or ""))

    app.register_error_handler(HTTPException, refused)
    return app
