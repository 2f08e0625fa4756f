"""Reading memory (issue 17) over HTTP on the fakes: one whole claim
(GET …/memories/{memoryId}), an excerpt (POST …/memory:readExcerpt), the memory card
(GET …/memories), and their `jnh` commands."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.api.routes import ALL_ROUTES
from jennah.domain import okf
from jennah.domain.access import Permission, Role, RoleBinding, User
from jennah.domain.formation import TURN_OFFSETS, Turn, TurnRole, render
from jennah.domain.models import CommitPlan, ExecutionLogStep, ScopeRecord, ScopeRef
from jennah.services.access import hash_secret, user_token
from tests.unit.fakes import ENTERPRISE, Api
from tests.unit.test_cli_memory import Jnh, jnh  # noqa: F401  (the fixture)

BOT = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot")
TURNS = [
    Turn(role=TurnRole.USER, content="Please check with me before posting."),
    Turn(role=TurnRole.ASSISTANT, content="Understood.\nI will ask first."),
    Turn(role=TurnRole.TOOL_CALL, content=""),
    Turn(role=TurnRole.USER, content="Thanks — obrigado!"),
]


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def refused(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    error: dict[str, Any] = response.get_json()["error"]
    return error


def commit(api: Api, text: str, scope: str = "bot", **fields: Any) -> str:
    """Commit into agent workspace `scope` (a subject scope when it is "team")."""
    collection = "scopes" if scope == "team" else "agents"
    body = {"chunks": [{"text": text, **fields}]}
    (memory_id,) = ok(api.post(f"/v1/{collection}/{scope}/memory:commit", body))["chunkIds"]
    return str(memory_id)


def supersede(api: Api, old: str, text: str) -> str:
    body = {"supersessions": [{"chunkId": old, "replacementChunk": {"text": text}}]}
    (new,) = ok(api.post("/v1/agents/bot/memory:commit", body))["chunkIds"]
    return str(new)


def test_every_read_route_needs_agent_memory_read() -> None:
    reads = {"memories.get", "memory.readExcerpt", "memories.list", "memories.evidence.list"}
    found = {r.operation_id: r.permission for r in ALL_ROUTES
             if r.operation_id.split(".", 1)[1] in reads}  # fmt: skip
    assert len(found) == 8
    assert set(found.values()) == {Permission.MEMORY_READ}


# read a claim


def test_a_claim_reads_whole_with_its_ref_and_okf_file(api: Api) -> None:
    memory_id = commit(api, "Always ask before posting to the team chat.",
                       summary="Ask before posting", type="directive", strength="hard",
                       sensitivity="normal", appliesTo=["team"])  # fmt: skip
    for collection in ("agents", "scopes"):
        answer = ok(api.get(f"/v1/{collection}/bot/memories/{memory_id}"))
        assert answer["ref"] == f"memory://bot/{memory_id}"
        assert answer["claim"]["id"] == memory_id
        assert answer["claim"]["summary"] == "Ask before posting"
        assert answer["lineage"] == {"supersedes": [], "supersededBy": []}
        (stored,) = api.store.get_chunks(BOT, [memory_id])
        assert answer["okf"] == okf.render_claim(stored).decode("utf-8")
        assert answer["okf"].startswith("---\nid: " + memory_id)
        assert answer["okf"].endswith("\nAlways ask before posting to the team chat.\n")


def test_the_claim_view_is_the_one_inspect_shows(api: Api) -> None:
    memory_id = commit(api, "Ana likes tea", about="ana", confidence=0.5)
    (chunk,) = ok(api.get("/v1/scopes/bot/memory:inspect"))["chunks"]
    assert ok(api.get(f"/v1/scopes/bot/memories/{memory_id}"))["claim"] == chunk


def test_lineage_reads_both_ways_and_old_versions_stay_readable(api: Api) -> None:
    first = commit(api, "Ana lives in Porto")
    second = supersede(api, first, "Ana lives in Lisbon")
    third = supersede(api, second, "Ana lives in Madrid")
    middle = ok(api.get(f"/v1/scopes/bot/memories/{second}"))
    assert middle["claim"]["status"] == "superseded"
    assert [link["memoryId"] for link in middle["lineage"]["supersedes"]] == [first]
    assert [link["memoryId"] for link in middle["lineage"]["supersededBy"]] == [third]
    (link,) = middle["lineage"]["supersedes"]
    assert link["ref"] == f"memory://bot/{first}" and link["status"] == "superseded"
    newest = ok(api.get(f"/v1/scopes/bot/memories/{third}"))
    assert [link["memoryId"] for link in newest["lineage"]["supersedes"]] == [second, first]
    assert newest["lineage"]["supersededBy"] == []
    oldest = ok(api.get(f"/v1/scopes/bot/memories/{first}"))
    assert [link["memoryId"] for link in oldest["lineage"]["supersededBy"]] == [second, third]


@pytest.mark.parametrize("status", ["dormant", "retracted"])
def test_hidden_claims_read_whole_too(api: Api, status: str) -> None:
    memory_id = commit(api, f"a {status} claim", status=status)
    answer = ok(api.get(f"/v1/scopes/bot/memories/{memory_id}"))
    assert answer["claim"]["status"] == status
    assert f"status: {status}\n" in answer["okf"]


def test_a_claim_the_scope_does_not_hold_is_not_found_by_name(api: Api) -> None:
    commit(api, "Ana likes tea")
    elsewhere = commit(api, "Bea likes coffee", scope="other")
    for memory_id in ("chk_missing", elsewhere):
        error = refused(api.get(f"/v1/scopes/bot/memories/{memory_id}"), 404)
        assert error["message"] == f"memory {memory_id!r} was not found in scope 'bot'"
        assert error["details"][0]["metadata"] == {"memoryId": memory_id}


def test_reading_a_claim_needs_reach_like_memory_query(api: Api) -> None:
    memory_id = commit(api, "Ana likes tea")
    token = _member_reaching(api, ["o.*"])
    for path in (f"/v1/scopes/bot/memories/{memory_id}", "/v1/scopes/bot/memories"):
        unreached = refused(api.get(path, token=token), 404)
        assert unreached["message"] == "scope 'bot' was not found"
    excerpt = api.post("/v1/scopes/bot/memory:readExcerpt", {"ref": "conv://bot/x"}, token=token)
    assert refused(excerpt, 404)["message"] == "scope 'bot' was not found"


def _member_reaching(api: Api, selectors: list[str]) -> str:
    eve = "user:eve"
    api.identity.put_user(
        User(enterprise_id=ENTERPRISE, principal=eve, token_hash=hash_secret("s" * 64))
    )
    binding = RoleBinding(
        enterprise_id=ENTERPRISE, principal=eve, role=Role.MEMBER, subject_selectors=selectors
    )
    api.identity.put_binding(binding)
    return user_token(ENTERPRISE, eve, "s" * 64)


# read an excerpt


def _step(api: Api, turns: list[Turn] = TURNS, scope: ScopeRef = BOT) -> str:
    rendered = render(turns, datetime(2024, 1, 1, tzinfo=UTC))
    step = ExecutionLogStep(
        step_id=rendered.step_id,
        tool_input=rendered.tool_input,
        metadata={TURN_OFFSETS: ",".join(str(o) for o in rendered.offsets)},
    )
    registration = ScopeRecord(scope=scope, kind="agent")
    api.store.apply(CommitPlan(scope=scope, registration=registration, steps=[step]))
    return rendered.step_id


def excerpt(api: Api, ref: str, scope: str = "bot", collection: str = "scopes") -> Any:
    return api.post(f"/v1/{collection}/{scope}/memory:readExcerpt", {"ref": ref})


def test_an_excerpt_is_exactly_the_cited_turns(api: Api) -> None:
    step = _step(api)
    ref = f"conv://bot/{step}#turn=1-3"
    assert ok(excerpt(api, ref)) == {
        "ref": ref,
        "stepId": step,
        "turns": [
            {"number": 1, "role": "TURN_ROLE_ASSISTANT", "text": "Understood.\nI will ask first."},
            {"number": 2, "role": "TURN_ROLE_TOOL_CALL", "text": ""},
            {"number": 3, "role": "TURN_ROLE_USER", "text": "Thanks — obrigado!"},
        ],
        "turnCount": 4,
    }
    (one,) = ok(excerpt(api, f"conv://bot/{step}#turn=0"))["turns"]
    assert one == {"number": 0, "role": "TURN_ROLE_USER",
                   "text": "Please check with me before posting."}  # fmt: skip


def test_an_excerpt_without_a_fragment_is_every_turn(api: Api) -> None:
    step = _step(api)
    answer = ok(excerpt(api, f"conv://bot/{step}"))
    assert [t["number"] for t in answer["turns"]] == [0, 1, 2, 3]
    assert [t["text"] for t in answer["turns"]] == [t.content for t in TURNS]


def test_a_formed_claims_evidence_ref_opens_the_turn_it_came_from(api: Api) -> None:
    form = {"turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}],
            "observedAt": "2024-01-01T00:00:00Z"}  # fmt: skip
    ok(api.post("/v1/agents/bot/memory:form", form))
    (chunk,) = ok(api.get("/v1/agents/bot/memory:inspect", allHistory="true"))["chunks"]
    (line,) = ok(api.get(f"/v1/agents/bot/memories/{chunk['id']}/evidence"))["evidence"]
    answer = ok(excerpt(api, line["ref"], collection="agents"))
    (turn,) = answer["turns"]
    assert turn == {"number": 0, "role": "TURN_ROLE_USER", "text": "I live in Lisbon."}
    assert line["quote"] in turn["text"]


def test_turns_out_of_range_name_the_range_and_the_turn_count(api: Api) -> None:
    step = _step(api)
    error = refused(excerpt(api, f"conv://bot/{step}#turn=2-9"), 400)
    assert error["message"] == (f"ref cites turns 2-9, but step {step!r} has 4 turns (turns 0-3)")
    assert error["details"][0]["reason"] == "TURN_OUT_OF_RANGE"
    assert error["details"][0]["metadata"] == {"field": "ref", "turns": "2-9", "turnCount": "4"}


def test_a_missing_step_and_another_scopes_step_answer_alike(api: Api) -> None:
    other = _step(api, scope=ScopeRef(enterprise_id=ENTERPRISE, scope_id="other"))
    _step(api)
    missing = refused(excerpt(api, "conv://bot/frm_missing#turn=0-0"), 404)
    assert missing["message"] == "execution-log step 'frm_missing' was not found in scope 'bot'"
    assert missing["details"][0]["reason"] == "STEP_NOT_FOUND"
    foreign = excerpt(api, f"conv://other/{other}#turn=0-0")
    error = refused(foreign, 404)
    assert error["message"] == f"execution-log step {other!r} was not found in scope 'bot'"
    assert "other" not in json.dumps(error).replace(f"{other}", "")


@pytest.mark.parametrize(
    "ref",
    ["memory://bot/chk_1", "conv://bot/step#turns=1-2", "conv://bot/step#turn=3-1",
     "conv://bot", "conv://bot/step#turn=x"],
)  # fmt: skip
def test_a_malformed_reference_is_a_400_naming_ref(api: Api, ref: str) -> None:
    _step(api)
    error = refused(excerpt(api, ref), 400)
    assert error["details"][0]["reason"] == "INVALID_REFERENCE"
    assert error["details"][0]["metadata"]["field"] == "ref"


def test_an_excerpt_request_takes_ref_only(api: Api) -> None:
    _step(api)
    assert refused(api.post("/v1/scopes/bot/memory:readExcerpt", {}), 400)
    assert refused(api.post("/v1/scopes/bot/memory:readExcerpt",
                            {"ref": "conv://bot/x", "turns": 1}), 400)  # fmt: skip


# the memory card


def card(api: Api, scope: str = "bot", **params: str) -> dict[str, Any]:
    return ok(api.get(f"/v1/scopes/{scope}/memories", **params))


def test_the_card_lists_claims_newest_first_with_what_a_person_reads(api: Api) -> None:
    older = commit(api, "Ana likes tea", summary="Tea", about="ana", appliesTo=["ana"])
    newer = commit(api, "Bo takes insulin", summary="Insulin", type="fact",
                   sensitivity="health")  # fmt: skip
    answer = card(api)
    assert [item["memoryId"] for item in answer["memories"]] == [newer, older]
    first = answer["memories"][1]
    assert set(first) == {"ref", "memoryId", "summary", "about", "appliesTo", "type",
                          "status", "sensitivity", "formedAt", "age"}  # fmt: skip
    assert first["ref"] == f"memory://bot/{older}"
    assert (first["summary"], first["about"], first["appliesTo"]) == ("Tea", "ana", ["ana"])
    assert (first["type"], first["status"], first["age"]) == ("fact", "active", "today")
    assert answer["memories"][0]["sensitivity"] == "health"  # sensitive claims are listed
    assert "nextPageToken" not in answer


def test_the_card_age_counts_from_formed_at(api: Api) -> None:
    memory_id = commit(api, "Ana likes tea")
    stored = api.store._tables.chunks[(BOT, memory_id)]
    stored.created_at = datetime.now(UTC) - timedelta(days=15)
    (item,) = card(api)["memories"]
    assert item["age"] == "2 weeks"


def test_the_card_leaves_out_retracted_claims_unless_asked(api: Api) -> None:
    shown = {s: commit(api, f"a {s} claim", status=s) for s in ("active", "dormant")}
    retracted = commit(api, "a forgotten claim", status="retracted")
    old = commit(api, "Ana lives in Porto")
    new = supersede(api, old, "Ana lives in Lisbon")
    listed = {item["memoryId"]: item["status"] for item in card(api)["memories"]}
    assert listed == {shown["active"]: "active", shown["dormant"]: "dormant",
                      old: "superseded", new: "active"}  # fmt: skip
    (item,) = card(api, filter='status = "retracted"')["memories"]
    assert item["memoryId"] == retracted


def test_the_card_filters_by_each_field_and_their_conjunction(api: Api) -> None:
    directive = commit(api, "Ask before posting", type="directive", appliesTo=["team"])
    health = commit(api, "Bo takes insulin", sensitivity="health", appliesTo=["bo"])
    dormant = commit(api, "Bo liked judo", status="dormant", appliesTo=["bo"])

    def ids(text: str) -> list[str]:
        return [item["memoryId"] for item in card(api, filter=text)["memories"]]

    assert ids('type = "directive"') == [directive]
    assert ids("sensitivity = health") == [health]
    assert ids('appliesTo = "bo"') == [dormant, health]
    assert ids('appliesTo: "bo"') == [dormant, health]
    assert ids('status = "dormant"') == [dormant]
    assert ids('appliesTo = "bo" AND status = "active"') == [health]
    assert ids('appliesTo = "team" AND sensitivity = "health"') == []


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ('colour = "red"', 'colour = "red"'),
        ('status = "gone"', "status = 'gone'"),
        ('type = "directive" OR type = "fact"', 'type = "directive" OR type = "fact"'),
        ('status = "active" AND status = "dormant"', 'status = "dormant"'),
        ('type: "fact"', 'type: "fact"'),
        ('appliesTo = "a b"', "appliesTo = 'a b'"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_term(api: Api, text: str, term: str) -> None:
    commit(api, "Ana likes tea")
    error = refused(api.get("/v1/scopes/bot/memories", filter=text), 400)
    assert error["details"][0]["metadata"]["field"] == "filter"
    assert error["details"][0]["metadata"]["term"] == term
    assert term in error["message"]


def test_the_card_pages_by_key_stable_under_new_claims(api: Api) -> None:
    written = [commit(api, f"claim number {i}") for i in range(7)]
    first = card(api, pageSize="3")
    assert [i["memoryId"] for i in first["memories"]] == written[::-1][:3]
    commit(api, "a claim written while paging")
    second = card(api, pageSize="3", pageToken=first["nextPageToken"])
    third = card(api, pageSize="3", pageToken=second["nextPageToken"])
    listed = [i["memoryId"] for page in (first, second, third) for i in page["memories"]]
    assert listed == written[::-1]
    assert "nextPageToken" not in third


def test_a_page_token_of_another_filter_or_scope_is_refused(api: Api) -> None:
    for i in range(3):
        commit(api, f"claim {i}", type="directive")
        commit(api, f"claim {i}", scope="other")
    token = card(api, pageSize="1")["nextPageToken"]
    for scope, params in (("bot", {"filter": 'type = "directive"'}), ("other", {})):
        response = api.get(f"/v1/scopes/{scope}/memories", pageSize="1", pageToken=token,
                           **params)  # fmt: skip
        assert refused(response, 400)["details"][0]["metadata"]["field"] == "pageToken"
    garbage = api.get("/v1/scopes/bot/memories", pageToken="not-a-token")
    assert refused(garbage, 400)["details"][0]["metadata"]["field"] == "pageToken"
    assert refused(api.get("/v1/scopes/bot/memories", pageSize="-1"), 400)


def test_the_card_of_an_empty_scope_is_empty_and_a_missing_scope_is_not_found(
    api: Api,
) -> None:
    commit(api, "tea", scope="team")
    ok(api.post("/v1/scopes", {"scopeId": "empty", "kind": "SUBJECT"}))
    assert card(api, scope="empty") == {"memories": []}
    assert refused(api.get("/v1/scopes/ghost/memories"), 404)["message"] == (
        "scope 'ghost' was not found"
    )
    assert refused(api.get("/v1/agents/team/memories"), 404)


# the CLI


def test_jnh_shows_a_claim_by_id_or_by_memory_ref(jnh: Jnh) -> None:  # noqa: F811
    old = commit(jnh.api, "Ana lives in Porto", summary="Porto")
    new = supersede(jnh.api, old, "Ana lives in Lisbon")
    text = jnh.ok("scopes", "memory", "show", "bot", old)
    assert text.startswith(f"---\nid: {old}\n") and "Ana lives in Porto" in text
    assert "replaced by" in text and new in text
    by_ref = jnh.ok("scopes", "memory", "show", f"memory://bot/{old}", "-o", "json")
    assert json.loads(by_ref)["claim"]["id"] == old
    assert jnh.ok("agents", "memory", "show", f"memory://bot/{new}", "-o", "name").strip() == (
        f"memory://bot/{new}"
    )
    assert jnh("scopes", "memory", "show", "bot").exit_code != 0
    assert jnh("scopes", "memory", "show", "bot", "chk_missing").exit_code == 4


def test_jnh_prints_an_excerpt(jnh: Jnh) -> None:  # noqa: F811
    step = _step(jnh.api)
    ref = f"conv://bot/{step}#turn=0-1"
    text = jnh.ok("scopes", "memory", "excerpt", ref)
    assert text == ("[turn 0] user:\nPlease check with me before posting.\n"
                    "[turn 1] assistant:\nUnderstood.\nI will ask first.\n")  # fmt: skip
    answer = json.loads(jnh.ok("agents", "memory", "excerpt", "bot", ref, "-o", "json"))
    assert [t["number"] for t in answer["turns"]] == [0, 1]
    names = jnh.ok("scopes", "memory", "excerpt", ref, "-o", "name").split()
    assert names == [f"conv://bot/{step}#turn=0-0", f"conv://bot/{step}#turn=1-1"]
    assert jnh("scopes", "memory", "excerpt", "not-a-ref").exit_code != 0


def test_jnh_lists_the_card_every_page_or_one(jnh: Jnh) -> None:  # noqa: F811
    written = [commit(jnh.api, f"claim {i}", summary=f"s{i}") for i in range(3)]
    table = jnh.ok("scopes", "memory", "list", "bot").splitlines()
    assert table[0].split() == ["MEMORY_ID", "TYPE", "STATUS", "SENSITIVITY", "AGE", "SUMMARY"]
    assert [line.split()[0] for line in table[1:]] == written[::-1]
    one = jnh("scopes", "memory", "list", "bot", "--page-size", "2", "-o", "name")
    assert one.exit_code == 0
    assert one.stdout.split() == [f"memory://bot/{m}" for m in written[::-1][:2]]
    assert "more: --page-token" in one.stderr
    filtered = jnh.ok("scopes", "memory", "list", "bot", "--filter", 'status = "retracted"')
    assert filtered.strip() == "No memories."
    assert jnh("scopes", "memory", "list", "bot", "--filter", "bad").exit_code != 0
