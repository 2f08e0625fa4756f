"""The typed client: one method per route of the HTTP API.

    from jennah.client import Client

    client = Client()  # endpoint and credential as `jnh` finds them
    memory = client.scope("team")  # /v1/scopes/team; client.agent("bot") is /v1/agents/bot
    memory.commit(chunks=[{"text": "Alice works at Acme"}])
    for candidate in memory.search("where does Alice work").candidates: ...
    for claim in memory.list_memories(): ...  # every page

A method's keyword arguments are its request's fields by their Python names (snake_case),
or `request=` the request itself (a model, or a mapping of its wire names). Requests are
checked with the server's own wire models (jennah.api.dto) before they are sent: a bad one
raises InvalidArgument without a call. Answers are those models too. Retries follow
`jennah.client.routes`; pass `retry=None` to a call (or the client) to turn them off, or a
`Retry` of your own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from jennah.api import dto
from jennah.client import errors
from jennah.client.credentials import Connection
from jennah.client.pagination import Pager
from jennah.client.retry import DEFAULT_RETRY, Retry
from jennah.client.routes import RPCS, Rpc
from jennah.client.transport import Transport, json_object

Model = TypeVar("Model", bound=BaseModel)
Request = BaseModel | Mapping[str, Any] | None
OPERATION_PREFIX = "operations/"


class Default(Enum):
    """`retry=DEFAULT`: the client's policy where the route is idempotent, else none."""

    RETRY = "default"


DEFAULT = Default.RETRY
RetryArg = Retry | None | Default


def segment(value: str) -> str:
    """A value escaped as one path segment."""
    return quote(value, safe=":")


class _Caller:
    """Sends one route's request and reads its answer (shared by the client and handles)."""

    def __init__(self, transport: Transport, retry: Retry | None) -> None:
        self.transport = transport
        self.retry = retry

    def send(
        self,
        operation_id: str,
        path: Mapping[str, str] | None = None,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        content: bytes | None = None,
        retry: RetryArg = DEFAULT,
    ) -> httpx.Response:
        rpc = RPCS[operation_id]
        url = rpc.template.format(**{k: segment(v) for k, v in (path or {}).items()})
        headers = {"Content-Type": rpc.body_media_type} if rpc.body_media_type else None
        return self.transport.request(
            rpc.method, url, json=body, params=params, content=content, headers=headers,
            retry=self._policy(rpc, body, retry),
        )  # fmt: skip

    def call(
        self,
        operation_id: str,
        path: Mapping[str, str] | None = None,
        request: Request = None,
        params: Mapping[str, Any] | None = None,
        retry: RetryArg = DEFAULT,
        **fields: Any,
    ) -> Any:
        """The answer as the route's response model (the body built from `request` and
        `fields`; the query from `params`)."""
        rpc = RPCS[operation_id]
        body = None if rpc.request is None else wire_body(rpc.request, request, fields)
        query = None if rpc.params is None else wire_params(rpc.params, params or {})
        response = self.send(operation_id, path, body=body, params=query, retry=retry)
        assert rpc.response is not None, operation_id
        try:
            return rpc.response.model_validate(json_object(response))
        except ValidationError as exc:
            raise errors.Unknown(
                f"the answer of {operation_id} is no {rpc.response.__name__}: {exc}",
                code=response.status_code, response=response,
            ) from None  # fmt: skip

    def pager(
        self,
        operation_id: str,
        items: str,
        path: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        retry: RetryArg = DEFAULT,
    ) -> Pager[Any, Any]:
        given = {k: v for k, v in (params or {}).items() if v is not None}
        first = str(given.pop("page_token", ""))

        def fetch(token: str) -> Any:
            asked = given | ({"page_token": token} if token else {})
            return self.call(operation_id, path, params=asked, retry=retry)

        return Pager(fetch, items, first)

    def body_pager(
        self,
        operation_id: str,
        items: str,
        path: Mapping[str, str],
        fields: Mapping[str, Any],
        retry: RetryArg = DEFAULT,
    ) -> Pager[Any, Any]:
        """A list sent as POST: the page (page_size, page_token) travels in the body."""
        given = {k: v for k, v in fields.items() if v is not None}
        first = str(given.pop("page_token", ""))

        def fetch(token: str) -> Any:
            asked = given | ({"page_token": token} if token else {})
            return self.call(operation_id, path, retry=retry, **asked)

        return Pager(fetch, items, first)

    def _policy(self, rpc: Rpc, body: dict[str, Any] | None, retry: RetryArg) -> Retry | None:
        if not isinstance(retry, Default):
            return retry
        return self.retry if rpc.retried(body) else None


