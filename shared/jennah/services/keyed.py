"""Keyed memory use cases: remember, get, list, forget, link, unlink, recall and search.

The caller (the API) has opened the scope (permission and reach) before any of these run.
Inputs are validated here (domain.keyed: 400 naming the field) before the store is
touched, so bad input changes nothing. Tokens are counted once, when an entry is written,
with the brief's tokenizer. Recall asks the optional judge (one model call) about its
shortlist BEFORE choosing under the budget (a judge that fails leaves the lexical order);
nothing here runs inside a transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TypeVar

from jennah.domain import keyed
from jennah.domain.brief import count_tokens
from jennah.domain.keyed import KeyedMemory, Match, Recall
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import InvalidArgument, JennahError, NotFound
from jennah.ports.keyed import KeyedMemoryStore, RecallJudge
from jennah.services.paging import Page, Paging, fill, page_request

_T = TypeVar("_T")
# A draft entry's times: the store answers the commit time.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def remember(
    store: KeyedMemoryStore,
    scope: ScopeRef,
    key: str,
    content: str,
    expected_version: int,
    registration: ScopeRecord | None = None,
) -> KeyedMemory:
    """Create (expectedVersion 0) or update the entry; the answer is the only evidence."""
    keyed.validate_key(key)
    keyed.validate_content(content)
    keyed.validate_expected_version(expected_version)
    tokens = count_tokens(keyed.counted_text(key, content))
    draft = KeyedMemory(
        key=key,
        content=content,
        version=expected_version + 1,
        token_count=tokens,
        create_time=_EPOCH,
        update_time=_EPOCH,
    )
    terms = keyed.terms(key, content)
    return store.put_keyed(scope, draft, terms, expected_version, registration)


def get(store: KeyedMemoryStore, scope: ScopeRef, key: str) -> KeyedMemory:
    keyed.validate_key(key)
    entry = store.get_keyed(scope, key)
    if entry is None:
        raise not_found(key)
    return entry


def forget(store: KeyedMemoryStore, scope: ScopeRef, key: str) -> None:
    """forget_memory: the entry and every link to or from it; NotFound when absent."""
    keyed.validate_key(key)
    if not store.forget_keyed(scope, key):
        raise not_found(key)


def link(store: KeyedMemoryStore, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
    _check_pair(key, target)
    return store.link_keyed(scope, key, target)


def unlink(store: KeyedMemoryStore, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
    _check_pair(key, target)
    return store.unlink_keyed(scope, key, target)


def list_page(
    store: KeyedMemoryStore, scope: ScopeRef, paging: Paging, caller: str
) -> Page[KeyedMemory]:
    """The scope's entries, most recently updated first (offset pages: an entry updated
    while a client pages moves to the front, as in any newest-first list)."""
    request = page_request("keyedMemories", _binding(scope, caller), paging)
    page = fill(
        request,
        lambda after, limit: _numbered(store.list_keyed(scope, _offset(after), limit), after),
        lambda item: (str(item[0]),),
    )
    return Page([entry for _, entry in page.items], page.next_page_token)


def search(
    store: KeyedMemoryStore, scope: ScopeRef, query: str, paging: Paging, caller: str
) -> Page[Match]:
    """read_memories: entries sharing words with `query`, most words first, then most
    recently updated, then key; paged."""
    words = _scoring(store, scope, keyed.validate_request(query, "query"))
    request = page_request("keyedMemories:search", {**_binding(scope, caller), "query": query},
                           paging)  # fmt: skip
    page = fill(
        request,
        lambda after, limit: _numbered(
            store.match_keyed(scope, words, _offset(after), limit), after
        ),
        lambda item: (str(item[0]),),
    )
    return Page([match for _, match in page.items], page.next_page_token)


def recall(
    store: KeyedMemoryStore,
    scope: ScopeRef,
    request: str,
    token_budget: int,
    judge: RecallJudge | None = None,
) -> Recall:
    """The entries that matter for `request` within `token_budget` (domain.keyed.select)."""
    asked = keyed.validate_request(request, "request")
    keyed.validate_budget(token_budget)
    words = _scoring(store, scope, asked)
    matches = [m.entry for m in store.match_keyed(scope, words, 0, keyed.SHORTLIST)]
    if judge is not None and matches:
        # the judge is an optional refinement: when it fails, the lexical order stands
        with contextlib.suppress(JennahError):
            matches = judged(matches, judge.judge(request, matches))
    chosen = keyed.select(matches, {}, token_budget)
    added = [r.entry.key for r in chosen.memories]
    if not added or chosen.token_count >= token_budget:
        return chosen
    return keyed.select(matches, store.linked_keyed(scope, added), token_budget)


def judged(shortlist: Sequence[KeyedMemory], verdict: Sequence[str]) -> list[KeyedMemory]:
    """The shortlist as the judge ordered it; entries it left out (or keys it made up) go."""
    by_key = {entry.key: entry for entry in shortlist}
    return [by_key[key] for key in dict.fromkeys(verdict) if key in by_key]


def not_found(key: str) -> NotFound:
    return NotFound(
        f"keyed memory {key!r} does not exist",
        reason="KEYED_MEMORY_NOT_FOUND",
        field="key",
        metadata={"key": key},
    )


def _scoring(store: KeyedMemoryStore, scope: ScopeRef, words: list[str]) -> list[str]:
    return keyed.scoring_words(store.count_terms(scope, words, keyed.COMMON_WORD_ENTRIES))


def _check_pair(key: str, target: str) -> None:
    keyed.validate_key(key)
    keyed.validate_key(target, "target")
    if key == target:
        raise InvalidArgument(f"target {target!r} is the entry itself", field="target")


def _binding(scope: ScopeRef, caller: str) -> dict[str, str | None]:
    return {"enterprise": scope.enterprise_id, "scope": scope.scope_id, "caller": caller}


def _offset(after: tuple[str, ...] | None) -> int:
    if after is None:
        return 0
    if not after[0].isdigit():
        raise InvalidArgument("pageToken is not a token this service issued", field="pageToken")
    return int(after[0]) + 1


def _numbered(items: list[_T], after: tuple[str, ...] | None) -> list[tuple[int, _T]]:
    start = _offset(after)
    return [(start + i, item) for i, item in enumerate(items)]
