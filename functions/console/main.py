"""Cloud Function `console`: the memory console's pages (jennah.console.site), served at the
function's root. The pages call the API functions at JENNAH_ENDPOINT
(…/jennah-{function}), which config.json tells them; they hold no credential of their own."""

import functools

import flask
import functions_framework

from jennah.console.site import ConsoleSite
from jennah.settings import Settings


@functools.cache
def site() -> ConsoleSite:
    return ConsoleSite(mount="", api_base=Settings().endpoint)


@functions_framework.http
def console(request: flask.Request) -> flask.Response:
    return flask.Response.from_app(site(), request.environ)
