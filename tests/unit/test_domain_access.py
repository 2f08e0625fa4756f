"""Roles, permissions and selector reach: the pure rules."""

from __future__ import annotations

import itertools

import pytest

from jennah.domain.access import (
    MANAGEMENT_PERMISSIONS,
    MEMORY_CHANGE_PERMISSIONS,
    ROLE_PERMISSIONS,
    USER_ONLY_PERMISSIONS,
    Caller,
    CallerKind,
    Permission,
    Role,
    RoleBinding,
    ScopeKind,
    grants_for,
    reaches,
    reaches_everything,
    selector_covers,
    selector_matches,
    uncovered,
    validate_selector,
)
from jennah.errors import InvalidArgument


def test_member_role_does_not_carry_billing_usage_read() -> None:
    assert Permission.BILLING_USAGE_READ not in ROLE_PERMISSIONS[Role.MEMBER]
    assert Permission.BILLING_USAGE_READ in ROLE_PERMISSIONS[Role.ADMINISTRATOR]


def test_member_role_has_no_management_permission() -> None:
    assert not ROLE_PERMISSIONS[Role.MEMBER] & MANAGEMENT_PERMISSIONS


def test_management_class_is_what_the_spec_names() -> None:
    assert {str(p) for p in MANAGEMENT_PERMISSIONS} == {
        "agent.vocabulary:manage",
        "iam.keys:manage",
        "iam.roles:manage",
        "billing.overage:manage",
    }
    assert Permission.VOCABULARY_READ not in MANAGEMENT_PERMISSIONS


def test_members_may_read_edit_and_forget_memory_and_keys_may_not_change_it() -> None:
    member = ROLE_PERMISSIONS[Role.MEMBER]
    assert {"agent.memory:read", "agent.memory:edit", "agent.memory:forget"} <= {
        str(p) for p in member
    }
    assert {str(p) for p in MEMORY_CHANGE_PERMISSIONS} == {
        "agent.memory:edit",
        "agent.memory:forget",
    }
    assert USER_ONLY_PERMISSIONS == MANAGEMENT_PERMISSIONS | MEMORY_CHANGE_PERMISSIONS


@pytest.mark.parametrize(
    ("selector", "scope_id", "expected"),
    [
        ("bot.*", "bot.a", True),
        ("bot.*", "bot.a.b", True),
        ("bot.*", "bot", False),
        ("bot.*", "robot.a", False),
        ("*", "anything", True),
        ("support-bot", "support-bot", True),
        ("support-bot", "support-bot2", False),
        ("a.b", "aXb", False),  # '.' is literal, not a regex wildcard
        ("*.eu", "bot.eu", True),
    ],
)
def test_selector_matching(selector: str, scope_id: str, expected: bool) -> None:
    assert selector_matches(selector, scope_id) is expected


@pytest.mark.parametrize(
    ("own", "granted", "expected"),
    [
        ("*", "*", True),
        ("*", "a.*", True),
        ("*", "secret.agent", True),
        ("*", "*.eu", True),
        ("a.*", "a.b", True),
        ("a.*", "a.b.*", True),
        ("a.*", "a.*", True),
        ("a.*", "a.b*", True),
        ("a.*", "a.*.c", True),
        ("a.*", "*", False),
        ("a.*", "a", False),  # a.* does not reach the scope "a"
        ("a.*", "a*", False),  # a* reaches "ab", which a.* does not
        ("a.*", "b.*", False),
        ("a.*", "*.a", False),
        ("a.b.*", "a.*", False),
        ("a.b.*", "a.b", False),
        ("a.b.*", "a.b.c", True),
        ("a*", "a.*", True),
        ("a*", "a", True),
        ("*.eu", "bot.eu", True),
        ("*.eu", "bot.*", False),
        ("*.eu", "*.eu", True),
        ("*.eu", "x.*.eu", True),
        ("*b*", "a*b*c", True),
        ("*b*", "a*c", False),
        ("support-bot", "support-bot", True),
        ("support-bot", "support-bot2", False),
        ("support-bot", "support-*", False),
        ("support-bot", "*", False),
        ("a.b", "aXb", False),  # '.' is literal
        ("other.*", "*", False),
        ("other.*", "secret.agent", False),
    ],
)
def test_selector_coverage(own: str, granted: str, expected: bool) -> None:
    assert selector_covers(own, granted) is expected


def test_selector_coverage_is_sound() -> None:
    """Whenever `own` covers `granted`, every scope id `granted` matches, `own` matches:
    checked over every selector of up to 4 characters and every id of up to 5, on a
    small alphabet."""
    alphabet = "ab."
    ids = ["".join(p) for n in range(1, 6) for p in itertools.product(alphabet, repeat=n)]
    selectors = ["".join(p) for n in range(1, 5)
                 for p in itertools.product(alphabet + "*", repeat=n)]  # fmt: skip
    reached = {s: frozenset(i for i in ids if selector_matches(s, i)) for s in selectors}
    for own, granted in itertools.product(selectors, repeat=2):
        if selector_covers(own, granted):
            assert reached[granted] <= reached[own], (own, granted)


def test_uncovered_names_each_selector_no_single_own_selector_covers() -> None:
    assert uncovered(("a.*", "x"), ["a.b", "x", "*", "y", "a.c.*"]) == ["*", "y"]
    assert uncovered(("*",), ["anything", "*"]) == []
    assert uncovered((), ["a"]) == ["a"]
    assert uncovered((), []) == []


@pytest.mark.parametrize("selector", ["", "bot/*", "bot?", "a b", "x" * 129])
def test_bad_selectors_are_refused_naming_the_field(selector: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        validate_selector(selector, "agentSelectors[0]")
    assert err.value.metadata["field"] == "agentSelectors[0]"


def test_agent_and_subject_reach_are_granted_independently() -> None:
    grants = grants_for(
        [
            RoleBinding(
                enterprise_id="e",
                principal="user:a",
                role=Role.MEMBER,
                agent_selectors=["bot.*"],
                subject_selectors=["user.ana"],
            )
        ]
    )
    assert reaches(grants, ScopeKind.AGENT, "bot.1")
    assert not reaches(grants, ScopeKind.SUBJECT, "bot.1")
    assert reaches(grants, ScopeKind.SUBJECT, "user.ana")
    assert not reaches(grants, ScopeKind.AGENT, "user.ana")
    assert not reaches_everything(grants)


def test_root_reaches_everything_and_permissions_union() -> None:
    grants = grants_for(
        [
            RoleBinding(enterprise_id="e", principal="user:r", role=Role.ROOT),
            RoleBinding(enterprise_id="e", principal="user:r", role=Role.MEMBER),
        ]
    )
    assert reaches_everything(grants)
    assert grants.permissions == frozenset(Permission)
    assert grants_for([]).permissions == frozenset()


def test_caller_kind_from_principal() -> None:
    assert Caller(enterprise_id="e", principal="api_key:k1").kind is CallerKind.API_KEY
    assert Caller(enterprise_id="e", principal="user:ana").kind is CallerKind.USER
