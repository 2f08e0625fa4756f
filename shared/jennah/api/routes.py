"""HTTP routing shared by every Cloud Function and by `jnh serve`.

Each Cloud Function serves its own tuples of routes (`FORM_ROUTES`, `COMMIT_ROUTES`,
`QUERY_ROUTES`, …: see functions/*/main.py for which); `jnh serve` mounts `ALL_ROUTES`. A
request goes through: match the path (404) and the method (405), authenticate (401),
validate the path ids (400), authorize (every route declares its permission:
`Access.open_scope` on a route naming a scope, 404 without reach and 403 without the
permission; `Access.require` elsewhere, 403), parse the body or query parameters strictly
(400), call one handler, and map any error once, in `jennah.api.errors`. A route whose
request may name a scope in its body or query (`scope_in_request`: the vocabulary routes)
is authorized by its handler's service instead, after parsing, with the same reach-first
rule.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import flask
from pydantic import BaseModel, ValidationError

from jennah.api import (
    billing,
    bodies,
    brief,
    dto,
    edit,
    forgetting,
    formation,
    handlers,
    keyed,
    logs,
    memories,
    okf,
    operations,
    search,
    vocabulary,
)
from jennah.api.context import Services
from jennah.api.errors import (
    HttpRefusal,
    MethodNotAllowed,
    error_response,
    from_validation_error,
)
from jennah.api.lifecycle import dream
from jennah.domain import okf_archive, rules
from jennah.domain.access import Caller, Permission, ScopeKind
from jennah.errors import Internal, InvalidArgument, JennahError, NotFound
from jennah.services.access import Access, OpenedScope

Handler = Callable[[handlers.Call], handlers.Reply]
# The enterprise a Google ID token acts in, when its user belongs to several (the other
# credentials name their own enterprise).
ENTERPRISE_HEADER = "X-Jennah-Enterprise"
_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class ScopeAccess:
    """How a route opens the scope its path names (`Access.open_scope`)."""

    kind: ScopeKind | None  # AGENT on /v1/agents/…, None on /v1/scopes/… (any kind)
    create: bool = False  # a write: the first one registers the scope


@dataclass(frozen=True)
class Route:
    """One operation: a path template such as /v1/scopes/{scopeId}/memory:commit.

    `permission` is what the caller needs (None: any authenticated caller);
    with `scope`, the path's first parameter names a scope, which the caller
    must also reach. With `scope_in_request`, the body or query parameters may
    name a scope (`scopeId`), and the handler's service checks the reach and
    the permission itself.
    """

    method: str
    template: str
    handler: Handler
    operation_id: str
    summary: str
    permission: Permission | None
    scope: ScopeAccess | None = None
    scope_in_request: bool = False
    request_model: type[BaseModel] | None = None  # the JSON body
    body_required: bool = True  # False: no body reads as {} (a PATCH of nothing)
    params_model: type[BaseModel] | None = None  # the query parameters
    response_model: type[BaseModel] | None = None
    # answers a strong ETag, and 304 with no body to an If-None-Match naming it
    conditional: bool = False
    body_media_type: str | None = None  # a raw (non-JSON) body of this type, as bytes
    reply_media_type: str | None = None  # a raw (non-JSON) answer of this type

    @property
    def path_params(self) -> list[str]:
        return _PARAM.findall(self.template)

    @property
    def scope_param(self) -> str:
        """The path parameter naming the scope (the first one)."""
        return self.path_params[0]

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return _compile(self.template)

    @functools.cached_property
    def prefix(self) -> str:
        """The template's literal start: every path `pattern` matches starts with it."""
        return _PARAM.split(self.template, maxsplit=1)[0]


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> re.Pattern[str]:
    """'/v1/scopes/{scopeId}/memory:query' -> a regex with one named group per parameter."""
    parts = _PARAM.split(template)
    regex = "".join(
        f"(?P<{part}>[^/]*)" if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(f"^{regex}$")


# The two collections every scoped route is published under: (collection, path parameter,
# the noun its summary ends with, the scope kind the route admits; None: any).
_COLLECTIONS: tuple[tuple[str, str, str, ScopeKind | None], ...] = (
    ("agents", "agentInstanceId", "agent workspace", ScopeKind.AGENT),
    ("scopes", "scopeId", "any scope", None),
)


def _memory_routes(
    method: str,
    verb: str,
    handler: Handler,
    summary: str,
    permission: Permission,
    *,
    request_model: type[BaseModel] | None = None,
    params_model: type[BaseModel] | None = None,
    response_model: type[BaseModel] | None = None,
    body_media_type: str | None = None,
    reply_media_type: str | None = None,
) -> tuple[Route, ...]:
    create = permission is Permission.MEMORY_COMMIT
    return tuple(
        Route(
            method=method,
            template=f"/v1/{collection}/{{{param}}}/memory:{verb}",
            handler=handler,
            operation_id=f"{collection}.memory.{verb}",
            summary=f"{summary} ({noun})",
            permission=permission,
            scope=ScopeAccess(kind, create=create),
            request_model=request_model,
            params_model=params_model,
            response_model=response_model,
            body_media_type=body_media_type,
            reply_media_type=reply_media_type,
        )
        for collection, param, noun, kind in _COLLECTIONS
    )


def _claim_routes(
    method: str,
    tail: str,
    name: str,
    handler: Handler,
    summary: str,
    permission: Permission,
    *,
    request_model: type[BaseModel] | None = None,
    response_model: type[BaseModel] | None = None,
) -> tuple[Route, ...]:
    """A route on one claim of a scope, /v1/{agents|scopes}/{id}/memories/{memoryId}{tail},
    for both collections (operation id {collection}.memories.{name})."""
    return tuple(
        Route(
            method=method,
            template=f"/v1/{collection}/{{{param}}}/memories/{{memoryId}}{tail}",
            handler=handler,
            operation_id=f"{collection}.memories.{name}",
            summary=f"{summary} ({noun})",
            permission=permission,
            scope=ScopeAccess(kind),
            request_model=request_model,
            response_model=response_model,
        )
        for collection, param, noun, kind in _COLLECTIONS
    )


# memory:form is published for agent workspaces only: /v1/scopes/{scopeId}/memory:form
# does not exist (a 404 like any unknown path).
FORM_ROUTES: tuple[Route, ...] = (
    Route(
        "POST", "/v1/agents/{agentInstanceId}/memory:form", formation.form,
        "agents.memory.form",
        "Form memory from conversation turns: extract facts and relationships, reconcile "
        "them with the workspace's memory and commit the result atomically; the first "
        "formation creates the agent workspace",
        Permission.MEMORY_FORM, scope=ScopeAccess(ScopeKind.AGENT, create=True),
        request_model=dto.FormRequest, response_model=dto.FormResponse,
    ),
)  # fmt: skip
# memory:form with "async": true answers an operation; this reads it (the `operations`
# function). The caller needs agent.memory:form and reach over its agent workspace.
OPERATION_ROUTES: tuple[Route, ...] = (
    Route(
        "GET", "/v1/operations/{operationId}", formation.get_operation, "operations.get",
        "Read a memory:form operation: done, and then its receipt (response) or error",
        Permission.MEMORY_FORM, response_model=dto.Operation,
    ),
    Route(
        "GET", "/v1/operations", operations.list_operations, "operations.list",
        "List the memory:form operations of the agent workspaces the caller reaches, "
        "newest first, page by page",
        Permission.MEMORY_FORM,
        params_model=dto.ListOperationsParams, response_model=dto.ListOperationsResponse,
    ),
)  # fmt: skip
# The execution-log steps formations write: resources named
# agents/{agentInstanceId}/memory/steps/{stepId}, a collection under the workspace's
# memory (the singleton that memory:form, :commit and :query act on).
STEP_ROUTES: tuple[Route, ...] = (
    Route(
        "GET", "/v1/agents/{agentInstanceId}/memory/steps/{stepId}", formation.get_step,
        "agents.memory.steps.get",
        "Read one execution-log step: the rendered turns of a formation (toolInput) and "
        "its metadata, with jennah.turn_offsets",
        Permission.MEMORY_QUERY, scope=ScopeAccess(ScopeKind.AGENT),
        response_model=dto.ExecutionLogStep,
    ),
)  # fmt: skip
COMMIT_ROUTES = _memory_routes(
    "POST",
    "commit",
    handlers.commit,
    "Write chunks, nodes, edges and supersessions in one atomic transaction; "
    "the first write creates the scope",
    Permission.MEMORY_COMMIT,
    request_model=dto.CommitRequest,
    response_model=dto.CommitResponse,
)
QUERY_ROUTES = _memory_routes(
    "POST",
    "query",
    handlers.query,
    "Query memory by meaning and words (hybrid, or either alone) and metadata, through "
    "the graph, now or as of a valid time",
    Permission.MEMORY_QUERY,
    request_model=dto.QueryRequest,
    response_model=dto.QueryResponse,
)
# Turn-level retrieval and the agent's search_memory tool: one search (the `query`
# function serves it with memory:query).
SEARCH_ROUTES = _memory_routes(
    "POST",
    "search",
    search.search,
    "Search the active, unexpired claims closest to a message by meaning and by words "
    "(typos tolerated), merged; at most maxItems candidates within tokenBudget, each with "
    "its memory:// reference, age and sensitivity, rendered as candidates to weigh",
    Permission.MEMORY_READ,
    request_model=dto.SearchRequest,
    response_model=dto.SearchResponse,
)
INSPECT_ROUTES = _memory_routes(
    "GET",
    "inspect",
    handlers.inspect,
    "List a scope's chunks and, with graph=true, its nodes and edges, page by page",
    Permission.MEMORY_QUERY,
    params_model=dto.InspectParams,
    response_model=dto.InspectResponse,
)
# A claim's evidence ledger (the `inspect` function serves it): readable by whoever may
# read the scope's memory, for any claim of it, whatever its status.
EVIDENCE_ROUTES = _claim_routes(
    "GET",
    "/evidence",
    "evidence.list",
    handlers.list_evidence,
    "Read a claim's evidence: each quote, the conv:// reference of the turns it came "
    "from, and when it was recorded, oldest first",
    Permission.MEMORY_READ,
    response_model=dto.ListEvidenceResponse,
)
# Reading memory (issue 17; the `inspect` function serves these): one whole claim whatever
# its status, the turns a conv:// reference cites, and the memory card. agent.memory:read
# and reach over the scope, like memory:query.
MEMORY_GET_ROUTES = _claim_routes(
    "GET",
    "",
    "get",
    memories.get_memory,
    "Read one whole claim, whatever its status: the claim, its memory:// reference, its "
    "lineage both ways (supersedes, supersededBy) and its OKF file (front matter and body)",
    Permission.MEMORY_READ,
    response_model=dto.ClaimResponse,
)
READ_EXCERPT_ROUTES = _memory_routes(
    "POST",
    "readExcerpt",
    memories.read_excerpt,
    "Read the turns a conv://{scopeId}/{stepId}#turn=a-b reference cites (number, role, "
    "text) from the scope's execution-log step; no fragment: every turn of the step",
    Permission.MEMORY_READ,
    request_model=dto.ReadExcerptRequest,
    response_model=dto.ReadExcerptResponse,
)
MEMORY_CARD_ROUTES: tuple[Route, ...] = tuple(
    Route(
        "GET", f"/v1/{collection}/{{{param}}}/memories", memories.list_memories,
        f"{collection}.memories.list",
        "The memory card: the scope's claims one per item, newest first, page by page, "
        "each with its summary, what it concerns, type, status, sensitivity and age; "
        "filter by status, type, sensitivity and appliesTo (no status term: all but "
        f"retracted) ({noun})",
        Permission.MEMORY_READ, scope=ScopeAccess(kind),
        params_model=dto.ListMemoriesParams, response_model=dto.ListMemoriesResponse,
    )
    for collection, param, noun, kind in _COLLECTIONS
)  # fmt: skip
# Edit = supersede: a person's correction of one claim (the `commit` function serves it).
# Never with an API key (agent.memory:edit): an agent does not rewrite memory.
EDIT_ROUTES = _claim_routes(
    "POST",
    ":edit",
    "edit",
    edit.edit,
    "Correct one active claim: the new words become a new claim (authority user_explicit, "
    "supersedes the old) and the old one is superseded, pointing at it, under its revision "
    "(a concurrent change is 409 REVISION_CHANGED, nothing written); the brief uses the "
    "new words at once and the old claim stays readable",
    Permission.MEMORY_EDIT,
    request_model=dto.EditMemoryRequest,
    response_model=dto.EditMemoryResponse,
)
# Forget = retract + suppress (issue 17; the `commit` function serves them, and the
# `inspect` function the list): agent.memory:forget (never with an API key) to change,
# agent.memory:read to list; reach over the scope either way.
FORGET_ROUTES: tuple[Route, ...] = tuple(
    route
    for collection, param, noun, kind in _COLLECTIONS
    for route in (
        Route(
            "POST", f"/v1/{collection}/{{{param}}}/memories/{{memoryId}}:forget",
            forgetting.forget, f"{collection}.memories.forget",
            "Forget a claim for good: it becomes retracted (kept, out of every default read "
            "and of the brief at once) and a suppression rule keeps formation from learning "
            f"it back, in the same words or others ({noun})",
            Permission.MEMORY_FORGET, scope=ScopeAccess(kind),
            request_model=forgetting.ForgetRequest, body_required=False,
            response_model=forgetting.ForgetResponse,
        ),
        Route(
            "POST", f"/v1/{collection}/{{{param}}}/memories:forgetGroup",
            forgetting.forget_group, f"{collection}.memories.forgetGroup",
            "Forget a group of claims (appliesTo, about or type): validateOnly counts it; the "
            "real call carries expectedCount and retracts and suppresses them all in one "
            f"transaction ({noun})",
            Permission.MEMORY_FORGET, scope=ScopeAccess(kind),
            request_model=forgetting.ForgetGroupRequest,
            response_model=forgetting.ForgetGroupResponse,
        ),
    )
)  # fmt: skip
SUPPRESSION_ROUTES: tuple[Route, ...] = tuple(
    route
    for collection, param, noun, kind in _COLLECTIONS
    for route in (
        Route(
            "GET", f"/v1/{collection}/{{{param}}}/suppressions",
            forgetting.list_suppressions, f"{collection}.suppressions.list",
            f"List the scope's suppression rules, page by page ({noun})",
            Permission.MEMORY_READ, scope=ScopeAccess(kind),
            params_model=forgetting.ListSuppressionsParams,
            response_model=forgetting.ListSuppressionsResponse,
        ),
        Route(
            "DELETE", f"/v1/{collection}/{{{param}}}/suppressions/{{suppressionId}}",
            forgetting.delete_suppression, f"{collection}.suppressions.delete",
            "Remove a suppression rule (the person says otherwise): the fact may be formed "
            f"again; the forgotten claim stays retracted ({noun})",
            Permission.MEMORY_FORGET, scope=ScopeAccess(kind), response_model=dto.Empty,
        ),
    )
)  # fmt: skip
# The brief: a singleton resource under the scope's memory, like the steps collection.
BRIEF_ROUTES: tuple[Route, ...] = tuple(
    Route(
        "GET", f"/v1/{collection}/{{{param}}}/memory/brief", brief.get_brief,
        f"{collection}.memory.brief.get",
        "Read the scope's brief: a compact, byte-stable block of data (at most 2,000 "
        "tokens) an agent starts every conversation with; ?variant=shared leaves out the "
        f"last conversation ({noun})",
        Permission.MEMORY_QUERY, scope=ScopeAccess(kind),
        params_model=dto.BriefParams, response_model=dto.BriefResponse, conditional=True,
    )
    for collection, param, noun, kind in _COLLECTIONS
)  # fmt: skip
# OKF files (jennah.domain.okf) in a gzip-compressed tar: export reads like memory:query,
# import writes like memory:commit (the `inspect` and `commit` functions serve them).
EXPORT_ROUTES = _memory_routes(
    "GET",
    "export",
    okf.export,
    "Export all the memory as OKF files in a .tar.gz: claims/{id}.md (YAML front matter "
    "and body) for every claim whatever its status, evidence/{id}.jsonl, graph/nodes.jsonl, "
    "graph/edges.jsonl and index.md; the same memory exports to the same bytes",
    Permission.MEMORY_QUERY,
    reply_media_type=okf_archive.MEDIA_TYPE,
)
IMPORT_ROUTES = _memory_routes(
    "POST",
    "import",
    okf.import_,
    "Import OKF files (a .tar.gz body, Content-Type application/gzip, as memory:export "
    "writes) into an empty scope in one transaction: every file is validated first and "
    "every fault is named (file and field); nothing is written unless all is good",
    Permission.MEMORY_COMMIT,
    response_model=dto.ImportResponse,
    body_media_type=okf_archive.MEDIA_TYPE,
)
# The lifecycle pass on demand: memory:commit's permission and reach; the scope must exist
# (a pass never creates one). Served by the `commit` function.
DREAM_ROUTES: tuple[Route, ...] = tuple(
    Route(
        "POST", f"/v1/{collection}/{{{param}}}/memory:dream", dream,
        f"{collection}.memory.dream",
        "Run the lifecycle pass now: expire claims whose validUntil arrived in the scope's "
        "time zone, promote passing claims reinforced 3 times, make inferred claims not "
        "reinforced for 180 days dormant, recompile the brief and log the changes; a "
        f"replay changes nothing ({noun})",
        Permission.MEMORY_COMMIT, scope=ScopeAccess(kind),
        response_model=dto.DreamResponse,
    )
    for collection, param, noun, kind in _COLLECTIONS
)  # fmt: skip
SCOPE_ROUTES: tuple[Route, ...] = (
    Route(
        "GET", "/v1/agents", handlers.list_agents, "agents.list",
        "List the agent workspaces the caller reaches, page by page", Permission.SCOPES_LIST,
        params_model=dto.ListAgentsParams, response_model=dto.ListAgentsResponse,
    ),
    Route(
        "GET", "/v1/scopes", handlers.list_scopes, "scopes.list",
        "List the scopes (agent workspaces and subject scopes) the caller reaches, page by "
        "page",
        Permission.SCOPES_LIST,
        params_model=dto.ListScopesParams, response_model=dto.ListScopesResponse,
    ),
    Route(
        "POST", "/v1/scopes", handlers.create_scope, "scopes.create",
        "Create an empty scope explicitly (a first write also creates one)",
        Permission.MEMORY_COMMIT,
        request_model=dto.CreateScopeRequest, response_model=dto.ScopeResource,
    ),
    Route(
        "PATCH", "/v1/scopes/{scopeId}", handlers.update_scope, "scopes.patch",
        "Update a scope (agent workspace or subject scope): its timeZone, the IANA zone "
        "its calendar is judged in. updateMask (optional, AIP-134) names the fields to "
        "change",
        Permission.MEMORY_COMMIT, scope=ScopeAccess(None),
        request_model=dto.UpdateScopeRequest, body_required=False,
        params_model=dto.UpdateScopeParams, response_model=dto.ScopeResource,
    ),
    Route(
        "DELETE", "/v1/scopes/{scopeId}", handlers.destroy_scope, "scopes.delete",
        "Destroy a scope: erase every memory record, node, edge, execution-log step, "
        "evidence line and formation-key record of it, and its memory vocabulary",
        Permission.SCOPES_DESTROY, scope=ScopeAccess(None),
        response_model=dto.DestroyScopeResponse,
    ),
)  # fmt: skip
# One resource per level: the enterprise's when the request names no scope, else the
# scope's (scopeId in the PUT body, a ?scopeId= query parameter on GET and DELETE; on
# PUT such a query parameter is ignored, as the request body alone is read).
VOCABULARY_ROUTES: tuple[Route, ...] = (
    Route(
        "PUT", "/v1/memory/vocabulary", vocabulary.declare, "memory.vocabulary.declare",
        "Declare the memory vocabulary of the enterprise (no scopeId) or of one scope "
        "(scopeId in the body), replacing that level's declaration whole",
        Permission.VOCABULARY_MANAGE, scope_in_request=True,
        request_model=dto.DeclareVocabularyRequest, response_model=dto.VocabularyResponse,
    ),
    Route(
        "GET", "/v1/memory/vocabulary", vocabulary.get, "memory.vocabulary.get",
        "Read what a level declares (declaration) and what formation resolves there "
        "(resolved)",
        Permission.VOCABULARY_READ, scope_in_request=True,
        params_model=dto.VocabularyParams, response_model=dto.VocabularyResponse,
    ),
    Route(
        "DELETE", "/v1/memory/vocabulary", vocabulary.remove, "memory.vocabulary.delete",
        "Remove a level's declaration: a scope inherits the enterprise default again",
        Permission.VOCABULARY_MANAGE, scope_in_request=True,
        params_model=dto.VocabularyParams, response_model=dto.Empty,
    ),
)  # fmt: skip
# The billing state and the overage multiple (the `usage` function serves these with the
# formation token report). The multiple is a management permission: users only.
USAGE_ROUTES: tuple[Route, ...] = (
    Route(
        "GET", "/v1/billing", billing.get_billing, "billing.get",
        "Read the billing state of the current period in formation units: allowance, units "
        "used, overage units, multiple, band, limit and whether the enterprise is billable",
        Permission.BILLING_READ, response_model=dto.BillingState,
    ),
    Route(
        "POST", "/v1/billing:setOverageMultiple", billing.set_overage_multiple,
        "billing.setOverageMultiple",
        "Set the overage multiple (0 to 10 in steps of 0.5; 0 turns overage off); it "
        "applies to the next formation. Root or administrator users only, never an API key",
        Permission.BILLING_OVERAGE_MANAGE,
        request_model=dto.SetOverageMultipleRequest, response_model=dto.BillingState,
    ),
    Route(
        "GET", "/v1/billing/usage/formation-tokens", billing.formation_tokens,
        "billing.usage.formationTokens",
        "Formation input and output tokens and units, per day, ISO week or month of a time "
        "zone, optionally grouped by scope, caller, model or region; aggregated only. "
        "Grouping or filtering by scope needs reach over every scope",
        Permission.BILLING_USAGE_READ,
        params_model=dto.FormationTokensParams, response_model=dto.FormationTokensResponse,
    ),
)  # fmt: skip
ADMIN_ROUTES: tuple[Route, ...] = (
    Route(
        "GET", "/v1/caller", handlers.get_caller, "caller.get",
        "Who the credential proves: enterprise, principal, roles, permissions, reach", None,
        response_model=dto.CallerResponse,
    ),
    Route(
        "POST", "/v1/apiKeys", handlers.create_api_key, "apiKeys.create",
        "Create an API key and its role binding; the answer shows keyString once",
        Permission.KEYS_MANAGE,
        request_model=dto.CreateApiKeyRequest, response_model=dto.ApiKeyResource,
    ),
    Route(
        "GET", "/v1/apiKeys", handlers.list_api_keys, "apiKeys.list",
        "List the enterprise's API keys, revoked and expired ones included, page by page",
        Permission.KEYS_MANAGE,
        params_model=dto.ListApiKeysParams, response_model=dto.ListApiKeysResponse,
    ),
    Route(
        "POST", "/v1/apiKeys/{keyId}:revoke", handlers.revoke_api_key, "apiKeys.revoke",
        "Revoke an API key: it authenticates no more", Permission.KEYS_MANAGE,
        response_model=dto.ApiKeyResource,
    ),
    Route(
        "POST", "/v1/roleBindings:grant", handlers.grant_role, "roleBindings.grant",
        "Bind a role and reach to a principal (only a root grants root)",
        Permission.ROLES_MANAGE,
        request_model=dto.GrantRoleRequest, response_model=dto.RoleBindingResource,
    ),
    Route(
        "POST", "/v1/roleBindings:revoke", handlers.revoke_role, "roleBindings.revoke",
        "Remove a principal's binding of a role (only a root revokes root)",
        Permission.ROLES_MANAGE,
        request_model=dto.RevokeRoleRequest, response_model=dto.Empty,
    ),
    Route(
        "GET", "/v1/roleBindings", handlers.list_role_bindings, "roleBindings.list",
        "List the enterprise's role bindings, or one principal's, page by page",
        Permission.ROLES_MANAGE,
        params_model=dto.ListRoleBindingsParams, response_model=dto.ListRoleBindingsResponse,
    ),
    Route(
        "POST", "/v1/users", handlers.create_user, "users.create",
        "Create a user with a development credential, shown once (local servers)",
        Permission.ROLES_MANAGE,
        request_model=dto.CreateUserRequest, response_model=dto.UserResource,
    ),
)  # fmt: skip


# Keyed memory (issue 18, jennah.api.keyed): an agent's notebook of entries named by
# subject, on both collections. The first remember creates the scope, like a commit.
def _keyed_routes(
    method: str,
    tail: str,
    name: str,
    handler: Handler,
    summary: str,
    permission: Permission,
    *,
    request_model: type[BaseModel] | None = None,
    params_model: type[BaseModel] | None = None,
    response_model: type[BaseModel] | None = None,
) -> tuple[Route, ...]:
    """…/keyedMemories{tail} for both collections (operation id
    {collection}.keyedMemories.{name})."""
    return tuple(
        Route(
            method=method,
            template=f"/v1/{collection}/{{{param}}}/keyedMemories{tail}",
            handler=handler,
            operation_id=f"{collection}.keyedMemories.{name}",
            summary=f"{summary} ({noun})",
            permission=permission,
            scope=ScopeAccess(kind, create=name == "remember"),
            request_model=request_model,
            params_model=params_model,
            response_model=response_model,
        )
        for collection, param, noun, kind in _COLLECTIONS
    )


KEYED_ROUTES: tuple[Route, ...] = (
    _keyed_routes(
        "PUT", "/{key}", "remember", keyed.remember,
        "Remember: create an entry (expectedVersion 0) or update it while its version is "
        "expectedVersion (else ABORTED, reason KEYED_MEMORY_VERSION_MISMATCH, with "
        "currentVersion); the answer is the only evidence of the write",
        Permission.KEYED_WRITE,
        request_model=keyed.RememberRequest, response_model=keyed.KeyedMemoryResource,
    )
    + _keyed_routes(
        "GET", "/{key}", "get", keyed.get, "Read one entry with its links",
        Permission.KEYED_READ, response_model=keyed.KeyedMemoryResource,
    )
    + _keyed_routes(
        "DELETE", "/{key}", "forget", keyed.forget,
        "forget_memory: delete the entry and every link to or from it",
        Permission.KEYED_DELETE, response_model=dto.Empty,
    )
    + _keyed_routes(
        "GET", "", "list", keyed.list_,
        "List the entries, most recently updated first, page by page",
        Permission.KEYED_READ,
        params_model=keyed.KeyedMemoryParams, response_model=keyed.ListKeyedMemoriesResponse,
    )
    + _keyed_routes(
        "POST", "/{key}:link", "link", keyed.link,
        "Link two entries (symmetric, one hop); at most 12 links per entry "
        "(FAILED_PRECONDITION, reason KEYED_MEMORY_LINK_LIMIT)",
        Permission.KEYED_WRITE,
        request_model=keyed.LinkRequest, response_model=keyed.KeyedMemoryResource,
    )
    + _keyed_routes(
        "POST", "/{key}:unlink", "unlink", keyed.unlink, "Remove the link between two entries",
        Permission.KEYED_WRITE,
        request_model=keyed.LinkRequest, response_model=keyed.KeyedMemoryResource,
    )
    + _keyed_routes(
        "POST", ":recall", "recall", keyed.recall,
        "Recall the entries that matter for a request within a token budget: a lexical "
        "shortlist (optionally judged by one model call), added in order (ties: most "
        "recent update) until the budget is reached, then directly linked neighbours "
        "(via LINK) while space remains; never over the budget",
        Permission.KEYED_READ,
        request_model=keyed.RecallRequest, response_model=keyed.RecallResponse,
    )
    + _keyed_routes(
        "POST", ":search", "search", keyed.search,
        "read_memories: search the entries by words, page by page",
        Permission.KEYED_READ,
        request_model=keyed.SearchRequest, response_model=keyed.SearchKeyedMemoriesResponse,
    )
)  # fmt: skip
ALL_ROUTES: tuple[Route, ...] = (
    FORM_ROUTES
    + COMMIT_ROUTES
    + DREAM_ROUTES
    + QUERY_ROUTES
    + SEARCH_ROUTES
    + INSPECT_ROUTES
    + EXPORT_ROUTES
    + IMPORT_ROUTES
    + STEP_ROUTES
    + EVIDENCE_ROUTES
    + MEMORY_GET_ROUTES
    + READ_EXCERPT_ROUTES
    + MEMORY_CARD_ROUTES
    + EDIT_ROUTES
    + BRIEF_ROUTES
    + SCOPE_ROUTES
    + VOCABULARY_ROUTES
    + USAGE_ROUTES
    + OPERATION_ROUTES
    + ADMIN_ROUTES
    + FORGET_ROUTES
    + SUPPRESSION_ROUTES
    + KEYED_ROUTES
)


def serve(request: flask.Request, routes: Sequence[Route], services: Services) -> flask.Response:
    """Answer one HTTP request with the routes given; never raises."""
    started = time.perf_counter()
    logs.bind_trace(
        logs.trace_from_header(request.headers.get("X-Cloud-Trace-Context"), services.trace_project)
    )
    try:
        if request.method == "OPTIONS":
            response = options_reply(allowed_methods(request.path, routes))
        else:
            response = reply_response(dispatch(request, routes, services))
    except JennahError as err:
        response = error_reply(err)
    except Exception as exc:  # anything unexpected: log it, tell the caller nothing inside
        logs.log_exception(f"unhandled error on {request.method} {request.path}", exc)
        response = error_reply(Internal("internal error; the server log has the details"))
    logs.log(
        "INFO" if response.status_code < 500 else "ERROR",
        f"{request.method} {request.path} {response.status_code}",
        httpRequest={
            "requestMethod": request.method,
            "requestUrl": request.path,
            "status": response.status_code,
            "latency": f"{time.perf_counter() - started:.6f}s",
        },
    )
    return response


def dispatch(request: flask.Request, routes: Sequence[Route], services: Services) -> handlers.Reply:
    """Route, authenticate, authorize, parse and handle; raises JennahError on any refusal."""
    route, path = match(request.method, request.path, routes)
    access = services.access
    caller = access.authenticate(
        request.headers.get("Authorization"), request.headers.get(ENTERPRISE_HEADER) or None
    )
    for name, value in path.items():
        rules.validate_identifier(value, name)
    opened = authorize(access, caller, route, path)
    params = None if route.params_model is None else parse_params(request.args, route.params_model)
    if route.request_model is not None:
        raw = bodies.read_body(request.stream, request.content_length)
        parsed: Any = bodies.parse_json(raw, route.request_model)
    elif route.body_media_type is not None:
        parsed = raw_body(request, route.body_media_type)
    else:
        parsed, params = params, None
    return route.handler(
        handlers.Call(services, caller, path, parsed, opened, params, request.headers)
    )


def authorize(
    access: Access, caller: Caller, route: Route, path: Mapping[str, str]
) -> OpenedScope | None:
    """The route's permission, and reach over the scope it names (see the module doc)."""
    if route.scope_in_request:
        return None  # the handler's service authorizes, knowing the scope the request names
    if route.scope is not None:
        assert route.permission is not None, f"{route.operation_id} names a scope"
        return access.open_scope(
            caller,
            path[route.scope_param],
            route.scope.kind,
            route.permission,
            create=route.scope.create,
        )
    if route.permission is not None:
        access.require(caller, route.permission)
    return None


def match(method: str, path: str, routes: Sequence[Route]) -> tuple[Route, dict[str, str]]:
    """The route for a method and path, and its path parameters; NotFound or
    MethodNotAllowed."""
    found = _routes_at(path, routes)
    for route, params in found:
        if route.method == method or (method == "HEAD" and route.method == "GET"):
            return route, params
    raise MethodNotAllowed(method, path, sorted({route.method for route, _ in found}))


def allowed_methods(path: str, routes: Sequence[Route]) -> list[str]:
    """The methods a path binds (NotFound when none does): HEAD with GET, and OPTIONS."""
    bound = {route.method for route, _ in _routes_at(path, routes)}
    return sorted(bound | ({"HEAD"} if "GET" in bound else set()) | {"OPTIONS"})


def _routes_at(path: str, routes: Sequence[Route]) -> list[tuple[Route, dict[str, str]]]:
    found: list[tuple[Route, dict[str, str]]] = []
    for route in routes:  # the prefix first: a string comparison, not a regex, per route
        hit = route.pattern.match(path) if path.startswith(route.prefix) else None
        if hit is not None:
            found.append((route, hit.groupdict()))
    if not found:
        raise NotFound(
            f"no such resource: {path}", reason="ROUTE_NOT_FOUND", metadata={"path": path[:200]}
        )
    # A custom method wins over a resource whose id would swallow it, as in Google's
    # APIs: …/memories/x:edit is x's :edit, not a claim named "x:edit" (nor its Allow).
    specific = max(_literal_length(route.template) for route, _ in found)
    return [
        (route, params) for route, params in found if _literal_length(route.template) == specific
    ]


@functools.lru_cache(maxsize=256)
def _literal_length(template: str) -> int:
    return sum(len(part) for i, part in enumerate(_PARAM.split(template)) if i % 2 == 0)


def options_reply(allowed: list[str]) -> flask.Response:
    """OPTIONS on a path: 204 with the methods it binds in `Allow`. It needs no
    credential: it tells no more than the OpenAPI document does."""
    return flask.Response(status=204, headers={"Allow": ", ".join(allowed)})


def raw_body(request: flask.Request, media_type: str) -> bytes:
    """A non-JSON body: 415 unless its Content-Type is `media_type`, then read bounded
    like any body (413 past bodies.MAX_BODY_BYTES)."""
    if request.mimetype != media_type:
        raise HttpRefusal(
            415,
            f"the body must be sent as Content-Type {media_type}, not "
            f"{request.mimetype[:100] or 'none'}",
            "UNSUPPORTED_MEDIA_TYPE",
            {"expected": media_type},
        )
    return bodies.read_body(request.stream, request.content_length)


def parse_params(args: Any, model: type[BaseModel]) -> BaseModel:
    """Query parameters, each given at most once, validated like a body."""
    values: dict[str, str] = {}
    for name in args:
        given = args.getlist(name)
        if len(given) > 1:
            raise InvalidArgument(
                f"query parameter {name!r} is given {len(given)} times",
                reason="INVALID_FIELD",
                field=name,
            )
        values[name] = given[0]
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def reply_response(reply: handlers.Reply) -> flask.Response:
    if reply.content is not None:  # a file download
        return flask.Response(reply.content, reply.status, reply.headers, mimetype=reply.media_type)
    if reply.body is None:
        return flask.Response(status=reply.status, headers=reply.headers)
    return json_response(dto_body(reply.body), reply.status, reply.headers)


def dto_body(body: BaseModel | dict[str, object]) -> dict[str, object]:
    return dto.dump(body) if isinstance(body, BaseModel) else body


def json_response(
    body: dict[str, object], status: int, headers: dict[str, str] | None = None
) -> flask.Response:
    return flask.Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n",
        status=status,
        headers=headers or {},
        mimetype="application/json",
    )


def error_reply(err: JennahError) -> flask.Response:
    headers: dict[str, str] = {}
    if isinstance(err, MethodNotAllowed):
        headers["Allow"] = ", ".join(err.allowed)
    retry_delay = err.metadata.get("retryDelay", "")
    if retry_delay.endswith("s") and retry_delay[:-1].isdigit():
        headers["Retry-After"] = retry_delay[:-1]
    if err.status == "UNAUTHENTICATED":
        headers["WWW-Authenticate"] = 'Bearer realm="jennah"'
    if err.http_status >= 500:
        logs.log("ERROR", f"{err.status}: {err.message}")
    return json_response(dto.dump(error_response(err)), err.http_status, headers)
