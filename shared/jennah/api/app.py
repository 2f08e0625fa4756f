"""The local server's WSGI app: every function's routes in one Flask app (`jnh serve`)."""

from __future__ import annotations

import flask
from werkzeug.exceptions import HTTPException

from jennah.api import routes
from jennah.api.context import Services
from jennah.api.errors import MethodNotAllowed, from_http_status
from jennah.api.openapi import OPENAPI_PATH, document_text

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def create_app(
    services: Services, mounted: tuple[routes.Route, ...] = routes.ALL_ROUTES
) -> flask.Flask:
    """A Flask app answering `mounted` plus GET /openapi.json; everything else is a
    Google-style error, Flask's own refusals included (a path its routing does not take,
    such as one holding a line break, and methods it does not know, such as TRACE, go to
    the API's router)."""
    app = flask.Flask("jennah")

    def openapi() -> flask.Response:
        if flask.request.method == "OPTIONS":
            return routes.options_reply(["GET", "HEAD", "OPTIONS"])
        if flask.request.method != "GET":
            err = MethodNotAllowed(flask.request.method, OPENAPI_PATH, ["GET"])
            return routes.error_reply(err)
        return flask.Response(document_text(), mimetype="application/json")

    def api(path: str) -> flask.Response:
        return routes.serve(flask.request, mounted, services)

    # OPTIONS is answered by the routes (their own methods in Allow), not by Flask (every
    # method of the rule).
    for rule, name, view, defaults in (
        (OPENAPI_PATH, "openapi", openapi, None),
        ("/", "root", api, {"path": ""}),
        ("/<path:path>", "api", api, None),
    ):
        app.add_url_rule(
            rule, name, view, defaults=defaults, methods=_METHODS, provide_automatic_options=False
        )

    def refused(exc: HTTPException) -> flask.Response:
        if exc.code in (404, 405):
            return routes.serve(flask.request, mounted, services)
        return routes.error_reply(from_http_status(exc.code or 500, exc.description or ""))

    app.register_error_handler(HTTPException, refused)
    return app
