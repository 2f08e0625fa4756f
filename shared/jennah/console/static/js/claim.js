// One claim: front matter, body, evidence (with the conversation excerpt opened inline),
// lineage both ways, its history; edit and forget, each after a confirmation.
import { call, claimPath, parseMemoryRef, scopePath } from "./api.js";
import { clear, facts, field, h, when } from "./dom.js";
import { badge, confirmAction, notice, problem, scopeNav } from "./ui.js";
import { claimLink } from "./card.js";

export async function claimPage(view, scopeId, memoryId, message = null) {
  view.append(scopeNav(scopeId, null));
  let answer;
  try {
    answer = await call("GET", claimPath(scopeId, memoryId));
  } catch (err) {
    view.append(h("h1", { text: "Memory" }), problem(err, `memory ${memoryId}`));
    return;
  }
  const claim = answer.claim;
  view.append(
    h("h1", { text: claim.summary || claim.about || claim.id }),
    ...(message ? [notice(message)] : []),
    h("p", { class: "meta" }, badge(claim.status, claim.status), badge(claim.type),
      claim.sensitivity !== "normal" ? badge(claim.sensitivity) : null, answer.ref),
    h("h2", { text: "What is remembered" }),
    h("p", { class: "body", id: "claim-text", text: claim.text }));
  const evidence = h("section", { "aria-labelledby": "evidence-title" }, h("h2", { id: "evidence-title", text: "Evidence" }));
  view.append(evidence, lineageSection(scopeId, answer.lineage || {}), historySection(claim),
    h("h2", { text: "Front matter" }),
    facts([["About", claim.about], ["When to use", claim.whenToUse],
      ["Applies to", (claim.appliesTo || []).join(", ")], ["Type", claim.type],
      ["Status", claim.status], ["Sensitivity", claim.sensitivity], ["Authority", claim.authority],
      ["Strength", claim.strength], ["Pinned", claim.pin ? "yes" : "no"],
      ["Confidence", claim.confidence], ["Durability", claim.durability],
      ["Valid until", when(claim.validUntil)], ["Revision", claim.revision]]),
    h("details", {}, h("summary", { text: "The OKF file" }), h("pre", { text: answer.okf })));
  if (claim.status === "active") view.append(editSection(view, scopeId, claim), forgetSection(view, scopeId, claim));
  await showEvidence(evidence, scopeId, memoryId);
}

// What happened to the claim, oldest first, from its own timestamps and lineage.
function historySection(claim) {
  const events = [];
  const formed = claim.supersedes ? `formed, replacing ${claim.supersedes}` : "formed";
  events.push([claim.formedAt || claim.createdAt, formed]);
  if (claim.reinforcementCount) events.push([claim.lastReinforcedAt, `reinforced ${claim.reinforcementCount} times, last`]);
  if (claim.status !== "active") {
    const why = claim.supersededBy ? `${claim.status}, replaced by ${claim.supersededBy}` : claim.status;
    events.push([claim.invalidAt, why]);
  }
  const list = h("ol", { id: "history" });
  for (const [stamp, text] of events) list.append(h("li", { text: stamp ? `${when(stamp)}: ${text}` : text }));
  return h("section", {}, h("h2", { text: "Status history" }), list);
}

function lineageSection(scopeId, lineage) {
  const chain = (links) => {
    const list = h("ul", {});
    for (const link of links || []) {
      const ref = parseMemoryRef(link.ref) || [scopeId, link.memoryId];
      list.append(h("li", {}, claimLink(ref[0], ref[1], link.summary || link.memoryId),
        " ", badge(link.status, link.status), link.formedAt ? ` formed ${when(link.formedAt)}` : ""));
    }
    return list.children.length ? list : h("p", { class: "meta", text: "None." });
  };
  return h("section", { id: "lineage" }, h("h2", { text: "Lineage" }),
    h("h3", { text: "Replaced (older versions)" }), chain(lineage.supersedes),
    h("h3", { text: "Replaced by (newer versions)" }), chain(lineage.supersededBy));
}

