// Recent formations (memory:form operations), their state and receipt.
import { call } from "./api.js";
import { clear, facts, h, when } from "./dom.js";
import { badge, pagedList } from "./ui.js";

function receipt(operation) {
  if (operation.error) {
    return h("p", { class: "error", text: `${operation.error.status}: ${operation.error.message}` });
  }
  const response = operation.response;
  if (!response) return h("p", { class: "meta", text: "Not finished yet." });
  const candidates = h("ul", {});
  for (const candidate of response.candidates || []) {
    candidates.append(h("li", {}, badge(candidate.decision.replace("MEMORY_DECISION_", "").toLowerCase()), candidate.text));
  }
  return h("div", {}, facts([["Committed", when(response.commitTimestamp)],
    ["Formation units", response.formationUnits], ["Input tokens", response.inputTokens],
    ["Output tokens", response.outputTokens], ["Replay", response.replay ? "yes" : ""]]),
  h("h3", { text: "Candidates" }), candidates.children.length ? candidates : h("p", { class: "meta", text: "None." }));
}

function operationItem(operation) {
  const meta = operation.metadata;
  const box = h("div", {});
  const toggle = h("button", { type: "button", class: "secondary", "aria-expanded": "false", text: "Receipt" });
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") === "true";
    clear(box);
    if (!open) box.append(receipt(operation));
    toggle.setAttribute("aria-expanded", String(!open));
  });
  return h("li", {},
    h("div", {}, badge(meta.state), h("a", { href: `#/scopes/${encodeURIComponent(meta.agentInstanceId)}`, text: meta.agentInstanceId })),
    h("div", { class: "meta", text: `${operation.name} · ${when(meta.createTime)} · by ${meta.caller} · ${meta.attempts} attempt(s)` }),
    toggle, box);
}

export async function operationsPage(view) {
  view.append(h("h1", { text: "Operations" }), h("p", { class: "meta", text: "Recent formations of the agent workspaces you reach, newest first." }));
  await pagedList(view, {
    what: "the operations", empty: "No formation yet.", render: operationItem,
    load: async (pageToken) => {
      const page = await call("GET", "/v1/operations", { query: { pageToken } });
      return { items: page.operations || [], next: page.nextPageToken };
    },
  });
}
