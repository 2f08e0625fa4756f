"""THE access matrix: every route by every kind of caller that must be refused.

For each route in `routes.ALL_ROUTES` (a route missing from MATRIX fails the
suite) and each case below, the expected status, and that nothing was
written: a refused request leaves every row of every enterprise as it was;
a caller from outside (another enterprise, or without the permission or the
reach) leaves the target enterprise's rows as they were, and an answer it does
get names none of that enterprise's scopes, keys or memories.

Cases (the credential each sends):
  root       the target enterprise's root: the request itself is good
  other      the root of ANOTHER enterprise; scope ids are per enterprise, so
             its writes land in its own enterprise and its reads find nothing
  noperm     a user without the route's permission: one with no role at all
             when members have the permission (it then has no reach either,
             so a route naming a scope answers 404), else a member reaching
             every scope
  noreach    a member whose selectors reach other scopes only (routes naming
             no scope: None, not applicable)
  key        an API key bound to root: 403 on management routes, whatever the role
  nocred     no Authorization header
  malformed  several broken or wrong credentials, each refused
  revoked    a revoked API key bound to root
  expired    an expired API key bound to root

This module runs the matrix on the in-memory fakes; tests/e2e runs the same
matrix on the real SQLite stores and on the emulators (`check_case`, `build_world`,
`MATRIX`, `SHARED_CASES` and `OWN_CASES` are shared).

Building a world costs far more than a request, so the cases split in two:
`SHARED_CASES`, every case that writes nothing (a refusal, or any case of a route that
only reads), run one after another in ONE world per module, each checked to have
written nothing anywhere, so each finds the world exactly as freshly built; and
`OWN_CASES`, the ones that may write (the good requests of the routes that write),
each in a world of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import flask
import pytest

from jennah.api.app import create_app
from jennah.api.routes import ALL_ROUTES
from jennah.bootstrap import Container
from jennah.domain import okf_archive, rules
from jennah.domain.access import (
    ROLE_PERMISSIONS,
    USER_ONLY_PERMISSIONS,
    ApiKey,
    Enterprise,
    Permission,
    Role,
    RoleBinding,
    User,
)
from jennah.domain.formation import Turn, TurnRole, render
from jennah.domain.suppression import suppression_id
from jennah.services.access import api_key_token, hash_secret, user_token
from tests.unit.fakes import FakeIdentityStore, FakeVocabularyStore, make_container
from tests.unit.test_api_form_fakes import FormingFakeStore

TARGET = "local"
OTHER = "acme"
CASES = ("root", "other", "noperm", "noreach", "key", "nocred", "malformed", "revoked", "expired")
OUTSIDERS = ("other", "noperm", "noreach")
MALFORMED = (
    "Bearer not-a-credential",
    "Basic cm9vdDpyb290",
    "Bearer",
    "Bearer jk_",
    "Bearer jk_kroot_" + "00" * 32,  # a real key id (in an untagged world), a wrong secret
    "Bearer ju_dXNlcjpyb290_" + "00" * 32,  # user:root, a wrong secret
    "Bearer ju_%%%_x",
)


class Row(NamedTuple):
    """The request a route is tried with, and the expected status per case (None: n/a).
    Every route authenticates first: the four credential failures are 401 everywhere."""

    method: str
    path: str
    body: dict[str, Any] | bytes | None
    root: int
    other: int
    noperm: int
    noreach: int | None
    key: int
    nocred: int = 401
    malformed: int = 401
    revoked: int = 401
    expired: int = 401


WRITE = {"chunks": [{"text": "matrix write"}]}
QUERY = {"semantic": {"queryText": "alpha"}}
SEARCH = {"query": "alpha"}
# memory:import takes a .tar.gz of OKF files, sent as application/gzip
IMPORT = okf_archive.pack({"claims/imported.md": b"---\ntype: fact\n---\nmatrix import\n"})
FORM = {"turns": [{"role": "TURN_ROLE_USER", "content": "I work at Matrixworks."}]}
A, S = "/v1/agents/bot.a", "/v1/scopes/team.x"
# the vocabulary routes name the agent workspace's level: in the body on PUT, in the query
# on GET and DELETE (the world declares a vocabulary there, so DELETE finds one)
V = "/v1/memory/vocabulary"
DECLARE = {"scopeId": "bot.a", "vocabulary": {"entityClasses": [{"name": "Person"}]}}
SEED_VOCABULARY = {
    "scopeId": "bot.a",
    "vocabulary": {"entityClasses": [{"name": "Matrixperson", "description": "seeded"}]},
}
# the world's agent workspace also holds one formation: its execution-log step id is
# content-derived (the rendered turns and observedAt), so it is known in advance
SEED_FORMATION = {
    "turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}],
    "observedAt": "2024-01-01T00:00:00Z",
}
SEED_ASYNC = {"turns": [{"role": "TURN_ROLE_USER", "content": "I work at Seedworks."}],
              "async": True}  # fmt: skip
STEP_ID = render(
    [Turn(role=TurnRole.USER, content="I live in Lisbon.")], datetime(2024, 1, 1, tzinfo=UTC)
).step_id
EXCERPT = {"ref": f"conv://bot.a/{STEP_ID}#turn=0-0"}

# the world's seeded chunk, a claim of both scopes (its id derives from its text)
CLAIM = rules.chunk_id("alpha fact", None)
# a second seeded claim of both scopes, forgotten by the world: its suppression rule
FORGOTTEN = rules.chunk_id("forgotten fact", None)
RULE = suppression_id(FORGOTTEN)

# a person's correction of the seeded claim (edit = supersede)
EDIT = {"text": "matrix edit", "summary": "matrix edit"}

# the usage report's range must start within the 400 days usage is kept
USAGE_SINCE = (datetime.now(UTC) - timedelta(days=7)).strftime("%Y-%m-%dT00:00:00Z")

# keyed memory (issue 18): the world seeds "harbor" and "conventions" in both scopes
KEYED_SEED = "keyed harbor note"
KEYED: dict[str, tuple[str, str, dict[str, Any] | None]] = {
    "remember": ("PUT", "/notes", {"content": "matrix note", "expectedVersion": 0}),
    "get": ("GET", "/harbor", None),
    "forget": ("DELETE", "/harbor", None),
    "list": ("GET", "", None),
    "link": ("POST", "/harbor:link", {"target": "conventions"}),
    "unlink": ("POST", "/harbor:unlink", {"target": "conventions"}),
    "recall": ("POST", ":recall", {"request": "harbor", "tokenBudget": 500}),
    "search": ("POST", ":search", {"query": "harbor"}),
}

KEYED_SEEDS = [("PUT", f"{base}/keyedMemories/{key}",
                {"content": f"{KEYED_SEED} {key}", "expectedVersion": 0})
               for base in ("/v1/agents/bot.a", "/v1/scopes/team.x")
               for key in ("harbor", "conventions")]  # fmt: skip

REQUESTS: dict[str, tuple[str, str, dict[str, Any] | bytes | None]] = {
    "agents.memory.form": ("POST", f"{A}/memory:form", FORM),
    "agents.memory.steps.get": ("GET", f"{A}/memory/steps/{STEP_ID}", None),
    "agents.memory.commit": ("POST", f"{A}/memory:commit", WRITE),
    "scopes.memory.commit": ("POST", f"{S}/memory:commit", WRITE),
    "agents.memory.dream": ("POST", f"{A}/memory:dream", None),
    "scopes.memory.dream": ("POST", f"{S}/memory:dream", None),
    "agents.memory.query": ("POST", f"{A}/memory:query", QUERY),
    "scopes.memory.query": ("POST", f"{S}/memory:query", QUERY),
    "agents.memory.search": ("POST", f"{A}/memory:search", SEARCH),
    "scopes.memory.search": ("POST", f"{S}/memory:search", SEARCH),
    "agents.memory.inspect": ("GET", f"{A}/memory:inspect", None),
    "scopes.memory.inspect": ("GET", f"{S}/memory:inspect", None),
    "agents.memories.evidence.list": ("GET", f"{A}/memories/{CLAIM}/evidence", None),
    "scopes.memories.evidence.list": ("GET", f"{S}/memories/{CLAIM}/evidence", None),
    "agents.memories.get": ("GET", f"{A}/memories/{CLAIM}", None),
    "scopes.memories.get": ("GET", f"{S}/memories/{CLAIM}", None),
    "agents.memory.readExcerpt": ("POST", f"{A}/memory:readExcerpt", EXCERPT),
    # the world's one execution-log step is the agent workspace's: read through /v1/scopes
    "scopes.memory.readExcerpt": ("POST", "/v1/scopes/bot.a/memory:readExcerpt", EXCERPT),
    "agents.memories.list": ("GET", f"{A}/memories", None),
    "scopes.memories.list": ("GET", f"{S}/memories?pageSize=1", None),
    "agents.memories.edit": ("POST", f"{A}/memories/{CLAIM}:edit", EDIT),
    "scopes.memories.edit": ("POST", f"{S}/memories/{CLAIM}:edit", EDIT),
    "agents.memories.forget": ("POST", f"{A}/memories/{CLAIM}:forget", None),
    "scopes.memories.forget": ("POST", f"{S}/memories/{CLAIM}:forget", None),
    "agents.memories.forgetGroup": ("POST", f"{A}/memories:forgetGroup",
                                    {"type": "fact", "validateOnly": True}),
    "scopes.memories.forgetGroup": ("POST", f"{S}/memories:forgetGroup",
                                    {"type": "fact", "validateOnly": True}),
    "agents.suppressions.list": ("GET", f"{A}/suppressions", None),
    "scopes.suppressions.list": ("GET", f"{S}/suppressions", None),
    "agents.suppressions.delete": ("DELETE", f"{A}/suppressions/{RULE}", None),
    "scopes.suppressions.delete": ("DELETE", f"{S}/suppressions/{RULE}", None),
    "agents.memory.brief.get": ("GET", f"{A}/memory/brief", None),
    "scopes.memory.brief.get": ("GET", f"{S}/memory/brief", None),
    "agents.memory.export": ("GET", f"{A}/memory:export", None),
    "scopes.memory.export": ("GET", f"{S}/memory:export", None),
    # an import needs an empty scope: these name scopes the world leaves empty
    "agents.memory.import": ("POST", "/v1/agents/bot.b/memory:import", IMPORT),
    "scopes.memory.import": ("POST", "/v1/scopes/team.z/memory:import", IMPORT),
    "agents.list": ("GET", "/v1/agents", None),
    "scopes.list": ("GET", "/v1/scopes", None),
    "scopes.create": ("POST", "/v1/scopes", {"scopeId": "team.y", "kind": "SUBJECT",
                                           "timeZone": "Europe/Lisbon"}),
    "scopes.patch": ("PATCH", S, {"timeZone": "Europe/Lisbon"}),
    "scopes.delete": ("DELETE", S, None),
    "memory.vocabulary.declare": ("PUT", V, DECLARE),
    "memory.vocabulary.get": ("GET", f"{V}?scopeId=bot.a", None),
    "memory.vocabulary.delete": ("DELETE", f"{V}?scopeId=bot.a", None),
    "billing.get": ("GET", "/v1/billing", None),
    "billing.setOverageMultiple": ("POST", "/v1/billing:setOverageMultiple",
                                   {"overageMultiple": 3}),
    "billing.usage.formationTokens": ("GET", f"/v1/billing/usage/formation-tokens?startTime="
                                      f"{USAGE_SINCE}&groupBy=scope", None),
    "operations.get": ("GET", "/v1/operations/{op}", None),
    "operations.list": ("GET", "/v1/operations", None),
    "caller.get": ("GET", "/v1/caller", None),
    "apiKeys.create": ("POST", "/v1/apiKeys", {"role": "member", "agentSelectors": ["bot.*"]}),
    "apiKeys.list": ("GET", "/v1/apiKeys", None),
    "apiKeys.revoke": ("POST", "/v1/apiKeys/kmember{tag}:revoke", None),
    "roleBindings.grant": ("POST", "/v1/roleBindings:grant",
                           {"principal": "user:newcomer{tag}", "role": "member"}),
    "roleBindings.revoke": ("POST", "/v1/roleBindings:revoke",
                            {"principal": "user:elsewhere{tag}", "role": "member"}),
    "roleBindings.list": ("GET", "/v1/roleBindings", None),
    "users.create": ("POST", "/v1/users", {"principal": "user:newcomer2{tag}"}),
    **{f"{c}.keyedMemories.{name}": (method, f"{base}/keyedMemories{tail}", body)
       for c, base in (("agents", A), ("scopes", S))
       for name, (method, tail, body) in KEYED.items()},
}  # fmt: skip
# `{tag}` keeps the names that are unique across enterprises (principals, key ids)
# apart when worlds share one database (the emulator run); it is "" elsewhere.

EXPECTED: dict[str, tuple[int, int, int, int | None, int]] = {
    # operation              root other noperm noreach key
    "agents.memory.form":    (200, 200, 404, 404, 200),
    "agents.memory.steps.get": (200, 404, 404, 404, 200),
    "agents.memory.commit":  (200, 200, 404, 404, 200),
    "scopes.memory.commit":  (200, 200, 404, 404, 200),
    # the pass never creates a scope: the other enterprise has none of that name
    "agents.memory.dream":   (200, 404, 404, 404, 200),
    "scopes.memory.dream":   (200, 404, 404, 404, 200),
    "agents.memory.query":   (200, 404, 404, 404, 200),
    "scopes.memory.query":   (200, 404, 404, 404, 200),
    "agents.memory.search":  (200, 404, 404, 404, 200),
    "scopes.memory.search":  (200, 404, 404, 404, 200),
    "agents.memory.inspect": (200, 404, 404, 404, 200),
    "scopes.memory.inspect": (200, 404, 404, 404, 200),
    "agents.memories.evidence.list": (200, 404, 404, 404, 200),
    "scopes.memories.evidence.list": (200, 404, 404, 404, 200),
    "agents.memories.get":   (200, 404, 404, 404, 200),
    "scopes.memories.get":   (200, 404, 404, 404, 200),
    "agents.memory.readExcerpt": (200, 404, 404, 404, 200),
    "scopes.memory.readExcerpt": (200, 404, 404, 404, 200),
    "agents.memories.list":  (200, 404, 404, 404, 200),
    "scopes.memories.list":  (200, 404, 404, 404, 200),
    # agent.memory:edit is never usable with an API key (MEMORY_CHANGE_WITH_API_KEY)
    "agents.memories.edit":  (200, 404, 404, 404, 403),
    "scopes.memories.edit":  (200, 404, 404, 404, 403),
    # forgetting changes memory by hand: never with an API key (MEMORY_CHANGE_WITH_API_KEY)
    "agents.memories.forget": (200, 404, 404, 404, 403),
    "scopes.memories.forget": (200, 404, 404, 404, 403),
    "agents.memories.forgetGroup": (200, 404, 404, 404, 403),
    "scopes.memories.forgetGroup": (200, 404, 404, 404, 403),
    "agents.suppressions.list": (200, 404, 404, 404, 200),
    "scopes.suppressions.list": (200, 404, 404, 404, 200),
    "agents.suppressions.delete": (200, 404, 404, 404, 403),
    "scopes.suppressions.delete": (200, 404, 404, 404, 403),
    "agents.memory.brief.get": (200, 404, 404, 404, 200),
    "scopes.memory.brief.get": (200, 404, 404, 404, 200),
    "agents.memory.export":  (200, 404, 404, 404, 200),
    "scopes.memory.export":  (200, 404, 404, 404, 200),
    "agents.memory.import":  (200, 200, 404, 404, 200),
    "scopes.memory.import":  (200, 200, 404, 404, 200),
    "agents.list":           (200, 200, 403, 200, 200),
    "scopes.list":           (200, 200, 403, 200, 200),
    "scopes.create":         (200, 200, 403, 404, 200),
    "scopes.patch":          (200, 404, 404, 404, 200),
    "scopes.delete":         (200, 404, 403, 404, 200),
    "memory.vocabulary.declare": (200, 200, 403, 404, 403),
    "memory.vocabulary.get":     (200, 200, 404, 404, 200),
    "memory.vocabulary.delete":  (200, 404, 403, 404, 403),
    "billing.get":           (200, 200, 403, None, 200),
    "billing.setOverageMultiple": (200, 200, 403, None, 403),
    "billing.usage.formationTokens": (200, 200, 403, None, 200),
    "operations.get":        (200, 404, 403, 404, 200),
    "operations.list":       (200, 200, 403, 200, 200),
    "caller.get":            (200, 200, 200, 200, 200),
    "apiKeys.create":        (200, 200, 403, None, 403),
    "apiKeys.list":          (200, 200, 403, None, 403),
    "apiKeys.revoke":        (200, 404, 403, None, 403),
    "roleBindings.grant":    (200, 200, 403, None, 403),
    "roleBindings.revoke":   (200, 404, 403, None, 403),
    "roleBindings.list":     (200, 200, 403, None, 403),
    "users.create":          (200, 200, 403, None, 403),
    # keyed memory: usable with an API key (the agent's own notebook); a first remember
    # creates the scope, so the other enterprise's root writes into its own
    **{f"{c}.keyedMemories.{name}": ((200, 200, 404, 404, 200) if name == "remember"
                                     else (200, 404, 404, 404, 200))
       for c in ("agents", "scopes") for name in KEYED},
}  # fmt: skip

MATRIX: dict[str, Row] = {
    op: Row(*REQUESTS[op], *EXPECTED[op]) for op in sorted(REQUESTS.keys() & EXPECTED.keys())
}
# every (route, case) pair that applies: each route x 9 cases, less the 10 n/a
MATRIX_CASES = [
    (op, case) for op, row in MATRIX.items() for case in CASES if getattr(row, case) is not None
]


# the routes whose answer only reads, whoever sends it: every case of theirs shares a world
READ_ONLY = frozenset(
    {op for op, row in MATRIX.items() if row.method == "GET"}
    | {f"{level}.{verb}" for level in ("agents", "scopes")
       for verb in ("memory.query", "memory.search", "memory.readExcerpt",
                    "keyedMemories.recall", "keyedMemories.search")}
)  # fmt: skip


def writes(operation_id: str, case: str) -> bool:
    """Whether the case may write (a good request to a route that writes): such a case
    gets a world of its own; every other case is checked to write nothing at all."""
    expected: int = getattr(MATRIX[operation_id], case)
    return expected < 400 and operation_id not in READ_ONLY


SHARED_CASES = [(op, case) for op, case in MATRIX_CASES if not writes(op, case)]
OWN_CASES = [(op, case) for op, case in MATRIX_CASES if writes(op, case)]

OK = (200, 200, 200, 200, 200)  # for the world's own requests

# what an outsider's answer must never name
SECRETS = ("bot.a", "team.x", "kroot{tag}", "kmember{tag}", "krevoked{tag}", "kexpired{tag}",
           "alpha fact", "Lisbon", STEP_ID, "Matrixperson", "forgotten fact", RULE,
           KEYED_SEED)  # fmt: skip


# the world every case runs in


Snapshot = Callable[[str | None], Any]


@dataclass
class World:
    """Two enterprises, their callers and credentials, and a way to read every row:
    `snapshot(None)` every row there is, `snapshot(enterprise)` one enterprise's."""

    app: flask.Flask
    tokens: dict[str, str]
    snapshot: Snapshot
    tag: str = ""
    operation_id: str = ""  # of the world's asynchronous formation
    # the snapshot the last check_case ended on, (watched, snapshot), while nothing has been
    # sent since: the next check starts from it instead of reading every row again
    checked: tuple[str | None, Any] | None = None
    # False while a check runs and after one failed: a shared world is then built anew
    sound: bool = True

    @property
    def target(self) -> str:
        return TARGET + self.tag

    @property
    def other(self) -> str:
        return OTHER + self.tag

    def row(self, operation_id: str) -> Row:
        """The matrix row with this world's names filled in."""
        row = MATRIX[operation_id]
        path = row.path.format(tag=self.tag, op=self.operation_id)
        return row._replace(path=path, body=_fill(row.body, self.tag))

    def secrets(self) -> list[str]:
        return [secret.format(tag=self.tag) for secret in SECRETS]

    def before(self, watched: str | None) -> Any:
        """The rows a request starts from: the last check's, if nothing was sent since."""
        if self.checked is not None and self.checked[0] == watched:
            return self.checked[1]
        return self.snapshot(watched)

    def send(self, row: Row, header: str | None) -> Any:
        self.checked = None
        headers = {"Authorization": header} if header is not None else {}
        if isinstance(row.body, bytes):
            return self.app.test_client().open(
                row.path, method=row.method, headers=headers, data=row.body,
                content_type=okf_archive.MEDIA_TYPE,
            )  # fmt: skip
        return self.app.test_client().open(
            row.path, method=row.method, headers=headers,
            data=json.dumps(row.body) if row.body is not None else None,
            content_type="application/json",
        )  # fmt: skip


