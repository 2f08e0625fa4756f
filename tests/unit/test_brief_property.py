"""Properties of the brief over random scopes: at most 2,000 tokens always, every section
within its budget, sensitive claims never shown, the same bytes whatever the input order,
and the lines of each section a heaviest-first prefix of its eligible claims."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jennah.domain import brief
from jennah.domain.brief import LastConversation, compile_brief, count_tokens
from jennah.domain.models import (
    Authority,
    BriefVariant,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)

SCOPE = ScopeRef(enterprise_id="local", scope_id="s")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
BUDGETS = {
    "Identity": brief.IDENTITY_BUDGET,
    "Directives": brief.DIRECTIVES_BUDGET,
    "Topic": brief.TOPIC_BUDGET,
    "Last": brief.LAST_CONVERSATION_BUDGET,
}
SECRET = "zqxsecret"

# text that stresses the tokenizer and the escaping: words, digits, punctuation, markup,
# line breaks, control and format characters, other scripts, emoji
_ALPHABET = st.sampled_from(
    [*"abcdefghij klmnop QRS 0123456789 .,;:!?\"'<>/\\#-*`{}[]\n\t",
     "\x00", "\x1b", "\u202e", "\u200b", "\u2028", "é", "ß", "日本", "Ω", "🙂", "\U000e0041"]
)  # fmt: skip
_TEXT = st.lists(_ALPHABET, min_size=1, max_size=120).map("".join)
_LONG = st.one_of(_TEXT, _TEXT.map(lambda t: (t + " ") * 40))
_ABOUT = st.one_of(st.just(""), st.sampled_from(["Soccer", "soccer ", "Food", "School"]), _TEXT)


@st.composite
def claims(draw: st.DrawFn, memory_id: str) -> MemoryRecord:
    sensitivity = draw(st.sampled_from(list(Sensitivity)))
    summary = draw(_LONG)
    if sensitivity is not Sensitivity.NORMAL:
        summary = f"{SECRET} {summary}"
    until = draw(st.one_of(st.none(), st.integers(-48, 48)))
    return MemoryRecord(
        id=memory_id,
        scope=SCOPE,
        text=draw(_LONG),
        summary=draw(st.sampled_from([summary, "", " \n "])) or summary,
        about=draw(_ABOUT) if sensitivity is Sensitivity.NORMAL else f"{SECRET} about",
        type=draw(st.sampled_from(list(MemoryType))),
        strength=draw(st.sampled_from(list(Strength))),
        pin=draw(st.booleans()),
        authority=draw(st.sampled_from(list(Authority))),
        sensitivity=sensitivity,
        status=draw(st.sampled_from([Status.ACTIVE] * 4 + list(Status))),
        valid_until=None if until is None else NOW + timedelta(hours=until),
    )


@st.composite
def scopes(draw: st.DrawFn) -> tuple[list[MemoryRecord], LastConversation | None]:
    count = draw(st.integers(0, 120))
    found = [draw(claims(f"chk_{i:04x}{draw(st.text('0123456789abcdef', max_size=28))}"))
             for i in range(count)]  # fmt: skip
    if not found or not draw(st.booleans()):
        return found, None
    ids = [c.id for c in found]
    formed = draw(st.sets(st.sampled_from(ids)))
    reinforced = draw(st.sets(st.sampled_from(ids))) - formed
    return found, LastConversation("frm_" + "a" * 32, frozenset(formed), frozenset(reinforced))


def _section_texts(text: str) -> dict[str, str]:
    blocks = text.removesuffix("</memory-brief>\n").split("\n## ")[1:]
    return {block.split()[0]: "## " + block.rstrip("\n") for block in blocks}


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scope=scopes(), variant=st.sampled_from(list(BriefVariant)), seed=st.integers(0, 9))
def test_any_scope_compiles_within_budget_stably_and_safely(
    scope: tuple[list[MemoryRecord], LastConversation | None],
    variant: BriefVariant,
    seed: int,
) -> None:
    found, last = scope
    compiled = compile_brief(SCOPE.scope_id, found, last, variant, NOW)
    text = compiled.text
    # never over the cap, and the count is that of the whole text
    assert compiled.token_count == count_tokens(text) <= brief.BRIEF_TOKEN_LIMIT
    sections = _section_texts(text)
    expected = ["Identity", "Directives", "Topic"] + (["Last"] if variant.value == "full" else [])
    assert list(sections) == expected
    for name, section in sections.items():
        assert count_tokens(section) <= BUDGETS[name], name
    # sensitive claims never show, nor anything but the frame, headings and `- ` lines
    assert SECRET not in text
    lines = text.split("\n")
    assert lines[0].startswith("<memory-brief ") and lines[-2:] == ["</memory-brief>", ""]
    assert all(line.startswith(("## ", "- ")) for line in lines[2:-2])
    # only eligible claims are referenced, and every expiry is of a referenced claim
    shown = {c.id for c in found if brief.eligible(c, NOW)}
    referenced = {line.rpartition("/")[2] for line in lines if " memory://s/" in line}
    assert referenced <= shown
    assert set(compiled.expiries) == {
        c.id for c in found if c.id in referenced and c.valid_until is not None
    }
    # identical memory, shuffled: identical bytes
    shuffled = found[:]
    random.Random(seed).shuffle(shuffled)
    assert compile_brief(SCOPE.scope_id, shuffled, last, variant, NOW).text == text
    # Directives: a heaviest-first prefix of the eligible directive claims
    directives = [line.rpartition("/")[2] for line in sections["Directives"].split("\n")[1:]
                  if line != "- (none)"]  # fmt: skip
    ranked = sorted(
        (
            c
            for c in found
            if c.id in shown and brief.is_directive(c) and brief.claim_line("s", c, "")
        ),
        key=brief.directive_weight,
    )
    assert directives == [c.id for c in ranked[: len(directives)]]
