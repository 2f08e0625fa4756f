"""Every route of the HTTP API the client calls, with its wire models and whether a call
may be retried (is idempotent). tests/unit/test_client_routes.py holds this table against
api/openapi.json, so the client cannot drift from the server's document.

Idempotent, so retried on UNAVAILABLE and ABORTED:
- every GET, and the PUT, PATCH and DELETE routes (a replay sets or removes the same thing),
  except the keyed-memory PUT (below); a replayed DELETE of a keyed entry may answer
  NOT_FOUND for work done;
- the reads sent as POST: memory:query, memory:search, memory:readExcerpt,
  keyedMemories:recall and keyedMemories:search;
- keyedMemories/{key}:link and :unlink (linking a linked pair, or unlinking an unlinked
  one, changes nothing);
- memory:dream (a replay changes nothing), billing:setOverageMultiple (sets one value),
  apiKeys/{keyId}:revoke (revoking a revoked key changes nothing);
- memory:form only with a formationKey (a replay answers the first receipt), and
  memories:forgetGroup only with validateOnly (a count).
Not retried: memory:commit and memory:import (a replay after a lost answer writes again or
fails on a scope no longer empty), memories/{id}:edit (under the claim's revision: a
replay is ABORTED REVISION_CHANGED, which needs a re-read), PUT keyedMemories/{key} (a
remember under expectedVersion: it cannot write twice, but a replay after a lost answer
is ALREADY_EXISTS or ABORTED KEYED_MEMORY_VERSION_MISMATCH for the caller's own write, and
a mismatch is never cured by trying again; either way only a re-read tells, and only a
successful answer is evidence of the write), :forget, scopes.create,
apiKeys.create, users.create, roleBindings:grant and :revoke (a replay may answer
ALREADY_EXISTS or NOT_FOUND for work done).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from jennah.api import dto

COLLECTIONS = {"agents": "agentInstanceId", "scopes": "scopeId"}


@dataclass(frozen=True)
class Rpc:
    """One route: method, path template, wire models and its retry rule."""

    operation_id: str
    method: str
    template: str
    response: type[BaseModel] | None
    request: type[BaseModel] | None = None  # the JSON body
    params: type[BaseModel] | None = None  # the query parameters
    idempotent: bool = False
    idempotent_when: str | None = None  # ...or when this body field is set (truthy)
    body_media_type: str | None = None  # a raw body (memory:import)
    reply_media_type: str | None = None  # a raw answer (memory:export)

    def retried(self, body: dict[str, Any] | None) -> bool:
        if self.idempotent:
            return True
        return self.idempotent_when is not None and bool((body or {}).get(self.idempotent_when))


def _scoped(
    collection: str, name: str, method: str, tail: str, response: type[BaseModel] | None,
    **options: Any,
) -> Rpc:  # fmt: skip
    template = f"/v1/{collection}/{{{COLLECTIONS[collection]}}}{tail}"
    return Rpc(f"{collection}.{name}", method, template, response, **options)


GZIP = "application/gzip"


def _scope_rpcs(collection: str) -> list[Rpc]:
    memory, memories = "/memory:", "/memories"
    claim = memories + "/{memoryId}"
    return [
        _scoped(collection, "memory.commit", "POST", memory + "commit", dto.CommitResponse,
                request=dto.CommitRequest),
        _scoped(collection, "memory.dream", "POST", memory + "dream", dto.DreamResponse,
                idempotent=True),
        _scoped(collection, "memory.query", "POST", memory + "query", dto.QueryResponse,
                request=dto.QueryRequest, idempotent=True),
        _scoped(collection, "memory.search", "POST", memory + "search", dto.SearchResponse,
                request=dto.SearchRequest, idempotent=True),
        _scoped(collection, "memory.inspect", "GET", memory + "inspect", dto.InspectResponse,
                params=dto.InspectParams, idempotent=True),
        _scoped(collection, "memory.export", "GET", memory + "export", None,
                idempotent=True, reply_media_type=GZIP),
        _scoped(collection, "memory.import", "POST", memory + "import", dto.ImportResponse,
                body_media_type=GZIP),
        _scoped(collection, "memories.evidence.list", "GET", claim + "/evidence",
                dto.ListEvidenceResponse, idempotent=True),
        _scoped(collection, "memories.get", "GET", claim, dto.ClaimResponse, idempotent=True),
        _scoped(collection, "memory.readExcerpt", "POST", memory + "readExcerpt",
                dto.ReadExcerptResponse, request=dto.ReadExcerptRequest, idempotent=True),
        _scoped(collection, "memories.list", "GET", memories, dto.ListMemoriesResponse,
                params=dto.ListMemoriesParams, idempotent=True),
        _scoped(collection, "memories.edit", "POST", claim + ":edit", dto.EditMemoryResponse,
                request=dto.EditMemoryRequest),
        _scoped(collection, "memory.brief.get", "GET", "/memory/brief", dto.BriefResponse,
                params=dto.BriefParams, idempotent=True),
        _scoped(collection, "memories.forget", "POST", claim + ":forget", dto.ForgetResponse,
                request=dto.ForgetRequest),
        _scoped(collection, "memories.forgetGroup", "POST", memories + ":forgetGroup",
                dto.ForgetGroupResponse, request=dto.ForgetGroupRequest,
                idempotent_when="validateOnly"),
        _scoped(collection, "suppressions.list", "GET", "/suppressions",
                dto.ListSuppressionsResponse, params=dto.ListSuppressionsParams,
                idempotent=True),
        _scoped(collection, "suppressions.delete", "DELETE", "/suppressions/{suppressionId}",
                dto.Empty, idempotent=True),
        *_keyed_rpcs(collection),
    ]  # fmt: skip


def _keyed_rpcs(collection: str) -> list[Rpc]:
    entries = "/keyedMemories"
    entry = entries + "/{key}"
    name = "keyedMemories."
    return [
        _scoped(collection, name + "remember", "PUT", entry, dto.KeyedMemoryResource,
                request=dto.RememberRequest),
        _scoped(collection, name + "get", "GET", entry, dto.KeyedMemoryResource,
                idempotent=True),
        _scoped(collection, name + "forget", "DELETE", entry, dto.Empty, idempotent=True),
        _scoped(collection, name + "list", "GET", entries, dto.ListKeyedMemoriesResponse,
                params=dto.KeyedMemoryParams, idempotent=True),
        _scoped(collection, name + "link", "POST", entry + ":link", dto.KeyedMemoryResource,
                request=dto.LinkRequest, idempotent=True),
        _scoped(collection, name + "unlink", "POST", entry + ":unlink",
                dto.KeyedMemoryResource, request=dto.LinkRequest, idempotent=True),
        _scoped(collection, name + "recall", "POST", entries + ":recall", dto.RecallResponse,
                request=dto.RecallRequest, idempotent=True),
        _scoped(collection, name + "search", "POST", entries + ":search",
                dto.SearchKeyedMemoriesResponse, request=dto.SearchKeyedMemoriesRequest,
                idempotent=True),
    ]  # fmt: skip


_RPCS: list[Rpc] = [
    *_scope_rpcs("agents"),
    *_scope_rpcs("scopes"),
    Rpc("agents.memory.form", "POST", "/v1/agents/{agentInstanceId}/memory:form",
        dto.FormResponse, request=dto.FormRequest, idempotent_when="formationKey"),
    Rpc("agents.memory.steps.get", "GET", "/v1/agents/{agentInstanceId}/memory/steps/{stepId}",
        dto.ExecutionLogStep, idempotent=True),
    Rpc("agents.list", "GET", "/v1/agents", dto.ListAgentsResponse,
        params=dto.ListAgentsParams, idempotent=True),
    Rpc("scopes.list", "GET", "/v1/scopes", dto.ListScopesResponse,
        params=dto.ListScopesParams, idempotent=True),
    Rpc("scopes.create", "POST", "/v1/scopes", dto.ScopeResource,
        request=dto.CreateScopeRequest),
    Rpc("scopes.patch", "PATCH", "/v1/scopes/{scopeId}", dto.ScopeResource,
        request=dto.UpdateScopeRequest, params=dto.UpdateScopeParams, idempotent=True),
    Rpc("scopes.delete", "DELETE", "/v1/scopes/{scopeId}", dto.DestroyScopeResponse,
        idempotent=True),
    Rpc("memory.vocabulary.declare", "PUT", "/v1/memory/vocabulary", dto.VocabularyResponse,
        request=dto.DeclareVocabularyRequest, idempotent=True),
    Rpc("memory.vocabulary.get", "GET", "/v1/memory/vocabulary", dto.VocabularyResponse,
        params=dto.VocabularyParams, idempotent=True),
    Rpc("memory.vocabulary.delete", "DELETE", "/v1/memory/vocabulary", dto.Empty,
        params=dto.VocabularyParams, idempotent=True),
    Rpc("billing.get", "GET", "/v1/billing", dto.BillingState, idempotent=True),
    Rpc("billing.setOverageMultiple", "POST", "/v1/billing:setOverageMultiple",
        dto.BillingState, request=dto.SetOverageMultipleRequest, idempotent=True),
    Rpc("billing.usage.formationTokens", "GET", "/v1/billing/usage/formation-tokens",
        dto.FormationTokensResponse, params=dto.FormationTokensParams, idempotent=True),
    Rpc("operations.get", "GET", "/v1/operations/{operationId}", dto.Operation,
        idempotent=True),
    Rpc("operations.list", "GET", "/v1/operations", dto.ListOperationsResponse,
        params=dto.ListOperationsParams, idempotent=True),
    Rpc("caller.get", "GET", "/v1/caller", dto.CallerResponse, idempotent=True),
    Rpc("apiKeys.create", "POST", "/v1/apiKeys", dto.ApiKeyResource,
        request=dto.CreateApiKeyRequest),
    Rpc("apiKeys.list", "GET", "/v1/apiKeys", dto.ListApiKeysResponse,
        params=dto.ListApiKeysParams, idempotent=True),
    Rpc("apiKeys.revoke", "POST", "/v1/apiKeys/{keyId}:revoke", dto.ApiKeyResource,
        idempotent=True),
    Rpc("roleBindings.grant", "POST", "/v1/roleBindings:grant", dto.RoleBindingResource,
        request=dto.GrantRoleRequest),
    Rpc("roleBindings.revoke", "POST", "/v1/roleBindings:revoke", dto.Empty,
        request=dto.RevokeRoleRequest),
    Rpc("roleBindings.list", "GET", "/v1/roleBindings", dto.ListRoleBindingsResponse,
        params=dto.ListRoleBindingsParams, idempotent=True),
    Rpc("users.create", "POST", "/v1/users", dto.UserResource, request=dto.CreateUserRequest),
    Rpc("openapi.get", "GET", "/openapi.json", None, idempotent=True),
]  # fmt: skip
RPCS: dict[str, Rpc] = {rpc.operation_id: rpc for rpc in _RPCS}