def _fill(value: Any, tag: str) -> Any:
    if isinstance(value, str):
        return value.replace("{tag}", tag)
    if isinstance(value, dict):
        return {k: _fill(v, tag) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, tag) for v in value]
    return value


def _secret(name: str) -> str:
    return (name.encode().hex() * 64)[:64]


def _user(container: Container, enterprise: str, principal: str, role: Role | None,
          agents: list[str] | None = None, subjects: list[str] | None = None) -> str:  # fmt: skip
    identity = container.identity
    identity.put_user(User(enterprise_id=enterprise, principal=principal,
                           token_hash=hash_secret(_secret(principal))))  # fmt: skip
    if role is not None:
        identity.put_binding(RoleBinding(enterprise_id=enterprise, principal=principal, role=role,
                                         agent_selectors=agents or [],
                                         subject_selectors=subjects or []))  # fmt: skip
    return user_token(enterprise, principal, _secret(principal))


def _key(container: Container, target: str, key_id: str, role: Role, **fields: Any) -> str:
    now = datetime.now(UTC)
    container.identity.put_binding(RoleBinding(
        enterprise_id=target, principal=f"api_key:{key_id}", role=role,
        agent_selectors=["*"], subject_selectors=["*"]))  # fmt: skip
    container.identity.create_api_key(ApiKey(
        enterprise_id=target, key_id=key_id, secret_hash=hash_secret(_secret(key_id)),
        created_by="user:root", created_at=now - timedelta(days=2), **fields))  # fmt: skip
    return api_key_token(key_id, _secret(key_id))


