"""The local server's WSGI app: every function's routes in one Flask app (`jnh serve`)."""

from __future__ import annotations

import flask

from jennah.api import routes
from jennah.api.context import Services
from jennah.api.errors import MethodNotAllowed
from jennah.api.openapi import OPENAPI_PATH, document_text

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def create_app(
    services: Services, mounted: tuple[routes.Route, ...] = routes.ALL_ROUTES
) -> flask.Flask:
    """A Flask app answering `mounted` plus GET /openapi.json; everything else is a
    Google-style 404 or 405."""
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
    return app
