"""The lifecycle ("dream") pass on demand for one scope: `POST
/v1/{agents|scopes}/{id}/memory:dream`, served by the `commit` function. (The nightly
pass over every scope is the private `lifecycle` function: `jennah.api.jobs.lifecycle`.)
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.services import lifecycle


def dream(call: Call) -> Reply:
    """Run the pass over the route's scope now; what it changed."""
    report = lifecycle.dream(call.services.store, call.scope.ref, call.services.now())
    return Reply(
        dto.DreamResponse(
            expired=report.expired,
            promoted=report.promoted,
            decayed=report.decayed,
            brief_changed=report.brief_changed,
        )
    )