def build_world(container: Container, snapshot: Snapshot, tag: str = "") -> World:
    """The target enterprise "local" (a root, three users, four keys, an agent workspace
    with memory, one formation and a vocabulary, and a subject scope with memory) and another
    enterprise "acme" with its root; every enterprise id, principal and key id ends
    with `tag`."""
    now = datetime.now(UTC)
    an_hour_ago = now - timedelta(hours=1)
    target, other = TARGET + tag, OTHER + tag
    for enterprise in (target, other):
        container.identity.create_enterprise(Enterprise(enterprise_id=enterprise, created_at=now))
    tokens = {
        "root": _user(container, target, f"user:root{tag}", Role.ROOT),
        "other": _user(container, other, f"user:acme-root{tag}", Role.ROOT),
        "nobody": _user(container, target, f"user:nobody{tag}", None),
        "noreach": _user(container, target, f"user:elsewhere{tag}", Role.MEMBER, ["other.*"],
                         ["other.*"]),
        "everywhere": _user(container, target, f"user:everywhere{tag}", Role.MEMBER, ["*"],
                            ["*"]),
        "key": _key(container, target, f"kroot{tag}", Role.ROOT),
        "member-key": _key(container, target, f"kmember{tag}", Role.MEMBER),
        "revoked": _key(container, target, f"krevoked{tag}", Role.ROOT, revoked_at=an_hour_ago),
        "expired": _key(container, target, f"kexpired{tag}", Role.ROOT, expire_time=an_hour_ago),
    }  # fmt: skip
    world = World(create_app(container), tokens, snapshot, tag)
    seed = {
        "chunks": [{"text": "alpha fact"}, {"text": "forgotten fact"}],
        "nodes": [{"nodeId": "n1", "label": "N1"}, {"nodeId": "n2"}],
        "edges": [{"source": "n1", "relation": "KNOWS", "target": "n2"}],
    }
    for method, path, body in (("POST", f"{A}/memory:commit", seed),
                               ("POST", f"{S}/memory:commit", seed),
                               ("POST", f"{A}/memory:form", SEED_FORMATION),
                               ("PUT", V, SEED_VOCABULARY),
                               ("POST", f"{A}/memories/{FORGOTTEN}:forget", None),
                               ("POST", f"{S}/memories/{FORGOTTEN}:forget", None),
                               *KEYED_SEEDS):  # fmt: skip
        answer = world.send(Row(method, path, body, *OK), f"Bearer {tokens['root']}")
        assert answer.status_code == 200, answer.get_data(as_text=True)
    operation = world.send(Row("POST", f"{A}/memory:form", SEED_ASYNC, *OK),
                           f"Bearer {tokens['root']}")  # fmt: skip
    assert operation.status_code == 200, operation.get_data(as_text=True)
    world.operation_id = operation.get_json()["name"].removeprefix("operations/")
    deadline = time.monotonic() + 60  # let it finish, so its writes land before any case runs
    while True:
        polled = world.send(Row("GET", f"/v1/operations/{world.operation_id}", None, *OK),
                            f"Bearer {tokens['root']}")  # fmt: skip
        if polled.get_json().get("done") or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert polled.get_json()["done"], polled.get_json()
    return world


