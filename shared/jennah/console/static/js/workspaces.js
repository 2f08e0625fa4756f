import { call } from "./api.js";
import { h, when } from "./dom.js";
import { pagedList } from "./ui.js";

function scopeItem(scope) {
  return h("li", {},
    h("a", { class: "summary", href: `#/scopes/${encodeURIComponent(scope.scopeId)}`, text: scope.scopeId }),
    h("div", { class: "meta", text: [scope.kind === "AGENT" ? "agent workspace" : "subject scope",
      scope.createTime ? `created ${when(scope.createTime)}` : "", scope.createdBy ? `by ${scope.createdBy}` : ""]
      .filter(Boolean).join(" · ") }));
}

// The agent workspaces and the subject scopes the caller reaches.
export async function workspacesPage(view) {
  view.append(h("h1", { text: "Workspaces" }));
  const agents = h("section", { "aria-labelledby": "agents-title" }, h("h2", { id: "agents-title", text: "Agent workspaces" }));
  const subjects = h("section", { "aria-labelledby": "subjects-title" }, h("h2", { id: "subjects-title", text: "Subject scopes" }));
  view.append(agents, subjects);
  await Promise.all([
    pagedList(agents, {
      what: "the agent workspaces", empty: "No agent workspace yet.", render: scopeItem,
      load: async (pageToken) => {
        const page = await call("GET", "/v1/agents", { query: { pageToken } });
        return { items: page.agents || [], next: page.nextPageToken };
      },
    }),
    pagedList(subjects, {
      what: "the subject scopes", empty: "No subject scope yet.", render: scopeItem,
      load: async (pageToken) => {
        const page = await call("GET", "/v1/scopes", { query: { pageToken, kind: "SUBJECT" } });
        return { items: page.scopes || [], next: page.nextPageToken };
      },
    }),
  ]);
}
