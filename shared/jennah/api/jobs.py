"""Scheduled jobs served over HTTP by private functions (Cloud Scheduler targets).

These functions are not part of the public API: Cloud Run IAM admits only the
scheduler's service account (OIDC), so they take no Jennah credential and read
no request body. Each answers 200 with what it did, or a Google error body.
"""

from __future__ import annotations

import flask

from jennah.api import logs
from jennah.api.routes import error_reply, json_response
from jennah.bootstrap import Container
from jennah.errors import Internal, InvalidArgument, JennahError
from jennah.services import usage


def usage_rollup(request: flask.Request, container: Container) -> flask.Response:
    """POST: fold the ledger up to now minus the rollup lag."""
    try:
        if request.method != "POST":
            raise InvalidArgument(f"{request.method} is not allowed; the rollup is run by POST")
        result = usage.rollup(container.usage, container.now())
    except JennahError as err:
        return error_reply(err)
    except Exception as exc:  # log it, tell the caller nothing inside
        logs.log_exception("usage rollup failed", exc)
        return error_reply(Internal("internal error; the server log has the details"))
    logs.log(
        "INFO",
        f"usage rollup: {result.rows_folded} rows folded",
        usageRollup={
            "rowsFolded": result.rows_folded,
            "watermark": result.watermark.isoformat(),
        },
    )
    return json_response(
        {"rowsFolded": result.rows_folded, "watermark": result.watermark.isoformat()}, 200
    )