def credential(
    world: World, row: Row, operation_id: str, case: str, malformed: tuple[str, ...]
) -> list[str | None]:
    """The Authorization headers a case sends (several for `malformed`)."""
    if case == "nocred":
        return [None]
    if case == "malformed":
        return list(malformed)
    if case == "noperm":
        permission = _route(operation_id).permission
        member_has_it = permission is None or permission in ROLE_PERMISSIONS[Role.MEMBER]
        return [f"Bearer {world.tokens['nobody' if member_has_it else 'everywhere']}"]
    return [f"Bearer {world.tokens[case]}"]


def _route(operation_id: str) -> Any:
    return next(r for r in ALL_ROUTES if r.operation_id == operation_id)


def run_case(make_world: Callable[[], World], operation_id: str, case: str) -> None:
    """One case in a world of its own."""
    check_case(make_world(), operation_id, case)


class SharedWorld:
    """The one world of a module's `SHARED_CASES`, built on first use and built anew
    after a failed check (which may have left it changed)."""

    def __init__(self, make_world: Callable[[], World]) -> None:
        self._make = make_world
        self._world: World | None = None

    def __call__(self) -> World:
        if self._world is None or not self._world.sound:
            self._world = self._make()
        return self._world


def check_shared_case(
    shared: SharedWorld, operation_id: str, case: str, malformed: tuple[str, ...] = MALFORMED
) -> None:
    """One of `SHARED_CASES` in the module's shared world: it must write nothing at all."""
    assert not writes(operation_id, case), (operation_id, case)
    check_case(shared(), operation_id, case, malformed, shared=True)


