// The console's router: hash routes (#/…) holding ids only, one page at a time in <main>.
import { call, credential, signOut } from "./api.js";
import { clear, h } from "./dom.js";
import { problem } from "./ui.js";
import { signInPage } from "./signin.js";
import { workspacesPage } from "./workspaces.js";
import { cardPage } from "./card.js";
import { claimPage } from "./claim.js";
import { briefPage, suppressionsPage, vocabularyPage } from "./scope.js";
import { usagePage } from "./usage.js";
import { operationsPage } from "./operations.js";

const ROUTES = [
  [/^#\/scopes\/([^/]+)$/, cardPage],
  [/^#\/scopes\/([^/]+)\/memories\/([^/]+)$/, claimPage],
  [/^#\/scopes\/([^/]+)\/brief$/, briefPage],
  [/^#\/scopes\/([^/]+)\/suppressions$/, suppressionsPage],
  [/^#\/scopes\/([^/]+)\/vocabulary$/, vocabularyPage],
  [/^#\/usage$/, usagePage],
  [/^#\/operations$/, operationsPage],
  [/^#\/?$/, workspacesPage],
];

const view = document.getElementById("view");
const nav = document.getElementById("nav");
let rendering = 0;

async function route() {
  const hash = window.location.hash || "#/";
  const turn = ++rendering;
  // Each page renders into its own box: a slow page left behind fills a detached box.
  const box = h("div", {});
  clear(view).append(box);
  delete view.dataset.ready;
  if (!credential() || hash === "#/signin") {
    nav.hidden = true;
    if (credential()) { window.location.hash = "#/"; return; }
    // Signed in: the page asked for, else the workspaces.
    await signInPage(box, () => {
      showCaller();
      if (hash === "#/signin") window.location.hash = "#/";
      else route();
    });
    return;
  }
  nav.hidden = false;
  const found = ROUTES.map(([pattern, page]) => [pattern.exec(hash), page]).find(([m]) => m);
  if (!found) {
    box.append(h("h1", { text: "Not found" }), h("p", {}, h("a", { href: "#/", text: "Back to the workspaces" })));
    return;
  }
  const [match, page] = found;
  const ids = match.slice(1).map(decodeURIComponent);
  try {
    await page(box, ...ids);
  } catch (err) {
    box.append(problem(err, "this page"));
  }
  if (turn === rendering) view.dataset.ready = "true";
}

async function showCaller() {
  const who = document.getElementById("who");
  try {
    const caller = await call("GET", "/v1/caller");
    who.textContent = `${caller.principal} (${(caller.roles || []).join(", ") || "no role"})`;
  } catch (err) {
    who.textContent = "";
  }
}

document.getElementById("signout").addEventListener("click", () => {
  signOut();
  document.getElementById("who").textContent = "";
  window.location.hash = "#/signin";
  route();
});

window.addEventListener("hashchange", () => { route(); view.focus(); });
if (credential()) showCaller();
route();