async function showEvidence(section, scopeId, memoryId) {
  let lines;
  try {
    lines = (await call("GET", `${claimPath(scopeId, memoryId)}/evidence`)).evidence || [];
  } catch (err) {
    section.append(problem(err, "the evidence"));
    return;
  }
  if (!lines.length) section.append(h("p", { class: "meta", text: "No evidence recorded." }));
  const list = h("ul", { class: "card" });
  for (const line of lines) {
    const item = h("li", {}, h("blockquote", { text: line.quote }),
      h("div", { class: "meta", text: `${line.ref}${line.recordedAt ? ` · recorded ${when(line.recordedAt)}` : ""}` }));
    if (line.ref.startsWith("conv://")) item.append(excerptButton(scopeId, line.ref));
    list.append(item);
  }
  section.append(list);
}

function excerptButton(scopeId, ref) {
  const box = h("div", { class: "excerpt" });
  const button = h("button", { type: "button", class: "secondary", "aria-expanded": "false", text: "Show the conversation" });
  button.addEventListener("click", async () => {
    if (button.getAttribute("aria-expanded") === "true") {
      clear(box);
      button.setAttribute("aria-expanded", "false");
      button.textContent = "Show the conversation";
      return;
    }
    try {
      const excerpt = await call("POST", `${scopePath(scopeId)}/memory:readExcerpt`, { body: { ref } });
      for (const turn of excerpt.turns || []) {
        const role = turn.role.replace("TURN_ROLE_", "").toLowerCase().replace("_", " ");
        box.append(h("p", {}, h("strong", { text: `${turn.number} ${role}: ` }), turn.text));
      }
      button.setAttribute("aria-expanded", "true");
      button.textContent = "Hide the conversation";
    } catch (err) {
      box.append(problem(err, "the conversation excerpt"));
    }
  });
  return h("div", {}, button, box);
}

function editSection(view, scopeId, claim) {
  const text = h("textarea", { name: "text", required: true });
  text.value = claim.text;
  const summary = h("input", { type: "text", name: "summary" });
  summary.value = claim.summary || "";
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {}, field("Corrected wording", text), field("Summary (one line)", summary),
    h("div", { class: "actions" }, h("button", { type: "submit", text: "Save correction…" })), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(status);
    const sure = await confirmAction("Save this correction?",
      "Your wording becomes a new memory; this one is kept as superseded, in the lineage.", "Save");
    if (!sure) return;
    try {
      const done = await call("POST", `${claimPath(scopeId, claim.id)}:edit`,
        { body: { text: text.value, summary: summary.value || null } });
      window.location.hash = `#/scopes/${encodeURIComponent(scopeId)}/memories/${encodeURIComponent(done.memory.id)}`;
    } catch (err) {
      status.append(problem(err, "edit this memory"));
    }
  });
  return h("section", { "aria-labelledby": "edit-title" }, h("h2", { id: "edit-title", text: "Correct it" }), form);
}

function forgetSection(view, scopeId, claim) {
  const status = h("div", { "aria-live": "polite" });
  const button = h("button", { type: "button", class: "danger", text: "Forget this memory…" });
  button.addEventListener("click", async () => {
    clear(status);
    const sure = await confirmAction("Forget this memory?",
      "It is retracted for good: out of the card, the brief and search, and a suppression rule keeps it from being formed again.", "Forget");
    if (!sure) return;
    try {
      await call("POST", `${claimPath(scopeId, claim.id)}:forget`, { body: {} });
      clear(view);
      await claimPage(view, scopeId, claim.id, "Forgotten: kept as retracted.");
    } catch (err) {
      status.append(problem(err, "forget this memory"));
    }
  });
  return h("section", { "aria-labelledby": "forget-title" }, h("h2", { id: "forget-title", text: "Forget it" }), button, status);
}
