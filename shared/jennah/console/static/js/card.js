// The memory card: a scope's claims, newest first, page by page, with filters, a search
// box (memory:search) and group forget (:forgetGroup, validateOnly first).
import { call, claimPath, parseMemoryRef, scopePath } from "./api.js";
import { clear, field, h, select } from "./dom.js";
import { badge, confirmAction, notice, pagedList, problem, scopeNav } from "./ui.js";

const TYPES = ["", "identity", "directive", "preference", "fact", "constraint", "relationship"];
const STATUSES = ["", "active", "dormant", "expired", "superseded", "retracted"];
const SENSITIVITIES = ["", "normal", "health", "finances", "minors"];

export function claimLink(scopeId, memoryId, text) {
  return h("a", { class: "summary", href: `#/scopes/${encodeURIComponent(scopeId)}/memories/${encodeURIComponent(memoryId)}`, text });
}

function cardItem(scopeId, item) {
  return h("li", { "data-memory-id": item.memoryId },
    claimLink(scopeId, item.memoryId, item.summary || item.about || item.memoryId),
    item.about ? h("div", { class: "meta", text: `About: ${item.about}` }) : null,
    h("div", { class: "meta" },
      badge(item.type), badge(item.status, item.status),
      item.sensitivity !== "normal" ? badge(item.sensitivity) : null,
      (item.appliesTo || []).length ? ` concerns ${item.appliesTo.join(", ")} · ` : " ",
      `remembered ${item.age}`));
}

function filterOf(form) {
  const data = new FormData(form);
  const terms = [];
  for (const name of ["status", "type", "sensitivity", "appliesTo"]) {
    const value = String(data.get(name) || "").trim();
    if (value) terms.push(`${name} = ${JSON.stringify(value)}`);
  }
  return terms.join(" AND ");
}

export async function cardPage(view, scopeId) {
  view.append(h("h1", { text: `Memory of ${scopeId}` }), scopeNav(scopeId, "Memory card"));
  let show = () => undefined;
  view.append(searchSection(scopeId));

  const filters = h("form", { class: "row", "aria-label": "Filter the card" },
    field("Type", select("type", TYPES)), field("Status", select("status", STATUSES)),
    field("Sensitivity", select("sensitivity", SENSITIVITIES)),
    field("Applies to (node id)", h("input", { name: "appliesTo", type: "text" })),
    h("div", {}, h("button", { type: "submit", text: "Apply filters" })));
  const cardBox = h("div", { id: "card" });
  const section = h("section", { "aria-labelledby": "card-title" },
    h("h2", { id: "card-title", text: "Memory card (newest first)" }), filters, cardBox);
  view.append(section, groupForgetSection(scopeId, () => show()));
  show = () => {
    clear(cardBox);
    const filter = filterOf(filters);
    return pagedList(cardBox, {
      what: "the memory card", empty: "No memory matches.",
      render: (item) => cardItem(scopeId, item),
      load: async (pageToken) => {
        const page = await call("GET", `${scopePath(scopeId)}/memories`, { query: { pageToken, filter, pageSize: 20 } });
        return { items: page.memories || [], next: page.nextPageToken };
      },
    });
  };
  filters.addEventListener("submit", (event) => { event.preventDefault(); show(); });
  await show();
}

function searchSection(scopeId) {
  const input = h("input", { type: "search", name: "query", required: true });
  const results = h("div", { id: "search-results", "aria-live": "polite" });
  const form = h("form", { class: "row", role: "search" },
    field("Search memory", input), h("div", {}, h("button", { type: "submit", text: "Search" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(results);
    if (!input.value.trim()) return;
    try {
      const found = await call("POST", `${scopePath(scopeId)}/memory:search`, { body: { query: input.value, maxItems: 10 } });
      const list = h("ul", { class: "card" });
      for (const candidate of found.candidates || []) {
        const ref = parseMemoryRef(candidate.ref);
        list.append(h("li", {},
          ref ? claimLink(ref[0], ref[1], candidate.summary) : h("span", { text: candidate.summary }),
          h("div", { class: "meta" }, badge(candidate.type), `remembered ${candidate.age}`)));
      }
      results.append(list.children.length ? list : h("p", { class: "meta", text: "Nothing found." }));
    } catch (err) {
      results.append(problem(err, "search"));
    }
  });
  return h("section", { "aria-labelledby": "search-title" }, h("h2", { id: "search-title", text: "Search" }), form, results);
}

// Forget a group: count it first (validateOnly), show the count, then forget exactly that
// many (expectedCount): if the group changed in between, the API refuses.
function groupForgetSection(scopeId, changed) {
  const by = select("by", [["about", "about (topic)"], ["appliesTo", "applies to (node id)"], ["type", "type"]]);
  const value = h("input", { type: "text", name: "value", required: true });
  const status = h("div", { id: "group-status", "aria-live": "polite" });
  const form = h("form", { class: "row" }, field("Forget everything by", by), field("Value", value),
    h("div", {}, h("button", { type: "submit", class: "danger", text: "Count and forget…" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(status);
    const selector = { [by.value]: value.value.trim() };
    if (!value.value.trim()) return;
    const path = `${scopePath(scopeId)}/memories:forgetGroup`;
    try {
      const counted = await call("POST", path, { body: { ...selector, validateOnly: true } });
      status.append(h("p", { id: "group-count", text: `${counted.count} memories match.` }));
      if (!counted.count) return;
      const sure = await confirmAction("Forget this group?",
        `This forgets ${counted.count} memories of ${scopeId} for good (they are kept as retracted, and a suppression rule keeps each from being formed again).`,
        `Forget ${counted.count}`);
      if (!sure) return;
      const done = await call("POST", path, { body: { ...selector, expectedCount: counted.count } });
      status.append(notice(`Forgot ${done.count} memories.`));
      changed();
    } catch (err) {
      status.append(problem(err, "forget this group"));
    }
  });
  return h("section", { "aria-labelledby": "group-title" },
    h("h2", { id: "group-title", text: "Forget a group" }), form, status);
}

export { claimPath };
