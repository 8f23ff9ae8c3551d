// The page's only way to the server: JSON over fetch, uploads, and generation streams.

/** A request that failed: `status` is the HTTP status, 0 when the server was not reached. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === "string" ? detail : detail?.message || `HTTP ${status}`);
    this.status = status;
    this.detail = detail;
  }
}

// With accounts: the session's CSRF token, sent with every write, and who is told when
// the server answers 401 (no session, or it ended).
let csrfToken = "";
let onLoggedOut = null;

export function setSession(csrf, loggedOut) {
  csrfToken = csrf || "";
  if (loggedOut) onLoggedOut = loggedOut;
}

async function request(method, path, body, { raw = false } = {}) {
  const init = { method, headers: {} };
  if (csrfToken && method !== "GET") init.headers["X-CSRF-Token"] = csrfToken;
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api${path}`, init);
  } catch (error) {
    throw new ApiError(0, error.message);
  }
  if (!response.ok) {
    let detail = null;
    try {
      detail = (await response.json()).detail;
    } catch {
      detail = response.statusText;
    }
    // FastAPI's own validation errors are a list: name the first field and its problem.
    if (Array.isArray(detail) && detail.length) {
      const first = detail[0];
      // The check that failed names a stable code, for the page to say in its language.
      detail = {
        message: first.msg,
        field: (first.loc || []).filter((part) => part !== "body").join("."),
        code: first.type ? `invalid.${first.type}` : undefined,
        params: first.ctx || {},
      };
    }
    if (response.status === 401 && onLoggedOut && path !== "/login" && path !== "/me") onLoggedOut();
    throw new ApiError(response.status, detail);
  }
  if (raw) return response;
  if (response.status === 204) return null;
  return response.json();
}

export const api = {
  get: (path) => request("GET", path),
  post: (path, body) => request("POST", path, body ?? {}),
  put: (path, body) => request("PUT", path, body),
  patch: (path, body) => request("PATCH", path, body),
  del: (path) => request("DELETE", path),
  upload: (path, form) => request("POST", path, form),
};

/**
 * Follow a task's event stream. Events replay from the start, so a page that
 * reloads mid-stream sees the whole text. Returns a function that closes it.
 */
export function followTask(taskId, onEvent) {
  const source = new EventSource(`/api/tasks/${encodeURIComponent(taskId)}/events`);
  const kinds = ["delta", "reasoning", "progress", "done", "error", "cancelled", "status"];
  let finished = false;
  for (const kind of kinds) {
    source.addEventListener(kind, (event) => {
      const data = event.data ? JSON.parse(event.data) : {};
      if (kind === "done" || kind === "error" || kind === "cancelled") {
        finished = true;
        source.close();
      }
      onEvent(kind, data);
    });
  }
  source.onerror = () => {
    // The browser reconnects on its own with Last-Event-ID. If it gives up (the task is
    // gone, e.g. the server restarted), say so once, so the page can reload its state.
    if (finished) source.close();
    else if (source.readyState === EventSource.CLOSED) {
      finished = true;
      onEvent("lost", {});
    }
  };
  return () => source.close();
}

// Chats this page has just created: their view runs the Quick Replies set to run on a new
// chat, once (kept for the tab's life, so a reload does not run them again).
const NEW_CHATS = "taverna.new-chats";

/** Note that chat `id` was just created here. */
export function markNewChat(id) {
  const ids = JSON.parse(sessionStorage.getItem(NEW_CHATS) || "[]");
  sessionStorage.setItem(NEW_CHATS, JSON.stringify([...ids, id]));
}

/** Whether chat `id` was just created here (true once; the note is then dropped). */
export function takeNewChat(id) {
  const ids = JSON.parse(sessionStorage.getItem(NEW_CHATS) || "[]");
  if (!ids.includes(id)) return false;
  sessionStorage.setItem(NEW_CHATS, JSON.stringify(ids.filter((x) => x !== id)));
  return true;
}

// The Quick Replies set to run when the app starts run once per page load.
let startedUp = false;

/** True the first time it is called in this page load. */
export function firstStart() {
  const first = !startedUp;
  startedUp = true;
  return first;
}