def check_case(
    world: World,
    operation_id: str,
    case: str,
    malformed: tuple[str, ...] = MALFORMED,
    shared: bool = False,
) -> None:
    """Send the case's request(s); check the status and that nothing was written where
    nothing may be: anywhere for a refusal, in the target enterprise for an outsider,
    and anywhere for every case of a `shared` world (which later cases find as built)."""
    row = world.row(operation_id)
    expected: int = getattr(row, case)
    watched = (
        None if expected >= 400 or shared else world.target if case in OUTSIDERS else ""
    )  # fmt: skip
    world.sound = False
    for header in credential(world, row, operation_id, case, malformed):
        before = world.before(watched) if watched != "" else None
        response = world.send(row, header)
        text = _text(response)
        assert response.status_code == expected, (operation_id, case, header, text)
        if response.status_code >= 400:
            _check_refusal(response, expected)
        if watched != "":
            after = world.snapshot(watched)
            where = watched or ("a refusal" if expected >= 400 else "a case of a shared world")
            assert after == before, f"{case}: {where} wrote"
            world.checked = (watched, after)
        if case in OUTSIDERS:
            body = "" if isinstance(row.body, bytes) else json.dumps(row.body)
            asked = row.path + body  # echoing the caller's own words is fine
            leaked = [s for s in world.secrets() if s in text and s not in asked]
            assert not leaked, f"{case}: the answer names {leaked}: {text}"
    world.sound = True


