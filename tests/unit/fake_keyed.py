"""KeyedMemoryStore in memory: the keyed half of FakeStore (one lock stands in for the
transaction; the same rules as the SQLite and Spanner adapters, domain.keyed)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from jennah.domain import keyed
from jennah.domain.keyed import KeyedMemory, Match
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import NotFound


class FakeKeyedMemories:
    def __init__(self) -> None:
        self._keyed_lock = threading.Lock()
        self._entries: dict[tuple[ScopeRef, str], KeyedMemory] = {}
        self._terms: dict[tuple[ScopeRef, str], frozenset[str]] = {}
        self._links: set[tuple[ScopeRef, str, str]] = set()
        self._keyed_clock = datetime(2001, 1, 1, tzinfo=UTC)

    def _register_keyed_scope(self, scope: ScopeRef, registration: ScopeRecord) -> None:
        """FakeStore's scope registry (overridden there)."""

    def put_keyed(
        self,
        scope: ScopeRef,
        entry: KeyedMemory,
        terms: Sequence[str],
        expected_version: int,
        registration: ScopeRecord | None,
    ) -> KeyedMemory:
        with self._keyed_lock:
            stored = self._entries.get((scope, entry.key))
            keyed.check_write(entry.key, expected_version, stored.version if stored else 0)
            now = self._tick()
            if registration is not None:
                self._register_keyed_scope(scope, registration)
            written = entry.model_copy(
                update={
                    "version": expected_version + 1,
                    "create_time": stored.create_time if stored else now,
                    "update_time": now,
                    "links": [],
                }
            )
            self._entries[(scope, entry.key)] = written
            self._terms[(scope, entry.key)] = frozenset(terms)
            return self._with_links(scope, written)

    def get_keyed(self, scope: ScopeRef, key: str) -> KeyedMemory | None:
        entry = self._entries.get((scope, key))
        return None if entry is None else self._with_links(scope, entry)

    def list_keyed(self, scope: ScopeRef, offset: int, limit: int) -> list[KeyedMemory]:
        mine = keyed.by_recency([e for (s, _), e in self._entries.items() if s == scope])
        return [self._with_links(scope, e) for e in mine[offset : offset + limit]]

    def forget_keyed(self, scope: ScopeRef, key: str) -> bool:
        with self._keyed_lock:
            found = self._entries.pop((scope, key), None) is not None
            self._terms.pop((scope, key), None)
            self._links = {ln for ln in self._links if not (ln[0] == scope and key in ln[1:])}
            return found

    def link_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        with self._keyed_lock:
            for name, field in ((key, "key"), (target, "target")):
                if (scope, name) not in self._entries:
                    raise NotFound(f"keyed memory {name!r} does not exist", field=field)
            pair = (scope, *keyed.link_pair(key, target))
            if pair not in self._links:
                for name in (key, target):
                    if len(self._linked(scope, name)) >= keyed.MAX_LINKS:
                        raise keyed.too_many_links(name)
                self._links.add(pair)
            return self._with_links(scope, self._entries[(scope, key)])

    def unlink_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        with self._keyed_lock:
            if (scope, key) not in self._entries:
                raise NotFound(f"keyed memory {key!r} does not exist", field="key")
            self._links.discard((scope, *keyed.link_pair(key, target)))
            return self._with_links(scope, self._entries[(scope, key)])

    def count_terms(self, scope: ScopeRef, words: Sequence[str], cap: int) -> dict[str, int]:
        held = [terms for (s, _), terms in self._terms.items() if s == scope]
        return {word: min(cap + 1, sum(word in terms for terms in held)) for word in words}

    def match_keyed(
        self, scope: ScopeRef, words: Sequence[str], offset: int, limit: int
    ) -> list[Match]:
        wanted = set(words)
        matches = [
            Match(entry=entry, score=len(wanted & self._terms[(s, key)]))
            for (s, key), entry in self._entries.items()
            if s == scope and wanted & self._terms[(s, key)]
        ]
        return sorted(matches, key=keyed.shortlist_order)[offset : offset + limit]

    def linked_keyed(self, scope: ScopeRef, keys: Sequence[str]) -> dict[str, list[KeyedMemory]]:
        return {
            key: keyed.by_recency(
                [
                    self._with_links(scope, self._entries[(scope, k)])
                    for k in self._linked(scope, key)
                ]
            )
            for key in keys
        }

    def keyed_snapshot(self, mine: Callable[[ScopeRef], bool]) -> dict[str, Any]:
        return {
            "keyed": {k: v.model_dump() for k, v in self._entries.items() if mine(k[0])},
            "keyed_links": {link: True for link in self._links if mine(link[0])},
        }

    def drop_keyed_scope(self, scope: ScopeRef) -> int:
        with self._keyed_lock:
            keys = [k for k in self._entries if k[0] == scope]
            links = {ln for ln in self._links if ln[0] == scope}
            for k in keys:
                del self._entries[k]
                del self._terms[k]
            self._links -= links
            return len(keys) + len(links)

    def _linked(self, scope: ScopeRef, key: str) -> list[str]:
        return sorted(
            (b if a == key else a) for s, a, b in self._links if s == scope and key in (a, b)
        )

    def _with_links(self, scope: ScopeRef, entry: KeyedMemory) -> KeyedMemory:
        return entry.model_copy(update={"links": self._linked(scope, entry.key)})

    def _tick(self) -> datetime:
        self._keyed_clock += timedelta(milliseconds=1)
        return self._keyed_clock


class FakeRecallJudge:
    """RecallJudge answering a fixed verdict (None: the shortlist as it came)."""

    def __init__(self, verdict: Sequence[str] | None = None) -> None:
        self.verdict = verdict
        self.calls: list[tuple[str, list[str]]] = []

    def judge(self, request: str, shortlist: Sequence[KeyedMemory]) -> list[str]:
        keys = [entry.key for entry in shortlist]
        self.calls.append((request, keys))
        return keys if self.verdict is None else list(self.verdict)
