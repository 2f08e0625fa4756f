import { call, signIn, signOut } from "./api.js";
import { field, h } from "./dom.js";
import { problem } from "./ui.js";

// Sign in with the credential the API takes: an API key (jk_…) or a user token (ju_…, as
// `jnh auth print-token` prints it). The form is never submitted by the browser
// (form-action 'none' in the Content-Security-Policy): the credential is kept in
// sessionStorage and checked with GET /v1/caller.
export async function signInPage(view, done) {
  const input = h("input", { type: "password", name: "credential", autocomplete: "off", required: true, spellcheck: "false" });
  const status = h("div", {});
  const form = h("form", { method: "post", action: "#", novalidate: true },
    field("API key or token", input),
    h("div", { class: "actions" }, h("button", { type: "submit", text: "Sign in" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.replaceChildren();
    if (!input.value.trim()) {
      status.append(h("p", { class: "error", role: "alert", text: "Paste an API key or a token first." }));
      return;
    }
    signIn(input.value);
    input.value = "";
    try {
      await call("GET", "/v1/caller");
      done();
    } catch (err) {
      signOut();
      status.append(problem(err, "the console with this credential"));
    }
  });
  view.append(
    h("h1", { text: "Sign in" }),
    h("p", { text: "Paste the credential you give the API: an API key, or the token `jnh auth print-token` prints. It stays in this tab only and is forgotten when you sign out or close the tab." }),
    form, status);
  input.focus();
}
