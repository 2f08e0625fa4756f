"""The memory card (family-memory-design.md §10, "Seeing what we know"): a scope's claims
one per item, newest first, page by page (AIP-158, `services.paging`), filtered
(`domain.card`: status, type, sensitivity, appliesTo; no status term: all but retracted).

A page token binds the scope and the filter: a token of another scope or another filter
is INVALID_ARGUMENT naming pageToken. Paging is by key (created_at, id), so claims written
while a person pages through are not listed twice nor make others skip: they are newer
than the first page and appear when the card is opened again.
"""

from __future__ import annotations

from datetime import datetime

from jennah.domain.card import CardKey, parse_filter
from jennah.domain.models import MemoryRecord, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services import paging
from jennah.services.paging import Page, Paging

LISTING = "memories"


def list_card(
    store: MemoryStore, scope: ScopeRef, filter_text: str, page: Paging
) -> Page[MemoryRecord]:
    """One page of the card; INVALID_ARGUMENT naming the filter term, pageSize or
    pageToken at fault."""
    claim_filter = parse_filter(filter_text)
    bound_to = {
        "enterprise": scope.enterprise_id,
        "scope": scope.scope_id,
        "filter": claim_filter.canonical(),
    }
    request = paging.page_request(LISTING, bound_to, page, key_length=2)

    def fetch(after: paging.Key | None, limit: int) -> list[MemoryRecord]:
        return store.list_claims_page(scope, claim_filter, _card_key(after), limit)

    return paging.fill(request, fetch, _key)


def _key(record: MemoryRecord) -> paging.Key:
    assert record.created_at is not None, "the store stamps every claim's created_at"
    return (record.created_at.isoformat(), record.id)


def _card_key(key: paging.Key | None) -> CardKey | None:
    if key is None:
        return None
    try:
        created_at = datetime.fromisoformat(key[0])
    except ValueError:
        raise paging.not_issued() from None
    if created_at.tzinfo is None:
        raise paging.not_issued()
    return (created_at, key[1])