def wire_body(model: type[Model], request: Request, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of a request: `request` (a model or wire-named mapping) with `fields`
    (Python names) over it, validated by the route's own request model."""
    given: dict[str, Any] = {}
    if isinstance(request, BaseModel):
        given = request.model_dump(mode="json", by_alias=True, exclude_unset=True)
    elif request is not None:
        given = dict(request)
    given |= {k: v for k, v in fields.items() if v is not None}
    checked = _validated(model, given)
    dumped: dict[str, Any] = checked.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped


def wire_params(model: type[Model], params: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters (Python names), validated, as the strings the URL carries."""
    checked = _validated(model, {k: v for k, v in params.items() if v is not None})
    dumped = checked.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return {k: _query_value(v) for k, v in dumped.items() if v is not None}


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _validated(model: type[Model], data: Mapping[str, Any]) -> Model:
    try:
        return model.model_validate(dict(data), by_alias=True, by_name=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise errors.InvalidArgument(
            f"{field}: {first['msg']}" if field else first["msg"],
            code=400, reason="INVALID_FIELD", metadata={"field": field},
        ) from exc  # fmt: skip


class Scope:
    """The memory of one scope: /v1/scopes/{scopeId}/… (any kind of scope)."""

    collection = "scopes"

    def __init__(self, caller: _Caller, scope_id: str) -> None:
        self._caller = caller
        self.id = scope_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"

    @property
    def _path(self) -> dict[str, str]:
        param = "agentInstanceId" if self.collection == "agents" else "scopeId"
        return {param: self.id}

    def _op(self, name: str) -> str:
        return f"{self.collection}.{name}"

    # writing

    def commit(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.CommitResponse:
        """memory:commit: chunks, nodes, edges and supersessions in one transaction (never
        retried by default: see jennah.client.routes)."""
        op = self._op("memory.commit")
        answer: dto.CommitResponse = self._caller.call(
            op, self._path, request, retry=retry, **fields
        )
        return answer

    def dream(self, *, retry: RetryArg = DEFAULT) -> dto.DreamResponse:
        """memory:dream: the lifecycle pass now."""
        response = self._caller.send(self._op("memory.dream"), self._path, retry=retry)
        return dto.DreamResponse.model_validate(json_object(response))

    def import_(self, archive: bytes, *, retry: RetryArg = DEFAULT) -> dto.ImportResponse:
        """memory:import: OKF files (a .tar.gz as `export` gives) into an empty scope."""
        op = self._op("memory.import")
        response = self._caller.send(op, self._path, content=archive, retry=retry)
        return dto.ImportResponse.model_validate(json_object(response))

    # reading

    def query(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.QueryResponse:
        """memory:query: by meaning and words, metadata and the graph."""
        answer: dto.QueryResponse = self._caller.call(
            self._op("memory.query"), self._path, request, retry=retry, **fields
        )
        return answer

    def search(
        self, query: str | None = None, *, request: Request = None, retry: RetryArg = DEFAULT,
        **fields: Any,
    ) -> dto.SearchResponse:  # fmt: skip
        """memory:search: the claims closest to a message (the search_memory tool)."""
        answer: dto.SearchResponse = self._caller.call(
            self._op("memory.search"), self._path, request, retry=retry, query=query, **fields
        )
        return answer

    def read_excerpt(
        self, ref: str | None = None, *, request: Request = None, retry: RetryArg = DEFAULT
    ) -> dto.ReadExcerptResponse:
        """memory:readExcerpt: the turns a conv:// reference cites."""
        answer: dto.ReadExcerptResponse = self._caller.call(
            self._op("memory.readExcerpt"), self._path, request, retry=retry, ref=ref
        )
        return answer

    def inspect(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.InspectResponse, dto.Chunk]:
        """memory:inspect: every chunk (iterate) or page (`.pages`, with nodes and edges
        when graph=True)."""
        return self._caller.pager(self._op("memory.inspect"), "chunks", self._path, params, retry)

    def export(self, *, retry: RetryArg = DEFAULT) -> bytes:
        """memory:export: the OKF files as .tar.gz bytes."""
        return self._caller.send(self._op("memory.export"), self._path, retry=retry).content

    def get_brief(
        self, variant: str | None = None, *, retry: RetryArg = DEFAULT
    ) -> dto.BriefResponse:
        """memory/brief: the block an agent starts a conversation with."""
        answer: dto.BriefResponse = self._caller.call(
            self._op("memory.brief.get"), self._path, params={"variant": variant}, retry=retry
        )
        return answer

    # claims

    def get_memory(self, memory_id: str, *, retry: RetryArg = DEFAULT) -> dto.ClaimResponse:
        """One whole claim whatever its status, with its lineage and OKF file."""
        answer: dto.ClaimResponse = self._caller.call(
            self._op("memories.get"), self._claim(memory_id), retry=retry
        )
        return answer

    def list_memories(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListMemoriesResponse, dto.MemoryCardItem]:
        """The memory card, every page (filter=, page_size=, page_token=)."""
        return self._caller.pager(self._op("memories.list"), "memories", self._path, params, retry)

    def list_evidence(
        self, memory_id: str, *, retry: RetryArg = DEFAULT
    ) -> dto.ListEvidenceResponse:
        """A claim's evidence ledger."""
        answer: dto.ListEvidenceResponse = self._caller.call(
            self._op("memories.evidence.list"), self._claim(memory_id), retry=retry
        )
        return answer

    def edit_memory(
        self, memory_id: str, text: str | None = None, *, request: Request = None,
        retry: RetryArg = DEFAULT, **fields: Any,
    ) -> dto.EditMemoryResponse:  # fmt: skip
        """:edit: a person's correction (supersedes the claim)."""
        answer: dto.EditMemoryResponse = self._caller.call(
            self._op("memories.edit"), self._claim(memory_id), request, retry=retry,
            text=text, **fields,
        )  # fmt: skip
        return answer

    def forget_memory(self, memory_id: str, *, retry: RetryArg = DEFAULT) -> dto.ForgetResponse:
        """:forget: retract the claim and suppress it."""
        answer: dto.ForgetResponse = self._caller.call(
            self._op("memories.forget"), self._claim(memory_id), retry=retry
        )
        return answer

    def forget_group(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.ForgetGroupResponse:
        """:forgetGroup: validate_only=True counts; then expected_count= forgets."""
        answer: dto.ForgetGroupResponse = self._caller.call(
            self._op("memories.forgetGroup"), self._path, request, retry=retry, **fields
        )
        return answer

    def list_suppressions(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListSuppressionsResponse, dto.SuppressionResource]:
        """The scope's suppression rules, every page."""
        op = self._op("suppressions.list")
        return self._caller.pager(op, "suppressions", self._path, params, retry)

    def delete_suppression(self, suppression_id: str, *, retry: RetryArg = DEFAULT) -> None:
        """Remove a suppression rule: the fact may be formed again."""
        path = self._path | {"suppressionId": suppression_id}
        self._caller.send(self._op("suppressions.delete"), path, retry=retry)

    # keyed memory: the notebook of entries named by subject

    def remember(
        self, key: str, content: str, expected_version: int, *, retry: RetryArg = DEFAULT
    ) -> dto.KeyedMemoryResource:
        """PUT keyedMemories/{key}: create (expected_version=0; AlreadyExists when the key
        is taken) or update while the stored version is expected_version (else Aborted,
        reason KEYED_MEMORY_VERSION_MISMATCH, currentVersion in its metadata). Never retried
        by default: see jennah.client.routes."""
        answer: dto.KeyedMemoryResource = self._caller.call(
            self._op("keyedMemories.remember"), self._entry(key), retry=retry,
            content=content, expected_version=expected_version,
        )  # fmt: skip
        return answer

    def get_keyed(self, key: str, *, retry: RetryArg = DEFAULT) -> dto.KeyedMemoryResource:
        """One entry with its links."""
        answer: dto.KeyedMemoryResource = self._caller.call(
            self._op("keyedMemories.get"), self._entry(key), retry=retry
        )
        return answer

    def list_keyed(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListKeyedMemoriesResponse, dto.KeyedMemoryResource]:
        """Every entry, most recently updated first (page_size=, page_token=)."""
        op = self._op("keyedMemories.list")
        return self._caller.pager(op, "keyed_memories", self._path, params, retry)

    def forget_keyed(self, key: str, *, retry: RetryArg = DEFAULT) -> None:
        """forget_memory: delete the entry and every link to or from it."""
        self._caller.send(self._op("keyedMemories.forget"), self._entry(key), retry=retry)

    def link(self, key: str, target: str, *, retry: RetryArg = DEFAULT) -> dto.KeyedMemoryResource:
        """:link two entries (symmetric; at most 12 links per entry); answers `key`'s entry."""
        answer: dto.KeyedMemoryResource = self._caller.call(
            self._op("keyedMemories.link"), self._entry(key), retry=retry, target=target
        )
        return answer

    def unlink(
        self, key: str, target: str, *, retry: RetryArg = DEFAULT
    ) -> dto.KeyedMemoryResource:
        """:unlink two entries; answers `key`'s entry."""
        answer: dto.KeyedMemoryResource = self._caller.call(
            self._op("keyedMemories.unlink"), self._entry(key), retry=retry, target=target
        )
        return answer

    def recall(
        self, request: str, token_budget: int, *, retry: RetryArg = DEFAULT
    ) -> dto.RecallResponse:
        """:recall: the entries that matter for `request` within `token_budget` tokens,
        then their linked neighbours (via LINK) while space remains."""
        answer: dto.RecallResponse = self._caller.call(
            self._op("keyedMemories.recall"), self._path, retry=retry,
            request={"request": request, "tokenBudget": token_budget},
        )  # fmt: skip
        return answer

    def search_keyed(
        self, query: str, *, page_size: int | None = None, page_token: str | None = None,
        retry: RetryArg = DEFAULT,
    ) -> Pager[dto.SearchKeyedMemoriesResponse, dto.SearchHit]:  # fmt: skip
        """:search (read_memories): the entries holding the query's words, every page."""
        fields = {"query": query, "page_size": page_size, "page_token": page_token}
        op = self._op("keyedMemories.search")
        return self._caller.body_pager(op, "results", self._path, fields, retry)

    # the scope itself (always /v1/scopes/{scopeId}: it names an agent workspace too)

    def update(
        self, *, update_mask: str | None = None, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.ScopeResource:
        """PATCH the scope (time_zone=)."""
        answer: dto.ScopeResource = self._caller.call(
            "scopes.patch", {"scopeId": self.id}, params={"update_mask": update_mask},
            retry=retry, **fields,
        )  # fmt: skip
        return answer

    def delete(self, *, retry: RetryArg = DEFAULT) -> dto.DestroyScopeResponse:
        """Destroy the scope and every record of it."""
        answer: dto.DestroyScopeResponse = self._caller.call(
            "scopes.delete", {"scopeId": self.id}, retry=retry
        )
        return answer

    def _claim(self, memory_id: str) -> dict[str, str]:
        return self._path | {"memoryId": memory_id}

    def _entry(self, key: str) -> dict[str, str]:
        return self._path | {"key": key}


class Agent(Scope):
    """An agent workspace: /v1/agents/{agentInstanceId}/…, with formation and its steps."""

    collection = "agents"

    def form(
        self, turns: list[Any] | None = None, *, request: Request = None,
        retry: RetryArg = DEFAULT, **fields: Any,
    ) -> dto.FormResponse:  # fmt: skip
        """memory:form, waiting for the receipt (retried only with a formation_key)."""
        answer: dto.FormResponse = self._caller.call(
            "agents.memory.form", self._path, request, retry=retry, turns=turns, **fields
        )
        return answer

    def start_form(
        self, turns: list[Any] | None = None, *, request: Request = None,
        retry: RetryArg = DEFAULT, **fields: Any,
    ) -> dto.Operation:  # fmt: skip
        """memory:form with async: its operation at once (Client.wait_for_operation)."""
        body = wire_body(dto.FormRequest, request, {"turns": turns, **fields, "run_async": True})
        response = self._caller.send("agents.memory.form", self._path, body=body, retry=retry)
        return dto.Operation.model_validate(json_object(response))

    def get_step(self, step_id: str, *, retry: RetryArg = DEFAULT) -> dto.ExecutionLogStep:
        """One execution-log step: a formation's rendered turns."""
        answer: dto.ExecutionLogStep = self._caller.call(
            "agents.memory.steps.get", self._path | {"stepId": step_id}, retry=retry
        )
        return answer


class Client:
    """The Jennah HTTP API. Arguments left out come from where `jnh` reads them
    (jennah.client.credentials); `retry` is the policy of idempotent calls (None: none)."""

    def __init__(
        self,
        endpoint: str | None = None,
        token: str | None = None,
        *,
        enterprise: str | None = None,
        data_dir: Path | None = None,
        timeout: float = 120.0,
        retry: Retry | None = DEFAULT_RETRY,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        where = Connection.resolve(endpoint, token, enterprise=enterprise, data_dir=data_dir)
        self.transport = Transport(
            where.endpoint, where.token, where.enterprise, timeout, transport
        )
        self._caller = _Caller(self.transport, retry)

    @classmethod
    def over(cls, transport: Transport, *, retry: Retry | None = DEFAULT_RETRY) -> Client:
        """A client on a transport as it is: its endpoint and credential are not looked up
        (a server calling the API with its own caller's credential)."""
        client = cls.__new__(cls)
        client.transport = transport
        client._caller = _Caller(transport, retry)
        return client

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        self.transport.close()

    # handles

    def agent(self, agent_instance_id: str) -> Agent:
        return Agent(self._caller, agent_instance_id)

    def scope(self, scope_id: str) -> Scope:
        return Scope(self._caller, scope_id)

    # scopes

    def list_agents(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListAgentsResponse, dto.ScopeResource]:
        return self._caller.pager("agents.list", "agents", params=params, retry=retry)

    def list_scopes(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListScopesResponse, dto.ScopeResource]:
        """kind= AGENT or SUBJECT, page_size=, page_token=."""
        return self._caller.pager("scopes.list", "scopes", params=params, retry=retry)

    def create_scope(
        self, scope_id: str | None = None, *, request: Request = None,
        retry: RetryArg = DEFAULT, **fields: Any,
    ) -> dto.ScopeResource:  # fmt: skip
        answer: dto.ScopeResource = self._caller.call(
            "scopes.create", request=request, retry=retry, scope_id=scope_id, **fields
        )
        return answer

    # vocabulary

    def declare_vocabulary(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.VocabularyResponse:
        """vocabulary=, and scope_id= for one scope's (else the enterprise's)."""
        answer: dto.VocabularyResponse = self._caller.call(
            "memory.vocabulary.declare", request=request, retry=retry, **fields
        )
        return answer

    def get_vocabulary(
        self, scope_id: str | None = None, *, retry: RetryArg = DEFAULT
    ) -> dto.VocabularyResponse:
        answer: dto.VocabularyResponse = self._caller.call(
            "memory.vocabulary.get", params={"scope_id": scope_id}, retry=retry
        )
        return answer

    def delete_vocabulary(self, scope_id: str | None = None, *, retry: RetryArg = DEFAULT) -> None:
        params = wire_params(dto.VocabularyParams, {"scope_id": scope_id})
        self._caller.send("memory.vocabulary.delete", params=params, retry=retry)

    # billing and usage

    def get_billing(self, *, retry: RetryArg = DEFAULT) -> dto.BillingState:
        answer: dto.BillingState = self._caller.call("billing.get", retry=retry)
        return answer

    def set_overage_multiple(
        self, overage_multiple: float, *, retry: RetryArg = DEFAULT
    ) -> dto.BillingState:
        answer: dto.BillingState = self._caller.call(
            "billing.setOverageMultiple", retry=retry, overage_multiple=overage_multiple
        )
        return answer

    def formation_tokens(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> dto.FormationTokensResponse:
        """start_time=, end_time=, per=, time_zone=, group_by=, scope=, caller=, …"""
        answer: dto.FormationTokensResponse = self._caller.call(
            "billing.usage.formationTokens", params=params, retry=retry
        )
        return answer

    # operations

    def get_operation(self, name: str, *, retry: RetryArg = DEFAULT) -> dto.Operation:
        """An operation by name: operations/op_… or op_…."""
        answer: dto.Operation = self._caller.call(
            "operations.get", {"operationId": name.removeprefix(OPERATION_PREFIX)}, retry=retry
        )
        return answer

    def list_operations(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListOperationsResponse, dto.Operation]:
        return self._caller.pager("operations.list", "operations", params=params, retry=retry)

    def wait_for_operation(
        self, name: str, *, timeout: float = 1800.0, interval: float = 2.0
    ) -> dto.FormResponse:
        """Poll until the operation is done: its receipt, or its error raised typed
        (DeadlineExceeded when not done within `timeout` seconds; it keeps running)."""
        deadline = time.monotonic() + timeout
        while True:
            operation = self.get_operation(name)
            if operation.done:
                return operation_result(operation)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceeded(
                    f"{operation.name} is not done after {timeout:g} s", code=504
                )
            time.sleep(min(interval, remaining))

    # the caller, keys, roles and users

    def get_caller(self, *, retry: RetryArg = DEFAULT) -> dto.CallerResponse:
        answer: dto.CallerResponse = self._caller.call("caller.get", retry=retry)
        return answer

    def create_api_key(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.ApiKeyResource:
        """display_name=, role=, agent_selectors=, subject_selectors=, ttl= or expire_time=."""
        answer: dto.ApiKeyResource = self._caller.call(
            "apiKeys.create", request=request, retry=retry, **fields
        )
        return answer

    def list_api_keys(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListApiKeysResponse, dto.ApiKeyResource]:
        return self._caller.pager("apiKeys.list", "api_keys", params=params, retry=retry)

    def revoke_api_key(self, key_id: str, *, retry: RetryArg = DEFAULT) -> dto.ApiKeyResource:
        answer: dto.ApiKeyResource = self._caller.call(
            "apiKeys.revoke", {"keyId": key_id}, retry=retry
        )
        return answer

    def grant_role(
        self, request: Request = None, *, retry: RetryArg = DEFAULT, **fields: Any
    ) -> dto.RoleBindingResource:
        """principal=, role=, agent_selectors=, subject_selectors=."""
        answer: dto.RoleBindingResource = self._caller.call(
            "roleBindings.grant", request=request, retry=retry, **fields
        )
        return answer

    def revoke_role(self, principal: str, role: str, *, retry: RetryArg = DEFAULT) -> None:
        body = wire_body(dto.RevokeRoleRequest, None, {"principal": principal, "role": role})
        self._caller.send("roleBindings.revoke", body=body, retry=retry)

    def list_role_bindings(
        self, *, retry: RetryArg = DEFAULT, **params: Any
    ) -> Pager[dto.ListRoleBindingsResponse, dto.RoleBindingResource]:
        """principal= for one principal's."""
        return self._caller.pager("roleBindings.list", "role_bindings", params=params, retry=retry)

    def get_openapi_document(self, *, retry: RetryArg = DEFAULT) -> dict[str, Any]:
        """The server's OpenAPI document (needs no credential)."""
        return json_object(self._caller.send("openapi.get", retry=retry))

    def create_user(self, principal: str, *, retry: RetryArg = DEFAULT) -> dto.UserResource:
        answer: dto.UserResource = self._caller.call(
            "users.create", retry=retry, principal=principal
        )
        return answer


def operation_result(operation: dto.Operation) -> dto.FormResponse:
    """A done operation's receipt, or its error raised typed."""
    if operation.error is not None:
        status = operation.error.model_dump(mode="json", by_alias=True)
        raise errors.from_status(status, operation.error.code)
    if operation.response is None:
        raise errors.Unknown(f"{operation.name} is done with no receipt", code=200)
    return operation.response
