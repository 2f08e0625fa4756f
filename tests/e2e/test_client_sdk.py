"""The Python SDK (jennah.client) against a real `jnh serve`, through a real local proxy
that can answer the next requests with an injected error: every route of the API, both
collections (/v1/agents and /v1/scopes) where a route has both, pagination, typed errors
and the retry rules (idempotent calls retried on 503 and 409, others not)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from jennah.api import dto
from jennah.client import (
    Aborted,
    AlreadyExists,
    Client,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Retry,
    Scope,
    Unauthenticated,
    Unavailable,
)
from jennah.client.credentials import local_token
from jennah.client.routes import RPCS
from tests.e2e.conftest import Server
from tests.support.failing_proxy import FailingProxy

pytestmark = pytest.mark.slow

FAST = Retry(initial=0.01, maximum=0.05, deadline=30.0)
TURNS = [
    {"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."},
    {"role": "TURN_ROLE_ASSISTANT", "content": "Noted."},
    {"role": "TURN_ROLE_USER", "content": "I prefer dark mode in every tool."},
]


@pytest.fixture(scope="module")
def proxy(server: Server) -> Iterator[FailingProxy]:
    running = FailingProxy(server.endpoint)
    yield running
    running.close()


@pytest.fixture(scope="module")
def client(server: Server, proxy: FailingProxy) -> Iterator[Client]:
    with Client(proxy.url, local_token(server.data_dir), retry=FAST) as sdk:
        yield sdk


@pytest.fixture
def fresh(proxy: FailingProxy) -> FailingProxy:
    """The proxy with no failure pending and nothing seen yet."""
    proxy.reset()
    return proxy


@pytest.fixture(scope="module")
def formed(client: Client) -> dto.FormResponse:
    return client.agent("bot").form(TURNS, formation_key="tokyo")


@pytest.fixture(params=["agents", "scopes"])
def memory(request: pytest.FixtureRequest, client: Client, formed: dto.FormResponse) -> Scope:
    """The formed workspace `bot` through either collection."""
    return client.agent("bot") if request.param == "agents" else client.scope("bot")


def handle(client: Client, collection: str, scope_id: str) -> Scope:
    return client.agent(scope_id) if collection == "agents" else client.scope(scope_id)


def memory_id(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


# formation and the three read tools


def test_form_answers_a_receipt_and_a_replay_answers_it_again(
    client: Client, formed: dto.FormResponse
) -> None:
    texts = {candidate.text for candidate in formed.candidates}
    assert "The user lives in Tokyo." in texts
    again = client.agent("bot").form(TURNS, formation_key="tokyo")
    assert again.replay and again.commit_timestamp == formed.commit_timestamp


def test_search_then_read_then_the_excerpt(memory: Scope, client: Client) -> None:
    found = memory.search("where does the user live", max_items=3)
    tokyo = next(c for c in found.candidates if "Tokyo" in c.summary)
    claim = memory.get_memory(memory_id(tokyo.ref))
    assert claim.claim.text == "The user lives in Tokyo."
    (line,) = memory.list_evidence(claim.claim.id).evidence
    excerpt = memory.read_excerpt(line.ref)
    assert any("Tokyo" in turn.text for turn in excerpt.turns)
    step = client.agent("bot").get_step(excerpt.step_id)
    assert "Tokyo" in step.tool_input


def test_query_by_meaning(memory: Scope) -> None:
    answer = memory.query({"semantic": {"queryText": "dark mode", "topK": 1}})
    assert answer.semantic is not None
    (best,) = answer.semantic.results
    assert "dark mode" in best.text


def test_brief_and_dream(memory: Scope) -> None:
    assert "Tokyo" in memory.get_brief().brief
    assert 'variant="shared"' in memory.get_brief(variant="shared").brief
    assert memory.dream().expired == 0


# pagination


def test_the_memory_card_and_inspect_follow_every_page(memory: Scope) -> None:
    everything = list(memory.list_memories())
    assert len(everything) >= 3
    pages = list(memory.list_memories(page_size=1).pages)
    assert len(pages) == len(everything)
    assert [m.memory_id for m in memory.list_memories(page_size=1)] == [
        m.memory_id for m in everything
    ]
    chunks = list(memory.inspect(page_size=2, graph=True))
    assert len(chunks) >= 3
    first = next(iter(memory.inspect(page_size=2, graph=True).pages))
    assert first.nodes and first.next_page_token
    rest = list(memory.inspect(page_size=2, graph=True, page_token=first.next_page_token))
    assert len(rest) == len(chunks) - 2


def test_scopes_and_agents_are_listed_page_by_page(client: Client) -> None:
    for scope_id in ("paged-a", "paged-b"):
        client.create_scope(scope_id, kind="SUBJECT")
    scopes = [s.scope_id for s in client.list_scopes(page_size=1)]
    assert {"bot", "paged-a", "paged-b"} <= set(scopes)
    assert len(list(client.list_scopes(page_size=1).pages)) == len(scopes)
    subjects = [s.scope_id for s in client.list_scopes(kind="SUBJECT")]
    assert {"paged-a", "paged-b"} <= set(subjects) and "bot" not in subjects
    assert "bot" in [a.scope_id for a in client.list_agents(page_size=1)]


# writing, export and import


@pytest.mark.parametrize("collection", ["agents", "scopes"])
def test_commit_export_and_import(client: Client, collection: str) -> None:
    source = handle(client, collection, f"source-{collection}")
    written = source.commit(
        chunks=[{"text": "Carol drinks green tea"}, {"text": "Dave runs on Sundays"}]
    )
    assert written.chunks_written == 2
    archive = source.export()
    assert archive[:2] == b"\x1f\x8b"  # gzip
    copy = handle(client, collection, f"copy-{collection}")
    imported = copy.import_(archive)
    assert imported.claims_imported == 2
    assert sorted(c.text for c in copy.inspect()) == sorted(c.text for c in source.inspect())


@pytest.mark.parametrize("collection", ["agents", "scopes"])
def test_edit_forget_and_suppressions(client: Client, collection: str) -> None:
    scope = handle(client, collection, f"edits-{collection}")
    ids = scope.commit(
        chunks=[
            {"text": "Erin likes jazz", "about": "Erin"},
            {"text": "Erin plays the cello", "about": "Erin"},
            {"text": "Frank owns a boat", "about": "Frank"},
        ]
    ).chunk_ids
    edited = scope.edit_memory(ids[2], "Frank owns two boats")
    assert edited.superseded.id == ids[2] and edited.memory.text == "Frank owns two boats"
    forgotten = scope.forget_memory(ids[0])
    assert forgotten.memory.status == "retracted"
    (rule,) = list(scope.list_suppressions(page_size=1))
    assert rule.memory_id == ids[0]
    scope.delete_suppression(rule.id)
    assert list(scope.list_suppressions()) == []
    counted = scope.forget_group(about="Erin", validate_only=True)
    assert counted.count == 1  # the claim forgotten already is out of the group
    done = scope.forget_group(about="Erin", expected_count=counted.count)
    assert [rule.memory_id for rule in done.suppressions] == [ids[1]]


# keyed memory


@pytest.mark.parametrize("collection", ["agents", "scopes"])
def test_keyed_memory_is_remembered_read_linked_recalled_and_forgotten(
    client: Client, collection: str
) -> None:
    notes = handle(client, collection, f"notes-{collection}")
    made = notes.remember("harbor-status-reports", "Harbor reports go out on Fridays.", 0)
    assert made.version == 1
    updated = notes.remember("harbor-status-reports", "Harbor reports go out on Mondays.", 1)
    assert updated.version == 2
    notes.remember("harbor-conventions", "Use ISO dates in harbor documents.", 0)
    linked = notes.link("harbor-status-reports", "harbor-conventions")
    assert linked.links == ["harbor-conventions"]
    assert notes.get_keyed("harbor-conventions").links == ["harbor-status-reports"]
    keys = [entry.key for entry in notes.list_keyed(page_size=1)]
    assert keys == ["harbor-conventions", "harbor-status-reports"]  # newest update first
    assert len(list(notes.list_keyed(page_size=1).pages)) == 2
    recalled = notes.recall("when do the status reports go out", 200)
    assert [(m.key, m.via) for m in recalled.memories] == [
        ("harbor-status-reports", "MATCH"),
        ("harbor-conventions", "LINK"),
    ]
    assert 0 < recalled.token_count <= 200
    hits = list(notes.search_keyed("harbor", page_size=1))
    assert {hit.key for hit in hits} == set(keys)
    assert notes.unlink("harbor-status-reports", "harbor-conventions").links == []
    notes.forget_keyed("harbor-conventions")
    with pytest.raises(NotFound):
        notes.get_keyed("harbor-conventions")


def test_a_stale_remember_is_aborted_with_the_current_version(client: Client) -> None:
    notes = client.scope("notes-stale")
    notes.remember("tea", "Green tea in the morning.", 0)
    with pytest.raises(AlreadyExists):
        notes.remember("tea", "Black tea.", 0)
    with pytest.raises(Aborted) as stale:
        notes.remember("tea", "Black tea.", 5)
    assert stale.value.reason == "KEYED_MEMORY_VERSION_MISMATCH"
    assert stale.value.metadata["currentVersion"] == "1"


def test_remember_is_not_retried_and_recall_is(client: Client, fresh: FailingProxy) -> None:
    notes = client.scope("notes-retry")
    notes.remember("coffee", "Espresso after lunch.", 0)
    fresh.reset()
    fresh.fail(1)
    with pytest.raises(Unavailable):
        notes.remember("coffee", "Espresso after dinner.", 1)
    assert len(fresh.seen) == 1
    assert notes.get_keyed("coffee").version == 1  # the refused call wrote nothing
    fresh.reset()
    fresh.fail(1)
    assert notes.recall("coffee", 50).token_count >= 0
    assert len(fresh.seen) == 2


# scopes, vocabulary, billing, operations


def test_a_scope_is_created_updated_and_deleted(client: Client) -> None:
    made = client.create_scope("temp", kind="SUBJECT", time_zone="UTC")
    assert made.name == "scopes/temp"
    assert client.scope("temp").update(time_zone="Asia/Tokyo").time_zone == "Asia/Tokyo"
    client.scope("temp").delete()
    assert "temp" not in [s.scope_id for s in client.list_scopes()]


def test_the_vocabulary_is_declared_read_and_removed(client: Client) -> None:
    vocabulary = {"entityClasses": [{"name": "Landed", "description": "a place"}]}
    declared = client.declare_vocabulary(scope_id="bot", vocabulary=vocabulary)
    assert declared.declaration is not None
    assert client.get_vocabulary("bot").declaration is not None
    client.delete_vocabulary("bot")
    assert client.get_vocabulary("bot").declaration is None


def test_billing_and_usage(client: Client, formed: dto.FormResponse) -> None:
    assert client.get_billing().units_used >= 1
    assert client.set_overage_multiple(1.5).overage_multiple == 1.5
    start = datetime.now(UTC) - timedelta(days=30)
    tokens = client.formation_tokens(start_time=start, per="month")
    assert sum(bucket.input_tokens for bucket in tokens.buckets) > 0


def test_an_async_formation_is_waited_for(client: Client) -> None:
    started = client.agent("bot").start_form(
        [{"role": "TURN_ROLE_USER", "content": "I work at Initech."}]
    )
    assert started.name.startswith("operations/")
    receipt = client.wait_for_operation(started.name, timeout=120, interval=0.05)
    assert any("Initech" in c.text for c in receipt.candidates)
    assert client.get_operation(started.name).done
    assert started.name in [op.name for op in client.list_operations(page_size=1)]


# keys, roles, users and the caller


def test_keys_roles_and_users(client: Client, proxy: FailingProxy) -> None:
    assert client.get_caller().principal == "user:root"
    assert client.get_openapi_document()["openapi"] == "3.1.0"
    key = client.create_api_key(display_name="reader", role="member", agent_selectors=["bot"])
    assert key.key_string
    assert key.key_id in [k.key_id for k in client.list_api_keys(page_size=1)]
    with Client(proxy.url, key.key_string, retry=FAST) as agent_key:
        assert agent_key.agent("bot").search("Tokyo").candidates
        with pytest.raises(PermissionDenied) as denied:
            agent_key.create_api_key(display_name="x", role="member")
        assert denied.value.code == 403
    assert client.revoke_api_key(key.key_id).state == "REVOKED"
    user = client.create_user("user:erin@example.com")
    assert user.token
    client.grant_role(principal="user:erin@example.com", role="member", agent_selectors=["bot"])
    (binding,) = list(client.list_role_bindings(principal="user:erin@example.com"))
    assert binding.role == "member"
    client.revoke_role("user:erin@example.com", "member")
    assert list(client.list_role_bindings(principal="user:erin@example.com")) == []


# typed errors


def test_errors_are_typed_with_status_reason_and_details(memory: Scope) -> None:
    with pytest.raises(NotFound) as missing:
        memory.get_memory("chk_0123456789abcdef0123456789abcdef")
    err = missing.value
    assert (err.status, err.code, err.http_status) == ("NOT_FOUND", 404, 404)
    assert err.reason and err.details and err.details[0]["@type"].endswith("ErrorInfo")
    with pytest.raises(InvalidArgument) as bad:
        memory.read_excerpt("http://not-a-conv-ref")
    assert bad.value.reason and bad.value.message


def test_a_bad_request_is_refused_before_it_is_sent(client: Client, fresh: FailingProxy) -> None:
    with pytest.raises(InvalidArgument) as bad:
        client.scope("bot").search("x", max_items=0, no_such_field=1)
    assert bad.value.metadata["field"]
    assert fresh.seen == []


def test_a_wrong_credential_is_unauthenticated(proxy: FailingProxy) -> None:
    with Client(proxy.url, "ju_wrong", retry=None) as stranger, pytest.raises(Unauthenticated):
        stranger.get_caller()


# retries


def test_an_idempotent_call_is_retried_through_503s(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(2)
    assert client.scope("bot").search("Tokyo").candidates
    assert [s.failed for s in fresh.seen] == [True, True, False]


def test_a_get_is_retried_through_an_aborted(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(1, 409, "ABORTED")
    assert client.get_caller().principal == "user:root"
    assert len(fresh.seen) == 2


def test_a_commit_is_not_retried(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(1)
    with pytest.raises(Unavailable) as failed:
        client.scope("bot").commit(chunks=[{"text": "never written"}])
    assert failed.value.message == "injected by the proxy"
    assert len(fresh.seen) == 1


def test_form_is_retried_only_with_a_formation_key(client: Client, fresh: FailingProxy) -> None:
    turns = [{"role": "TURN_ROLE_USER", "content": "I prefer oolong tea."}]
    fresh.fail(1, 409, "ABORTED")
    with pytest.raises(Aborted):
        client.agent("bot").form(turns)
    assert len(fresh.seen) == 1
    fresh.reset()
    fresh.fail(1)
    assert client.agent("bot").form(turns, formation_key="oolong").candidates
    assert len(fresh.seen) == 2


def test_forget_group_is_retried_only_to_count(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(1)
    assert client.scope("bot").forget_group(about="nobody", validate_only=True).count == 0
    assert len(fresh.seen) == 2
    fresh.reset()
    fresh.fail(1)
    with pytest.raises(Unavailable):
        client.scope("bot").forget_group(about="nobody", expected_count=0)
    assert len(fresh.seen) == 1


def test_retries_stop_at_the_deadline(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(10_000)
    with pytest.raises(Unavailable):
        client.get_billing(retry=Retry(initial=0.01, maximum=0.02, deadline=0.3))
    assert 2 <= len(fresh.seen) < 10_000


def test_retry_none_turns_retries_off(client: Client, fresh: FailingProxy) -> None:
    fresh.fail(1)
    with pytest.raises(Unavailable):
        client.get_billing(retry=None)
    assert len(fresh.seen) == 1


def test_an_explicit_retry_retries_a_non_idempotent_call(
    client: Client, fresh: FailingProxy
) -> None:
    fresh.fail(1)
    client.scope("bot").commit(chunks=[{"text": "Gina visits in May"}], retry=FAST)
    assert len(fresh.seen) == 2


# coverage: keep this test last in the module


def test_every_route_of_the_api_was_called(proxy: FailingProxy) -> None:
    called = {(seen.method, seen.path) for seen in proxy.history if not seen.failed}
    patterns = {
        rpc.operation_id: (
            rpc.method,
            re.compile("^" + re.sub(r"\{\w+\}", "[^/]+", rpc.template) + "$"),
        )
        for rpc in RPCS.values()
    }
    missed = [
        op for op, (method, pattern) in patterns.items()
        if not any(m == method and pattern.match(path) for m, path in called)
    ]  # fmt: skip
    assert missed == []
