// A scope's brief (full and shared), suppression rules and vocabulary.
import { call, scopePath } from "./api.js";
import { append, clear, h, when } from "./dom.js";
import { confirmAction, notice, pagedList, problem, scopeNav } from "./ui.js";

// The brief exactly as the agent receives it; "shared" is the household variant.
export async function briefPage(view, scopeId) {
  view.append(h("h1", { text: `Brief of ${scopeId}` }), scopeNav(scopeId, "Brief"));
  const box = h("div", { id: "brief" });
  const full = h("button", { type: "button", "aria-pressed": "true", text: "Full" });
  const shared = h("button", { type: "button", class: "secondary", "aria-pressed": "false", text: "Shared (household)" });
  const show = async (variant) => {
    full.setAttribute("aria-pressed", String(variant === "full"));
    shared.setAttribute("aria-pressed", String(variant === "shared"));
    full.className = variant === "full" ? "" : "secondary";
    shared.className = variant === "shared" ? "" : "secondary";
    clear(box);
    try {
      const brief = await call("GET", `${scopePath(scopeId)}/memory/brief`, { query: { variant } });
      box.append(h("p", { class: "meta", text: `${brief.tokenCount} tokens (${variant} variant)` }),
        h("pre", { id: "brief-text", text: brief.brief }));
    } catch (err) {
      box.append(problem(err, "the brief"));
    }
  };
  full.addEventListener("click", () => show("full"));
  shared.addEventListener("click", () => show("shared"));
  view.append(h("div", { class: "tabs", role: "group", "aria-label": "Variant" }, full, shared), box);
  await show("full");
}

// Suppression rules: what was forgotten and is kept from being formed again; removing one
// lets the fact be formed again (the forgotten claim stays retracted).
export async function suppressionsPage(view, scopeId) {
  view.append(h("h1", { text: `Suppression rules of ${scopeId}` }), scopeNav(scopeId, "Suppressions"));
  const status = h("div", { "aria-live": "polite" });
  view.append(status);
  const render = (rule) => {
    const remove = h("button", { type: "button", class: "secondary", text: "Remove…" });
    const item = h("li", {}, h("p", { class: "body", text: rule.text }),
      h("div", { class: "meta", text: [rule.about && `about ${rule.about}`, `forgotten ${when(rule.createdAt)}`,
        rule.createdBy && `by ${rule.createdBy}`, rule.id].filter(Boolean).join(" · ") }), remove);
    remove.addEventListener("click", async () => {
      clear(status);
      const sure = await confirmAction("Remove this rule?", "The fact may be formed again from a later conversation.", "Remove");
      if (!sure) return;
      try {
        await call("DELETE", `${scopePath(scopeId)}/suppressions/${encodeURIComponent(rule.id)}`);
        item.remove();
        status.append(notice("Rule removed."));
      } catch (err) {
        status.append(problem(err, "remove this rule"));
      }
    });
    return item;
  };
  await pagedList(view, {
    what: "the suppression rules", empty: "No suppression rule.", render,
    load: async (pageToken) => {
      const page = await call("GET", `${scopePath(scopeId)}/suppressions`, { query: { pageToken } });
      return { items: page.suppressions || [], next: page.nextPageToken };
    },
  });
}

function vocabularyTables(vocabulary) {
  const classes = h("ul", {});
  for (const entity of vocabulary.entityClasses || []) {
    classes.append(h("li", {}, h("strong", { text: entity.name }), entity.description ? ` — ${entity.description}` : ""));
  }
  const relations = h("ul", {});
  for (const relation of vocabulary.relationTypes || []) {
    const signatures = (relation.signatures || []).map((s) => `${s.sourceClass} → ${s.targetClass}`).join(", ");
    relations.append(h("li", {}, h("strong", { text: relation.name }),
      relation.description ? ` — ${relation.description}` : "", signatures ? ` (${signatures})` : ""));
  }
  return [h("h3", { text: "Entity classes" }), classes.children.length ? classes : h("p", { class: "meta", text: "None." }),
    h("h3", { text: "Relation types" }), relations.children.length ? relations : h("p", { class: "meta", text: "None." })];
}

// Read-only: what this scope declares, and what formation resolves here.
export async function vocabularyPage(view, scopeId) {
  view.append(h("h1", { text: `Vocabulary of ${scopeId}` }), scopeNav(scopeId, "Vocabulary"));
  try {
    const answer = await call("GET", "/v1/memory/vocabulary", { query: { scopeId } });
    append(view, [h("h2", { text: "Declared for this scope" }),
      answer.declaration ? vocabularyTables(answer.declaration)
        : h("p", { class: "meta", text: "Nothing declared here: the scope inherits the enterprise's vocabulary." }),
      h("h2", { text: "Resolved (what formation uses here)" }),
      answer.resolved ? vocabularyTables(answer.resolved) : h("p", { class: "meta", text: "Nothing resolved." })]);
  } catch (err) {
    view.append(problem(err, "the vocabulary"));
  }
}
