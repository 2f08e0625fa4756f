"""The memory console in a real browser: Debian's Chromium (/usr/bin/chromium, installed by
scripts/bootstrap), driven by Playwright, against a real `jnh serve` (SQLite, hashing
embedder, the rules model). Claims are seeded through the public API (memory:commit, and
memory:form for evidence, usage and operations); every step is done in the pages.

Screenshots of each page go to $JENNAH_TEST_ARTIFACTS (default build/console-screenshots/);
with JENNAH_UPDATE_DOCS_SCREENSHOTS=1 the card and the claim page also go to docs/.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright

from tests.e2e.conftest import Server, serving

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
# As root in a container, with this machine's closed network: no sandbox, no GPU, nothing
# fetched in the background. Playwright gives every launch a new empty profile.
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(os.environ.get("JENNAH_TEST_ARTIFACTS") or ROOT / "build" / "console-screenshots")
DOCS_SHOTS = {
    "card": ROOT / "docs" / "console-card.png",
    "claim": ROOT / "docs" / "console-claim.png",
}
XSS_TEXT = "<script>window.pwned = 1</script> Ana keeps her keys by the door"
XSS_SUMMARY = '<img src=x onerror="window.pwned = 2"> Where the keys are'


@dataclass
class Console:
    server: Server
    root: str
    member: str
    key: str
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"{self.server.endpoint}/console/"

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        answer = httpx.request(
            method, self.server.endpoint + path, json=body, timeout=30,
            headers={"Authorization": f"Bearer {token or self.root}"},
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        return answer.json()

    def claim(self, memory_id: str, scope: str = "family") -> dict[str, Any]:
        claim: dict[str, Any] = self.api("GET", f"/v1/scopes/{scope}/memories/{memory_id}")["claim"]
        return claim


def claim(text: str, summary: str, **fields: Any) -> dict[str, Any]:
    return {"text": text, "summary": summary, "about": fields.pop("about", "Ana"), **fields}


SEED = {
    "xss": claim(XSS_TEXT, XSS_SUMMARY, type="fact"),
    "allergy": claim("Ana is allergic to peanuts", "Peanut allergy", sensitivity="health"),
    "colour": claim(
        "Ana's favourite colour is green", "Favourite colour: green", type="preference"
    ),
    "keyed": claim("Ana takes the bus to school", "Bus to school"),
    "directive": claim(
        "Always ask Ana before booking anything on a Sunday",
        "Ask before Sunday bookings",
        type="directive",
    ),
    **{
        f"soccer{n}": claim(f"Soccer practice note {n}", f"Soccer note {n}", about="Soccer club")
        for n in range(3)
    },
}


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with serving(tmp_path_factory.mktemp("console")) as server:
        root = server.ok("auth", "print-token").strip()
        seeded = Console(server, root, "", "")
        member = seeded.api("POST", "/v1/users", {"principal": "user:ana"})["token"]
        seeded.api("POST", "/v1/roleBindings:grant", {
            "principal": "user:ana", "role": "member", "subjectSelectors": ["family"],
        })  # fmt: skip
        key = seeded.api("POST", "/v1/apiKeys", {
            "displayName": "console test", "role": "member", "subjectSelectors": ["family"],
        })["keyString"]  # fmt: skip
        seeded.member, seeded.key = member, key
        written = seeded.api("POST", "/v1/scopes/family/memory:commit",
                             {"chunks": list(SEED.values())})["chunkIds"]  # fmt: skip
        seeded.ids = dict(zip(SEED, written, strict=True))
        many = [{"text": f"Numbered fact {n:02d}", "summary": f"Fact {n:02d}"} for n in range(25)]
        seeded.api("POST", "/v1/scopes/many/memory:commit", {"chunks": many})
        turns = [{"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."}]
        seeded.api("POST", "/v1/agents/helper/memory:form", {"turns": turns})
        formed = seeded.api("GET", "/v1/scopes/helper/memories")["memories"]
        seeded.ids["formed"] = next(m["memoryId"] for m in formed if "Alphaus" in m["summary"])
        yield seeded


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "Chromium is missing: scripts/bootstrap installs it (apt-get)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@dataclass
class Tab:
    page: Page
    console: Console
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def open(self, route: str) -> Page:
        self.page.goto(self.console.url + route)
        self.ready()
        return self.page

    def ready(self) -> None:
        self.page.wait_for_selector("#view[data-ready=true]")

    def sign_in(self, credential: str) -> None:
        self.page.goto(self.console.url)
        self.page.get_by_label("API key or token").fill(credential)
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_role("heading", name="Workspaces", exact=True)).to_be_visible()
        self.ready()

    def confirm(self, button: str) -> None:
        dialog = self.page.locator("dialog#confirm")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name=button).click()

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if os.environ.get("JENNAH_UPDATE_DOCS_SCREENSHOTS") == "1" and name in DOCS_SHOTS:
            DOCS_SHOTS[name].parent.mkdir(exist_ok=True)
            self.page.evaluate("window.scrollTo(0, 0)")  # the top of the page, laptop-wide
            self.page.screenshot(path=str(DOCS_SHOTS[name]))


@pytest.fixture
def tab(browser: Browser, console: Console) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    page = context.new_page()
    opened = Tab(page, console)
    page.on("pageerror", lambda err: opened.errors.append(str(err)))

    def on_dialog(dialog: Dialog) -> None:  # alert(), confirm(): the pages never open one
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield opened
    context.close()
    assert opened.errors == [] and opened.dialogs == []


def test_sign_in_keeps_the_credential_in_the_tab_only(tab: Tab, console: Console) -> None:
    page = tab.page
    page.goto(console.url)
    page.get_by_label("API key or token").fill("ju_not-a-real-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("Your credential was refused")
    assert page.evaluate("sessionStorage.length") == 0
    tab.shot("signin")
    tab.sign_in(console.root)
    assert page.evaluate("sessionStorage.getItem('jennah.credential')") == console.root
    assert console.root not in page.url and page.context.cookies() == []
    expect(page.locator("#who")).to_have_text("user:root (root)")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0


def test_the_banner_names_the_console(console: Console) -> None:
    line = f"  console    {console.url} (sign in with the token below)"
    assert line in console.server.banner


def test_workspaces_list_the_agents_and_subject_scopes(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    agents = tab.page.locator(
        "section", has=tab.page.get_by_role("heading", name="Agent workspaces")
    )
    subjects = tab.page.locator(
        "section", has=tab.page.get_by_role("heading", name="Subject scopes")
    )
    expect(agents.get_by_role("link")).to_have_text(["helper"])
    expect(subjects.get_by_role("link")).to_have_text(["family", "many"])
    tab.shot("workspaces")


def test_the_card_is_paged_newest_first_filtered_and_searchable(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/scopes/many")
    items = page.locator("#card li")
    expect(items).to_have_count(20)
    expect(items.first).to_contain_text("Fact ")
    page.get_by_role("button", name="Next").click()
    expect(items).to_have_count(25)
    expect(page.get_by_role("button", name="Next")).to_be_hidden()
    page = tab.open("#/scopes/family")
    expect(page.locator("#card li").first).to_be_visible()
    tab.shot("card")
    page.get_by_label("Sensitivity").select_option("health")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#card li")).to_have_count(1)
    expect(page.locator("#card li")).to_contain_text("Peanut allergy")
    page.get_by_label("Search memory").fill("bus school")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-results li").first).to_contain_text("Bus to school")
    tab.shot("card-filtered")


def test_a_claim_shows_its_evidence_excerpt_lineage_and_history(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open(f"#/scopes/helper/memories/{tab.console.ids['formed']}")
    expect(page.locator("#claim-text")).to_have_text("The user works at Alphaus.")
    expect(page.locator("blockquote")).to_contain_text("Alphaus")
    page.get_by_role("button", name="Show the conversation").click()
    expect(page.locator(".excerpt")).to_contain_text("I live in Tokyo and I work at Alphaus.")
    expect(page.locator("#history")).to_contain_text("formed")
    expect(page.locator("#lineage")).to_contain_text("None.")
    tab.shot("claim")


def test_edit_shows_the_new_text_with_the_old_one_in_the_lineage(tab: Tab) -> None:
    old = tab.console.ids["colour"]
    tab.sign_in(tab.console.root)
    page = tab.open(f"#/scopes/family/memories/{old}")
    page.get_by_label("Corrected wording").fill("Ana's favourite colour is blue")
    page.get_by_label("Summary (one line)").fill("Favourite colour: blue")
    page.get_by_role("button", name="Save correction…").click()
    tab.confirm("Save")
    expect(page.locator("#claim-text")).to_have_text("Ana's favourite colour is blue")
    tab.ready()
    lineage = page.locator("#lineage")
    expect(lineage.get_by_role("link", name="Favourite colour: green")).to_be_visible()
    expect(lineage).to_contain_text("superseded")
    assert tab.console.claim(old)["status"] == "superseded"
    tab.shot("claim-edited")


def test_forget_removes_it_from_the_card_and_the_brief_and_keeps_it_retracted(tab: Tab) -> None:
    memory_id = tab.console.ids["directive"]
    tab.sign_in(tab.console.root)
    page = tab.open("#/scopes/family/brief")
    expect(page.locator("#brief-text")).to_contain_text(f"memory://family/{memory_id}")
    page = tab.open(f"#/scopes/family/memories/{memory_id}")
    page.get_by_role("button", name="Forget this memory…").click()
    tab.confirm("Forget")
    expect(page.get_by_role("status")).to_have_text("Forgotten: kept as retracted.")
    expect(page.locator(".badge.retracted")).to_be_visible()
    page = tab.open("#/scopes/family")
    expect(page.locator(f"#card li[data-memory-id={memory_id}]")).to_have_count(0)
    page.get_by_label("Status").select_option("retracted")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator(f"#card li[data-memory-id={memory_id}]")).to_have_count(1)
    page = tab.open("#/scopes/family/brief")
    expect(page.locator("#brief-text")).not_to_contain_text(memory_id)
    page.get_by_role("button", name="Shared (household)").click()
    expect(page.locator("#brief-text")).to_contain_text('variant="shared"')
    tab.shot("brief")
    page = tab.open("#/scopes/family/suppressions")
    rule = page.locator("li", has_text="Always ask Ana before booking")
    expect(rule).to_have_count(1)
    tab.shot("suppressions")
    rule.get_by_role("button", name="Remove…").click()
    tab.confirm("Remove")
    expect(page.get_by_role("status")).to_have_text("Rule removed.")
    expect(rule).to_have_count(0)


def test_group_forget_shows_the_count_first(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/scopes/family")
    page.get_by_label("Value").fill("Soccer club")
    page.get_by_role("button", name="Count and forget…").click()
    expect(page.locator("#group-count")).to_have_text("3 memories match.")
    expect(page.locator("#confirm-text")).to_contain_text("This forgets 3 memories of family")
    tab.confirm("Forget 3")
    expect(page.locator("#group-status [role=status]")).to_have_text("Forgot 3 memories.")
    expect(page.locator("#card li", has_text="Soccer note")).to_have_count(0)
    for n in range(3):
        assert tab.console.claim(tab.console.ids[f"soccer{n}"])["status"] == "retracted"


def test_memory_text_renders_as_text_and_runs_nothing(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/scopes/family")
    link = page.get_by_role("link", name=XSS_SUMMARY)
    expect(link).to_have_text(XSS_SUMMARY)
    link.click()
    expect(page.locator("#claim-text")).to_have_text(XSS_TEXT)
    tab.ready()
    assert page.locator("#view img, #view script").count() == 0
    assert page.evaluate("window.pwned") is None  # and the tab fixture saw no dialog
    tab.shot("xss")


def test_usage_is_a_chart_and_billing_shows_the_band(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/usage")
    expect(page.locator("#usage-chart svg rect.bar")).not_to_have_count(0)
    expect(page.locator("#billing")).to_contain_text("ENTERPRISE")
    expect(page.locator("#billing")).to_contain_text("Overage band")
    page.get_by_label("Group by").select_option("model")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#usage-chart .legend li")).to_have_text(["rules"])
    tab.shot("usage")


def test_operations_show_the_formations_and_their_receipt(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/operations")
    item = page.locator("li", has_text="helper").first
    expect(item).to_contain_text("SUCCEEDED")
    item.get_by_role("button", name="Receipt").click()
    expect(item).to_contain_text("The user works at Alphaus.")
    tab.shot("operations")


def test_the_vocabulary_is_shown_read_only(tab: Tab) -> None:
    tab.sign_in(tab.console.root)
    page = tab.open("#/scopes/family/vocabulary")
    expect(page.get_by_role("heading", name="Resolved (what formation uses here)")).to_be_visible()
    assert page.locator("#view input, #view textarea").count() == 0
    tab.shot("vocabulary")


def test_a_member_sees_no_usage_report_and_no_billing(tab: Tab) -> None:
    tab.sign_in(tab.console.member)
    page = tab.open("#/usage")
    expect(page.locator("#usage-chart [role=alert]")).to_contain_text(
        "You don't have access to usage"
    )
    assert page.locator("#usage-chart svg").count() == 0
    assert page.locator("#billing").count() == 0  # and no billing figures
    expect(page.get_by_text("Overage band")).to_have_count(0)
    tab.shot("usage-member")


def test_an_api_key_cannot_edit(tab: Tab) -> None:
    memory_id = tab.console.ids["keyed"]
    tab.sign_in(tab.console.key)
    page = tab.open(f"#/scopes/family/memories/{memory_id}")
    page.get_by_label("Corrected wording").fill("Ana walks to school")
    page.get_by_role("button", name="Save correction…").click()
    tab.confirm("Save")
    refusal = page.get_by_role("alert")
    expect(refusal).to_contain_text("You don't have access to edit this memory:")
    assert tab.console.claim(memory_id)["text"] == "Ana takes the bus to school"
    tab.shot("claim-api-key")


def test_a_cross_origin_form_post_changes_nothing(tab: Tab) -> None:
    """The console's calls carry the credential in a header a browser never adds by itself:
    a page elsewhere posting a form at the API, from a browser signed in to the console,
    is refused and nothing changes."""
    memory_id = tab.console.ids["allergy"]
    tab.sign_in(tab.console.root)
    target = f"{tab.console.server.endpoint}/v1/scopes/family/memories/{memory_id}:forget"
    other = tab.page.context.new_page()
    other.set_content(
        f'<form method="post" action="{target}" enctype="text/plain">'
        '<input name="{}" value=""><button>go</button></form>'
    )
    with other.expect_navigation():
        other.get_by_role("button", name="go").click()
    answer = json.loads(other.locator("body").inner_text())
    assert answer["error"]["status"] == "UNAUTHENTICATED"
    assert tab.console.claim(memory_id)["status"] == "active"
    assert re.search(r"\bjk_|\bju_", other.url) is None


def test_phone_width_is_one_column_with_labels_on_every_control(
    browser: Browser, console: Console
) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740})
    tab = Tab(context.new_page(), console)
    try:
        tab.sign_in(console.root)
        routes = {
            "card-phone": "#/scopes/family",
            "claim-phone": f"#/scopes/family/memories/{console.ids['allergy']}",
            "usage-phone": "#/usage",
        }
        for name, route in routes.items():
            page = tab.open(route)
            assert page.evaluate("document.documentElement.scrollWidth") <= 375, name
            unlabelled = page.evaluate(
                "[...document.querySelectorAll('input, select, textarea')]"
                ".filter((c) => !c.labels || !c.labels.length).map((c) => c.name)"
            )
            assert unlabelled == [], (name, unlabelled)
            tab.shot(name)
    finally:
        context.close()


def test_the_dialog_takes_the_focus_and_gives_it_back(tab: Tab) -> None:
    memory_id = tab.console.ids["allergy"]
    tab.sign_in(tab.console.root)
    page = tab.open(f"#/scopes/family/memories/{memory_id}")
    forget = page.get_by_role("button", name="Forget this memory…")
    forget.focus()
    page.keyboard.press("Enter")
    expect(page.locator("dialog#confirm")).to_be_visible()
    assert page.evaluate("document.activeElement.id") == "confirm-cancel"
    page.keyboard.press("Escape")
    expect(page.locator("dialog#confirm")).to_be_hidden()
    expect(forget).to_be_focused()
    assert tab.console.claim(memory_id)["status"] == "active"
