// Shared pieces of the pages: the API's refusals as sentences, the confirmation dialog,
// and "Next" paging.
import { ApiError } from "./api.js";
import { h, clear } from "./dom.js";

// The API's answer, as the API gave it: the console hides no rule. A 403 reads
// "You don't have access to <what>: <the API's message>".
export function problem(err, what) {
  if (err instanceof ApiError && err.code === 403) {
    return h("p", { class: "error", role: "alert", text: `You don't have access to ${what}: ${err.message}` });
  }
  if (err instanceof ApiError && err.code === 401) {
    return h("p", { class: "error", role: "alert", text: `Your credential was refused: ${err.message} Sign out and sign in again.` });
  }
  const message = err instanceof ApiError ? `${err.status || err.code}: ${err.message}` : String(err);
  return h("p", { class: "error", role: "alert", text: `Could not load ${what}. ${message}` });
}

export function notice(text) {
  return h("p", { class: "notice", role: "status", text });
}

// Ask before a change. Resolves true on Confirm; focus goes back where it was.
export function confirmAction(title, text, okLabel = "Confirm") {
  const dialog = document.getElementById("confirm");
  const ok = document.getElementById("confirm-ok");
  const cancel = document.getElementById("confirm-cancel");
  const opener = document.activeElement;
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  ok.textContent = okLabel;
  return new Promise((resolve) => {
    const finish = (answer) => {
      ok.removeEventListener("click", yes);
      cancel.removeEventListener("click", no);
      dialog.removeEventListener("cancel", no);
      if (dialog.open) dialog.close();
      if (opener && opener.isConnected) opener.focus();
      resolve(answer);
    };
    const yes = () => finish(true);
    const no = (event) => { if (event) event.preventDefault(); finish(false); };
    ok.addEventListener("click", yes);
    cancel.addEventListener("click", no);
    dialog.addEventListener("cancel", no);
    dialog.showModal();
    cancel.focus();
  });
}

// A paged list: `load(pageToken)` answers {items, next}; `render(item)` one <li>.
// Items of every page stay; "Next" asks for the following page.
export function pagedList(container, { load, render, empty, what, listClass = "card" }) {
  const list = h("ul", { class: listClass });
  const status = h("div", {});
  const more = h("button", { type: "button", class: "secondary", text: "Next" });
  let token = "";
  async function page() {
    more.disabled = true;
    clear(status);
    try {
      const { items, next } = await load(token);
      for (const item of items) list.append(render(item));
      token = next || "";
      more.hidden = !token;
      if (!list.children.length) status.append(h("p", { class: "meta", text: empty }));
    } catch (err) {
      status.append(problem(err, what));
      more.hidden = true;
    }
    more.disabled = false;
  }
  more.addEventListener("click", page);
  more.hidden = true;
  container.append(list, status, more);
  return page();
}

export function badge(text, extra = "") {
  return h("span", { class: `badge ${extra}`.trim(), text });
}

// The links between one scope's pages.
export function scopeNav(scopeId, current) {
  const base = `#/scopes/${encodeURIComponent(scopeId)}`;
  const pages = [["Memory card", base], ["Brief", `${base}/brief`],
    ["Suppressions", `${base}/suppressions`], ["Vocabulary", `${base}/vocabulary`]];
  return h("nav", { class: "tabs", "aria-label": `Pages of ${scopeId}` },
    pages.map(([text, href]) => h("a", { href, text, "aria-current": text === current ? "page" : null })));
}