def _text(response: Any) -> str:
    """The answer as text; an export's files unpacked, so the leak check reads them."""
    if response.mimetype == okf_archive.MEDIA_TYPE:
        return repr(okf_archive.unpack(response.data))
    return str(response.get_data(as_text=True))


def _check_refusal(response: Any, code: int) -> None:
    error = response.get_json()["error"]
    status = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}[code]
    assert (error["code"], error["status"]) == (code, status)
    if code == 401:
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="jennah"'


# on the fakes


def fake_world(tmp_path: Path) -> World:
    store, identity, vocabularies = FormingFakeStore(), FakeIdentityStore(), FakeVocabularyStore()
    container = make_container(tmp_path, store=store, identity=identity, vocabularies=vocabularies)

    def snapshot(enterprise: str | None) -> Any:
        return (store.snapshot(enterprise), identity.snapshot(enterprise),
                vocabularies.snapshot(enterprise))  # fmt: skip

    return build_world(container, snapshot)


def test_every_route_is_in_the_matrix() -> None:
    routes = {route.operation_id for route in ALL_ROUTES}
    for table in (REQUESTS, EXPECTED):
        assert set(table) == routes, (
            f"add {sorted(routes - set(table))}; drop {sorted(set(table) - routes)}"
        )
    for operation_id, row in MATRIX.items():
        route = _route(operation_id)
        path = row.path.partition("?")[0]
        assert (row.method, route.pattern.match(path) is not None) == (route.method, True)


