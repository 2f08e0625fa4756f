// The public HTTP API, called with fetch() and the credential the person pasted.
//
// The credential lives in sessionStorage only: never in a URL, never in a cookie. Every
// call carries it in the Authorization header, which a browser never attaches on its own,
// so a page on another origin cannot make a signed-in person's browser change memory (a
// cross-origin form post arrives without the header and is refused): the state-changing
// calls are CSRF-safe by construction, with no token of their own.

const KEY = "jennah.credential";
let config = null;

// Which Cloud Function serves a path, for an API base holding {function} (deployed).
const FUNCTIONS = [
  [/^\/v1\/(agents|scopes)$/, "scopes"],
  [/\/memory:search$/, "query"],
  [/\/memories\/[^/]+:(edit|forget)$|\/memories:forgetGroup$/, "commit"],
  [/\/suppressions\/[^/]+$/, "commit"],
  [/^\/v1\/(agents|scopes)\//, "inspect"],
  [/^\/v1\/memory\/vocabulary/, "vocabulary"],
  [/^\/v1\/billing/, "usage"],
  [/^\/v1\/operations/, "operations"],
  [/^\/v1\/caller/, "admin"],
];

export class ApiError extends Error {
  constructor(code, status, message, reason) {
    super(message);
    this.code = code;
    this.status = status;
    this.reason = reason;
  }
}

export function credential() {
  return sessionStorage.getItem(KEY);
}

export function signIn(value) {
  sessionStorage.setItem(KEY, value.trim());
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

async function apiBase(path) {
  if (config === null) {
    const answer = await fetch("config.json", { credentials: "omit" });
    config = answer.ok ? await answer.json() : { apiBase: "" };
  }
  const base = (config.apiBase || "").replace(/\/$/, "");
  if (!base.includes("{function}")) return base;
  const found = FUNCTIONS.find(([pattern]) => pattern.test(path));
  return base.replace("{function}", found ? found[1] : "inspect");
}

// One call: the answer's JSON, or an ApiError with the API's code, status and message.
export async function call(method, path, { query = null, body = undefined } = {}) {
  const url = new URL((await apiBase(path)) + path, window.location.href);
  if (query) {
    for (const [name, value] of Object.entries(query)) {
      if (value !== null && value !== undefined && value !== "") url.searchParams.set(name, value);
    }
  }
  const headers = { Authorization: `Bearer ${credential() || ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let answer;
  try {
    answer = await fetch(url, {
      method, headers, credentials: "omit", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, "UNAVAILABLE", `the API could not be reached (${err.message})`, "");
  }
  const text = await answer.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch (err) {
    // Not the API's JSON (a proxy's page, say): the status and the start of what came.
    throw new ApiError(answer.status, answer.statusText, text.slice(0, 200), "");
  }
  if (!answer.ok) {
    const error = data.error || {};
    const info = (error.details || []).find((d) => d.reason) || {};
    throw new ApiError(answer.status, error.status || "", error.message || answer.statusText, info.reason || "");
  }
  return data;
}

export const scopePath = (scopeId) => `/v1/scopes/${encodeURIComponent(scopeId)}`;
export const claimPath = (scopeId, memoryId) =>
  `${scopePath(scopeId)}/memories/${encodeURIComponent(memoryId)}`;

// memory://{scopeId}/{memoryId} -> [scopeId, memoryId]
export function parseMemoryRef(ref) {
  const match = /^memory:\/\/([^/]+)\/([^/?#]+)$/.exec(ref || "");
  return match ? [match[1], match[2]] : null;
}
