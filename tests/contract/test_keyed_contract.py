"""Keyed memory (issue 18, keyed-memory-and-recall.md) on BOTH stores, through the service.

One test per row of the spec's field table, the conflict race (threads and a barrier),
the 12-link bound, recall's budget and tie-break, links followed only while space
remains, and forget removing links both ways.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from jennah.domain import keyed as rules
from jennah.domain.access import ScopeKind
from jennah.domain.brief import count_tokens
from jennah.domain.keyed import KeyedMemory
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import Aborted, AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from jennah.ports.store import MemoryStore
from jennah.services import keyed
from jennah.services.paging import Paging
from tests.contract.conftest import row_counts


def put(
    store: MemoryStore, scope: ScopeRef, key: str, content: str, version: int = 0
) -> KeyedMemory:
    return keyed.remember(store, scope, key, content, version)


def tokens(key: str, content: str) -> int:
    return count_tokens(rules.counted_text(key, content))


# the field table: key


@pytest.mark.parametrize("key", ["harbor-status-reports", "a", "x_1-y", "k" * 100, "0123"])
def test_a_key_of_lowercase_letters_digits_dash_underscore_up_to_100_is_kept(
    store: MemoryStore, scope: ScopeRef, key: str
) -> None:
    entry = put(store, scope, key, "Some content")
    assert (entry.key, entry.version) == (key, 1)
    assert keyed.get(store, scope, key).content == "Some content"


@pytest.mark.parametrize("key", ["", "Harbor", "a b", "a.b", "k" * 101, "é", "a:b"])
def test_any_other_key_is_invalid_argument_naming_key_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef, key: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        put(store, scope, key, "Some content")
    assert caught.value.metadata["field"] == "key"
    assert keyed.list_page(store, scope, Paging(), "user:a").items == []


# content


def test_content_of_4000_characters_is_kept(store: MemoryStore, scope: ScopeRef) -> None:
    content = "word " * 799 + "words"  # 4,000 characters
    assert len(content) == rules.MAX_CONTENT_CHARS
    assert put(store, scope, "long", content).content == content


@pytest.mark.parametrize("content", ["", "   \n", "x" * 4001])
def test_empty_or_too_long_content_is_invalid_argument_naming_content(
    store: MemoryStore, scope: ScopeRef, content: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        put(store, scope, "k", content)
    assert caught.value.metadata["field"] == "content"
    assert store.get_keyed(scope, "k") is None


# expectedVersion: 0 creates a new key


def test_expected_version_0_creates_and_answers_version_1_with_times(
    store: MemoryStore, scope: ScopeRef
) -> None:
    entry = put(store, scope, "harbor-status-reports", "Outcome, blockers, next action.")
    assert entry.version == 1
    assert entry.create_time == entry.update_time
    assert entry.links == []
    assert keyed.get(store, scope, "harbor-status-reports") == entry


def test_expected_version_0_on_an_existing_key_is_already_exists_and_changes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    first = put(store, scope, "k", "first")
    with pytest.raises(AlreadyExists) as caught:
        put(store, scope, "k", "second")
    assert caught.value.metadata["currentVersion"] == "1"
    assert keyed.get(store, scope, "k") == first


# an existing version: update only if it still matches


def test_the_stored_version_updates_and_keeps_the_create_time(
    store: MemoryStore, scope: ScopeRef
) -> None:
    first = put(store, scope, "k", "first")
    second = put(store, scope, "k", "second", 1)
    assert (second.version, second.content) == (2, "second")
    assert second.create_time == first.create_time
    assert second.update_time > first.update_time
    assert keyed.get(store, scope, "k") == second


@pytest.mark.parametrize("stale", [1, 3])
def test_another_version_is_aborted_with_the_current_version_and_changes_nothing(
    store: MemoryStore, scope: ScopeRef, stale: int
) -> None:
    put(store, scope, "k", "first")
    current = put(store, scope, "k", "second", 1)
    with pytest.raises(Aborted) as caught:
        put(store, scope, "k", "stale", stale)
    assert caught.value.reason == rules.VERSION_MISMATCH
    assert caught.value.metadata["currentVersion"] == "2"
    assert keyed.get(store, scope, "k") == current


def test_updating_a_key_that_does_not_exist_is_a_mismatch_at_version_0(
    store: MemoryStore, scope: ScopeRef
) -> None:
    with pytest.raises(Aborted) as caught:
        put(store, scope, "absent", "text", 4)
    assert caught.value.metadata["currentVersion"] == "0"
    assert store.get_keyed(scope, "absent") is None


def test_a_negative_expected_version_is_invalid_argument(
    store: MemoryStore, scope: ScopeRef
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        put(store, scope, "k", "text", -1)
    assert caught.value.metadata["field"] == "expectedVersion"


# the race: two writers with the same expectedVersion, exactly one wins


def _race(writes: list[Callable[[], KeyedMemory]]) -> tuple[list[KeyedMemory], list[Exception]]:
    barrier = threading.Barrier(len(writes))
    won: list[KeyedMemory] = []
    lost: list[Exception] = []
    lock = threading.Lock()

    def run(write: Callable[[], KeyedMemory]) -> None:
        barrier.wait()
        try:
            result = write()
        except (Aborted, AlreadyExists) as exc:
            with lock:
                lost.append(exc)
        else:
            with lock:
                won.append(result)

    threads = [threading.Thread(target=run, args=(w,)) for w in writes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return won, lost


def test_two_updates_at_the_same_version_exactly_one_wins(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "k", "base")
    won, lost = _race([lambda: put(store, scope, "k", "from A", 1),
                       lambda: put(store, scope, "k", "from B", 1)])  # fmt: skip
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], Aborted) and lost[0].reason == rules.VERSION_MISMATCH
    assert lost[0].metadata["currentVersion"] == "2"
    stored = keyed.get(store, scope, "k")
    assert (stored.version, stored.content) == (2, won[0].content)


def test_two_creates_of_one_key_exactly_one_wins(store: MemoryStore, scope: ScopeRef) -> None:
    won, lost = _race([lambda: put(store, scope, "k", "from A"),
                       lambda: put(store, scope, "k", "from B")])  # fmt: skip
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], AlreadyExists)
    assert keyed.get(store, scope, "k").content == won[0].content


# links


def test_links_are_symmetric_and_do_not_change_the_version(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "project", "Harbor Studio website")
    put(store, scope, "conventions", "Reports start with the outcome")
    linked = keyed.link(store, scope, "project", "conventions")
    assert (linked.links, linked.version) == (["conventions"], 1)
    assert keyed.get(store, scope, "conventions").links == ["project"]
    assert keyed.link(store, scope, "conventions", "project").links == ["project"]  # again
    assert keyed.unlink(store, scope, "conventions", "project").links == []
    assert keyed.get(store, scope, "project").links == []


def test_the_13th_link_is_failed_precondition_naming_the_bound(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "hub", "hub")
    for i in range(13):
        put(store, scope, f"n{i:02d}", f"neighbour {i}")
    for i in range(12):
        keyed.link(store, scope, "hub", f"n{i:02d}")
    with pytest.raises(FailedPrecondition) as caught:
        keyed.link(store, scope, "hub", "n12")
    assert caught.value.reason == rules.LINK_BOUND
    assert caught.value.metadata["limit"] == "12"
    # from the other side too: the bound counts both directions
    with pytest.raises(FailedPrecondition):
        keyed.link(store, scope, "n12", "hub")
    assert len(keyed.get(store, scope, "hub").links) == 12
    assert keyed.get(store, scope, "n12").links == []


@pytest.mark.parametrize(("key", "target", "field"), [("a", "missing", "target"),
                                                      ("missing", "a", "key")])  # fmt: skip
def test_linking_a_missing_entry_is_not_found_naming_it(
    store: MemoryStore, scope: ScopeRef, key: str, target: str, field: str
) -> None:
    put(store, scope, "a", "text")
    with pytest.raises(NotFound) as caught:
        keyed.link(store, scope, key, target)
    assert caught.value.metadata["field"] == field
    assert keyed.get(store, scope, "a").links == []


def test_linking_an_entry_to_itself_is_invalid_argument(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "a", "text")
    with pytest.raises(InvalidArgument) as caught:
        keyed.link(store, scope, "a", "a")
    assert caught.value.metadata["field"] == "target"


def test_forget_removes_the_entry_and_links_both_ways(store: MemoryStore, scope: ScopeRef) -> None:
    for key in ("a", "b", "c"):
        put(store, scope, key, f"entry {key}")
    keyed.link(store, scope, "a", "b")  # a -> b
    keyed.link(store, scope, "c", "b")  # c -> b: b is the target, stored (b, c)
    keyed.forget(store, scope, "b")
    assert store.get_keyed(scope, "b") is None
    assert keyed.get(store, scope, "a").links == []
    assert keyed.get(store, scope, "c").links == []
    assert row_counts(store, scope)["keyed_memory_links"] == 0
    with pytest.raises(NotFound):
        keyed.forget(store, scope, "b")
    # a new "b" starts with no links and version 1
    assert put(store, scope, "b", "again").links == []


# list and search


def test_list_is_newest_update_first_and_paged(store: MemoryStore, scope: ScopeRef) -> None:
    for key in ("a", "b", "c"):
        put(store, scope, key, f"entry {key}")
    put(store, scope, "a", "entry a, updated", 1)
    first = keyed.list_page(store, scope, Paging(size=2), "user:x")
    assert [e.key for e in first.items] == ["a", "c"]
    assert first.next_page_token
    second = keyed.list_page(store, scope, Paging(size=2, token=first.next_page_token), "user:x")
    assert [e.key for e in second.items] == ["b"]
    assert second.next_page_token is None


def test_search_ranks_by_words_then_update(store: MemoryStore, scope: ScopeRef) -> None:
    put(store, scope, "harbor-status-reports", "Weekly report: outcome, blockers")
    put(store, scope, "lunch", "The owner likes weekly sushi")
    put(store, scope, "unrelated", "Nothing here")
    page = keyed.search(store, scope, "harbor weekly report", Paging(), "user:x")
    assert [(m.entry.key, m.score) for m in page.items] == [
        ("harbor-status-reports", 3),
        ("lunch", 1),
    ]


# recall


def test_recall_adds_matches_in_order_until_the_budget_and_never_over(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "harbor-reports", "Harbor status reports: outcome then blockers")
    put(store, scope, "harbor-owner", "Harbor owner prefers short answers")
    put(store, scope, "cats", "The office cat is named Pixel")
    best = tokens("harbor-reports", "Harbor status reports: outcome then blockers")
    result = keyed.recall(store, scope, "write the harbor status reports", best)
    assert [(r.entry.key, r.via.value) for r in result.memories] == [("harbor-reports", "MATCH")]
    assert result.token_count == best
    whole = keyed.recall(store, scope, "write the harbor status reports", 10_000)
    assert [r.entry.key for r in whole.memories] == ["harbor-reports", "harbor-owner"]
    assert whole.token_count == sum(r.entry.token_count for r in whole.memories)
    assert keyed.recall(store, scope, "harbor status", best - 1).memories == []


def test_recall_ties_go_to_the_most_recent_update(store: MemoryStore, scope: ScopeRef) -> None:
    put(store, scope, "alpha", "deploy notes")
    put(store, scope, "beta", "deploy notes")
    budget = tokens("alpha", "deploy notes")
    assert [r.entry.key for r in keyed.recall(store, scope, "deploy", budget).memories] == ["beta"]
    put(store, scope, "alpha", "deploy notes", 1)  # now alpha is the newer
    assert [r.entry.key for r in keyed.recall(store, scope, "deploy", budget).memories] == ["alpha"]


def test_linked_neighbours_follow_only_while_space_remains(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "project-harbor", "Harbor Studio website relaunch")
    put(store, scope, "conventions", "Use British spelling in every deliverable")
    keyed.link(store, scope, "project-harbor", "conventions")
    match = tokens("project-harbor", "Harbor Studio website relaunch")
    neighbour = tokens("conventions", "Use British spelling in every deliverable")
    roomy = keyed.recall(store, scope, "harbor relaunch plan", match + neighbour)
    assert [(r.entry.key, r.via.value) for r in roomy.memories] == [
        ("project-harbor", "MATCH"),
        ("conventions", "LINK"),
    ]
    assert roomy.token_count == match + neighbour
    tight = keyed.recall(store, scope, "harbor relaunch plan", match + neighbour - 1)
    assert [(r.entry.key, r.via.value) for r in tight.memories] == [("project-harbor", "MATCH")]
    assert tight.token_count == match


def test_recall_follows_one_hop_only(store: MemoryStore, scope: ScopeRef) -> None:
    put(store, scope, "a-start", "zebra")
    put(store, scope, "b-middle", "middle")
    put(store, scope, "c-far", "far")
    keyed.link(store, scope, "a-start", "b-middle")
    keyed.link(store, scope, "b-middle", "c-far")
    result = keyed.recall(store, scope, "zebra", 10_000)
    assert [(r.entry.key, r.via.value) for r in result.memories] == [
        ("a-start", "MATCH"),
        ("b-middle", "LINK"),
    ]


def test_a_judge_drops_and_reorders_the_shortlist(store: MemoryStore, scope: ScopeRef) -> None:
    put(store, scope, "one", "harbor one")
    put(store, scope, "two", "harbor two")
    put(store, scope, "three", "harbor three")

    seen: list[str] = []

    class Judge:
        def judge(self, request: str, shortlist: Sequence[KeyedMemory]) -> list[str]:
            seen.extend(e.key for e in shortlist)
            return ["one", "made-up", "three"]

    result = keyed.recall(store, scope, "harbor", 10_000, Judge())
    assert seen == ["three", "two", "one"]
    assert [r.entry.key for r in result.memories] == ["one", "three"]


def test_the_first_remember_registers_the_scope(store: MemoryStore, scope: ScopeRef) -> None:
    record = ScopeRecord(scope=scope, kind=ScopeKind.AGENT.value, created_by="user:a")
    keyed.remember(store, scope, "k", "text", 0, registration=record)
    registered = store.get_scope(scope)
    assert registered is not None and registered.kind == "agent"


def test_destroying_the_scope_erases_entries_terms_and_links(
    store: MemoryStore, scope: ScopeRef
) -> None:
    put(store, scope, "a", "alpha words")
    put(store, scope, "b", "beta words")
    keyed.link(store, scope, "a", "b")
    store.destroy_scope(scope)
    counts = row_counts(store, scope)
    assert counts["keyed_memories"] == counts["keyed_memory_terms"] == 0
    assert counts["keyed_memory_links"] == 0


def test_scopes_do_not_see_each_other(store: MemoryStore, scope: ScopeRef) -> None:
    other = ScopeRef(enterprise_id=scope.enterprise_id, scope_id=scope.scope_id + "-other")
    put(store, scope, "k", "harbor")
    assert store.get_keyed(other, "k") is None
    assert keyed.recall(store, other, "harbor", 1000).memories == []
    assert keyed.list_page(store, other, Paging(), "user:x").items == []


def test_count_terms_counts_holders_up_to_cap_plus_one(store: MemoryStore, scope: ScopeRef) -> None:
    for i in range(4):
        put(store, scope, f"e{i}", "common" + (" rare" if i == 0 else ""))
    assert store.count_terms(scope, ["common", "rare", "absent"], 2) == {
        "common": 3,
        "rare": 1,
        "absent": 0,
    }


def test_a_word_too_many_entries_hold_does_not_score(
    store: MemoryStore, scope: ScopeRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rules, "COMMON_WORD_ENTRIES", 2)
    put(store, scope, "a", "common rare")
    put(store, scope, "b", "common")
    put(store, scope, "c", "common")
    recalled = keyed.recall(store, scope, "common rare", 10_000)
    assert [r.entry.key for r in recalled.memories] == ["a"]
    # with no rarer word left, the least common word's holders come newest first
    only_common = keyed.recall(store, scope, "common", 10_000)
    assert [r.entry.key for r in only_common.memories] == ["c", "b", "a"]


def test_entries_stay_out_of_the_claim_surfaces(store: MemoryStore, scope: ScopeRef) -> None:
    """Keyed entries are not claims: memory:query, inspect, the brief, the lifecycle pass
    and OKF export read claims only, so none of them shows, expires or exports an entry."""
    put(store, scope, "harbor-status-reports", "Harbor weekly report outcome")
    assert store.list_claims(scope, None, None, 100) == []
    assert store.list_chunks(scope, None, 100, 0) == []
    assert store.search_words(scope, ["harbor"], 10, [], datetime.now(UTC)) == []
