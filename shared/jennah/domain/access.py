"""Tenancy and access: enterprises, callers, roles, permissions and selector reach.

Pure rules, no I/O. A caller is `user:<id>` or `api_key:<id>` inside one
enterprise. Roles grant permissions; selectors grant reach over scope ids, in
two namespaces granted independently: agent selectors reach agent workspaces,
subject selectors reach subject scopes (both kinds share one identifier space).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from jennah.errors import InvalidArgument

# The embedded default's own enterprise and its root user (`jnh serve`).
LOCAL_ENTERPRISE_ID = "local"
ROOT_PRINCIPAL = "user:root"
# An API key credential: "jk_<keyId>_<secret>".
API_KEY_PREFIX = "jk_"


class Permission(StrEnum):
    MEMORY_FORM = "agent.memory:form"
    MEMORY_COMMIT = "agent.memory:commit"
    MEMORY_QUERY = "agent.memory:query"
    # Issue 17: the person's own view of and control over the memory (the card, search,
    # read, excerpt; edit = supersede; forget = retract and suppress).
    MEMORY_READ = "agent.memory:read"
    MEMORY_EDIT = "agent.memory:edit"
    MEMORY_FORGET = "agent.memory:forget"
    # Issue 18: the agent's keyed notebook (remember, get, list, recall, search; link and
    # unlink are writes; forget_memory is the delete).
    KEYED_READ = "agent.keyedMemory:read"
    KEYED_WRITE = "agent.keyedMemory:write"
    KEYED_DELETE = "agent.keyedMemory:delete"
    SCOPES_LIST = "agent.scopes:list"
    SCOPES_DESTROY = "agent.scopes:destroy"
    VOCABULARY_READ = "agent.vocabulary:read"
    VOCABULARY_MANAGE = "agent.vocabulary:manage"
    BILLING_READ = "billing.state:read"
    BILLING_USAGE_READ = "billing.usage:read"
    BILLING_OVERAGE_MANAGE = "billing.overage:manage"
    KEYS_MANAGE = "iam.keys:manage"
    ROLES_MANAGE = "iam.roles:manage"


# Never usable with an API key, whatever role the key is bound to.
MANAGEMENT_PERMISSIONS: frozenset[Permission] = frozenset(
    {
        Permission.VOCABULARY_MANAGE,
        Permission.KEYS_MANAGE,
        Permission.ROLES_MANAGE,
        Permission.BILLING_OVERAGE_MANAGE,
    }
)

# Changing memory by hand is for people, never for an agent's API key: the agent reads
# memory and cannot rewrite or delete it (family-memory-design.md §9).
MEMORY_CHANGE_PERMISSIONS: frozenset[Permission] = frozenset(
    {Permission.MEMORY_EDIT, Permission.MEMORY_FORGET}
)
# Keyed memory is the agent's own notebook: remember, link and forget_memory are the
# agent's tools (keyed-memory-and-recall.md), so all three keyed permissions are usable
# with an API key whose role grants them (every role does); they are deliberately NOT in
# USER_ONLY_PERMISSIONS, unlike the claim edits above.
# Everything an API key can never use, whatever role it is bound to.
USER_ONLY_PERMISSIONS: frozenset[Permission] = MANAGEMENT_PERMISSIONS | MEMORY_CHANGE_PERMISSIONS

_MEMBER = frozenset(
    {
        Permission.MEMORY_FORM,
        Permission.MEMORY_COMMIT,
        Permission.MEMORY_QUERY,
        Permission.MEMORY_READ,
        Permission.MEMORY_EDIT,
        Permission.MEMORY_FORGET,
        Permission.KEYED_READ,
        Permission.KEYED_WRITE,
        Permission.KEYED_DELETE,
        Permission.SCOPES_LIST,
        Permission.VOCABULARY_READ,
        Permission.BILLING_READ,
    }
)


class Role(StrEnum):
    ROOT = "root"
    ADMINISTRATOR = "administrator"
    MEMBER = "member"


ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.ROOT: frozenset(Permission),
    Role.ADMINISTRATOR: frozenset(Permission),
    Role.MEMBER: _MEMBER,  # deliberately without billing.usage:read
}


class ScopeKind(StrEnum):
    AGENT = "agent"
    SUBJECT = "subject"


class CallerKind(StrEnum):
    USER = "user"
    API_KEY = "api_key"


class Caller(BaseModel):
    """Who is calling, as resolved from the bearer credential."""

    model_config = ConfigDict(frozen=True)

    enterprise_id: str
    principal: str  # "user:<id>" or "api_key:<id>"

    @property
    def kind(self) -> CallerKind:
        return CallerKind.API_KEY if self.principal.startswith("api_key:") else CallerKind.USER


class Enterprise(BaseModel):
    enterprise_id: str
    display_name: str = ""
    created_at: datetime | None = None


class User(BaseModel):
    """A user of one enterprise. `token_hash` is set only for development credentials."""

    enterprise_id: str
    principal: str  # "user:<id>"
    token_hash: str | None = None
    created_at: datetime | None = None


class ApiKey(BaseModel):
    """An API key: the secret is shown once at creation and stored only as a hash."""

    enterprise_id: str
    key_id: str  # public; the principal is "api_key:<key_id>"
    secret_hash: str
    display_name: str = ""
    created_by: str  # the principal that created it (never used as the key's identity)
    created_at: datetime
    expire_time: datetime | None = None
    revoked_at: datetime | None = None

    @property
    def principal(self) -> str:
        return f"api_key:{self.key_id}"


class RoleBinding(BaseModel):
    """Grants one role, and reach over scopes, to one principal of one enterprise."""

    enterprise_id: str
    principal: str
    role: Role
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)


class Grants(BaseModel):
    """What a caller may do: the union of its bindings."""

    permissions: frozenset[Permission] = frozenset()
    agent_selectors: tuple[str, ...] = ()
    subject_selectors: tuple[str, ...] = ()


SELECTOR_PATTERN = re.compile(r"^[A-Za-z0-9_.:\-*]{1,128}$")
MAX_SELECTORS = 64  # per list (agent selectors, subject selectors) of one binding

# Principals: `user:<id>` and `api_key:<keyId>`; an API key's id alone is KEY_ID_PATTERN.
USER_PRINCIPAL = re.compile(r"^user:[A-Za-z0-9._%+@\-]{1,254}$")
API_KEY_PRINCIPAL = re.compile(r"^api_key:([A-Za-z0-9\-]{1,64})$")
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9\-]{1,64}$")
MAX_DISPLAY_NAME = 128  # of an API key


def validate_selector(selector: str, field: str) -> None:
    """A selector is a scope id, or a pattern where `*` matches any run of characters."""
    if not SELECTOR_PATTERN.match(selector):
        raise InvalidArgument(
            f"{field} {selector[:80]!r} must be 1-128 characters of letters, digits, "
            "'_', '.', ':', '-' and '*'",
            field=field,
        )


def selector_matches(selector: str, scope_id: str) -> bool:
    """`bot.*` reaches `bot.a` and `bot.a.b`; `*` reaches everything; else exact."""
    regex = ".*".join(re.escape(part) for part in selector.split("*"))
    return re.fullmatch(regex, scope_id) is not None


def selector_covers(own: str, granted: str) -> bool:
    """Whether selector `own` reaches every scope id selector `granted` reaches.

    Precisely: `own` matches `granted` read as a scope id in which each `*` is a
    character that only a `*` of `own` can stand for (a literal of `own` never
    matches it). So `*` covers every selector; `a.*` covers `a.b`, `a.b.*`, `a.*`
    and `a.b*`, but not `a` nor `a*` (which reaches `ab`); `a.b.*` does not cover
    `a.*`; an exact name covers only itself. Sound: when it says yes, every scope id
    `granted` matches, `own` matches too (replace each `*` of `granted` by any run
    of characters: the `*` of `own` that stood for it stands for that run).
    """
    return selector_matches(own, granted)


def uncovered(own: tuple[str, ...] | list[str], granted: list[str]) -> list[str]:
    """The selectors of `granted` that no single selector of `own` covers, in order."""
    return [g for g in granted if not any(selector_covers(o, g) for o in own)]


def grants_for(bindings: list[RoleBinding]) -> Grants:
    """Union of permissions and reach; root reaches every scope of its enterprise."""
    permissions: set[Permission] = set()
    agents: list[str] = []
    subjects: list[str] = []
    for binding in bindings:
        permissions |= ROLE_PERMISSIONS[binding.role]
        if binding.role is Role.ROOT:
            agents.append("*")
            subjects.append("*")
        agents.extend(binding.agent_selectors)
        subjects.extend(binding.subject_selectors)
    return Grants(
        permissions=frozenset(permissions),
        agent_selectors=tuple(dict.fromkeys(agents)),
        subject_selectors=tuple(dict.fromkeys(subjects)),
    )


def reaches(grants: Grants, kind: ScopeKind, scope_id: str) -> bool:
    selectors = grants.agent_selectors if kind is ScopeKind.AGENT else grants.subject_selectors
    return any(selector_matches(s, scope_id) for s in selectors)


def reaches_everything(grants: Grants) -> bool:
    """Reach over every agent workspace and every subject scope of the enterprise."""
    return "*" in grants.agent_selectors and "*" in grants.subject_selectors