def test_the_matrix_covers_every_route_and_case() -> None:
    assert len(MATRIX_CASES) == len(ALL_ROUTES) * len(CASES) - 10


def test_every_management_route_refuses_api_keys() -> None:
    for operation_id, row in MATRIX.items():
        if _route(operation_id).permission in USER_ONLY_PERMISSIONS:
            assert row.key == 403, operation_id


def test_the_cases_split_into_shared_and_own() -> None:
    assert sorted(SHARED_CASES + OWN_CASES) == sorted(MATRIX_CASES)
    assert all(case in ("root", "key", "other") for _, case in OWN_CASES)
    assert {op for op, _ in OWN_CASES} == set(MATRIX) - READ_ONLY


@pytest.fixture(scope="module")
def shared_fake_world(tmp_path_factory: pytest.TempPathFactory) -> SharedWorld:
    return SharedWorld(lambda: fake_world(tmp_path_factory.mktemp("shared")))


@pytest.mark.parametrize(("operation_id", "case"), SHARED_CASES)
def test_matrix_in_a_shared_world(
    shared_fake_world: SharedWorld, operation_id: str, case: str
) -> None:
    check_shared_case(shared_fake_world, operation_id, case)


@pytest.mark.parametrize(("operation_id", "case"), OWN_CASES)
def test_matrix(tmp_path: Path, operation_id: str, case: str) -> None:
    run_case(lambda: fake_world(tmp_path), operation_id, case)


