"""GET /v1/{agents|scopes}/{id}/memory/brief: the scope's brief, conditionally.

The answer carries a strong ETag (a hash of the brief's bytes as served, so it changes
when memory changes and when a line's validUntil passes); a request whose If-None-Match
names it (RFC 9110 §13.1.2: a list of entity tags, compared weakly, so W/"x" names "x";
or `*`) is answered 304 Not Modified with no body.
"""

from __future__ import annotations

import re

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.domain.models import BriefVariant
from jennah.services import brief as brief_service

# an entity tag in an If-None-Match list, weak or strong; a bare token is taken as quoted
_TAG = re.compile(r'\s*(?:W/)?("[^"]*"|[^",\s]+)\s*(?:,|$)')
CACHE_CONTROL = "private, no-cache"  # one caller's data; revalidate every time


def get_brief(call: Call) -> Reply:
    services = call.services
    variant = BriefVariant(call.request.variant)
    services.passes.settle(call.scope.ref)  # a pass a write left pending runs first
    served = brief_service.read_brief(services.store, call.scope.ref, variant, services.now())
    headers = {"ETag": served.etag, "Cache-Control": CACHE_CONTROL}
    if none_match(call.headers.get("If-None-Match"), served.etag):
        return Reply(None, headers, status=304)
    return Reply(dto.BriefResponse(brief=served.text, token_count=served.token_count), headers)


def none_match(header: str | None, current: str) -> bool:
    """Whether an If-None-Match header value names the current entity tag."""
    if header is None or not header.strip():
        return False
    if header.strip() == "*":
        return True
    for found in _TAG.finditer(header):
        tag = found.group(1)
        if (tag if tag.startswith('"') else f'"{tag}"') == current:
            return True
    return False