# "answered exactly as though the scope did not exist"

READS = ("agents.memory.query", "agents.memory.inspect", "scopes.memory.query",
         "scopes.memory.inspect", "scopes.delete", "agents.memory.steps.get",
         "agents.memories.evidence.list", "scopes.memories.evidence.list",
         "scopes.patch", "agents.memory.export", "scopes.memory.export",
         "agents.suppressions.list", "scopes.suppressions.list")  # fmt: skip
SCOPED = tuple(op for op in MATRIX if _route(op).scope is not None or _route(op).scope_in_request)


def _without_targets(world: World) -> None:
    for path in ("/v1/scopes/bot.a", "/v1/scopes/team.x"):
        answer = world.send(
            Row("DELETE", path, None, *([200] * 9)), f"Bearer {world.tokens['root']}"
        )
        assert answer.status_code == 200  # fmt: skip


@pytest.mark.parametrize("operation_id", READS)
def test_no_reach_is_answered_as_a_missing_scope(tmp_path: Path, operation_id: str) -> None:
    row = MATRIX[operation_id]
    world = fake_world(tmp_path / "a")
    unreached = world.send(row, f"Bearer {world.tokens['noreach']}")
    empty = fake_world(tmp_path / "b")
    _without_targets(empty)
    missing = empty.send(row, f"Bearer {empty.tokens['root']}")
    assert unreached.status_code == missing.status_code == 404
    assert unreached.get_json() == missing.get_json()


@pytest.mark.parametrize("operation_id", SCOPED)
def test_without_reach_existence_makes_no_difference(tmp_path: Path, operation_id: str) -> None:
    row = MATRIX[operation_id]
    world = fake_world(tmp_path / "a")
    present = world.send(row, f"Bearer {world.tokens['noreach']}")
    empty = fake_world(tmp_path / "b")
    _without_targets(empty)
    absent = empty.send(row, f"Bearer {empty.tokens['noreach']}")
    assert present.status_code == absent.status_code == 404
    assert present.get_json() == absent.get_json()


def test_an_agent_route_on_a_subject_scope_is_answered_as_missing(tmp_path: Path) -> None:
    world = fake_world(tmp_path)
    root = f"Bearer {world.tokens['root']}"
    wrong_kind = world.send(Row("POST", "/v1/agents/team.x/memory:query", QUERY, *OK), root)
    missing = world.send(Row("POST", "/v1/agents/ghost/memory:query", QUERY, *OK), root)
    assert wrong_kind.status_code == missing.status_code == 404
    assert wrong_kind.get_json()["error"]["message"] == "agent workspace 'team.x' was not found"
    assert wrong_kind.get_json()["error"]["details"] == missing.get_json()["error"]["details"]


def test_the_member_role_cannot_read_token_usage() -> None:
    assert Permission.BILLING_USAGE_READ not in ROLE_PERMISSIONS[Role.MEMBER]
    assert Permission.BILLING_USAGE_READ in ROLE_PERMISSIONS[Role.ADMINISTRATOR]
