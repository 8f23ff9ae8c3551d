// Accounts (admins only): every account with what it uses of its quotas and whether its
// name is locked out after failed logins; add an account, reset a password, set quotas,
// unlock, disable or delete; the client addresses with failed logins, each unlocked
// apart; import a SillyTavern install's user folders from the server.

import { api, followTask } from "../api.js";
import { h, mount, phrase, toast } from "../dom.js";
import { explain, reportError, serverText } from "../errors.js";
import { has, t } from "../i18n.js";
import { me } from "../session.js";
import { reportNode } from "./import.js";

const MB = 1000 * 1000;

/** A size in bytes as people read it (kB, MB, GB: powers of 1000, as the quota field). */
export function size(bytes) {
  if (bytes < 1000) return t("accounts.bytes", { n: bytes });
  const [unit, div] = bytes < MB ? ["kB", 1000] : bytes < 1000 * MB ? ["MB", MB] : ["GB", 1000 * MB];
  return `${(bytes / div).toLocaleString(undefined, { maximumFractionDigits: 1 })} ${unit}`;
}

/** "used of limit" (or "used, no limit") for storage or generations. */
export function usage(used, limit, show = String) {
  return limit === null || limit === undefined
    ? t("accounts.used_no_limit", { used: show(used) })
    : t("accounts.used_of", { used: show(used), limit: show(limit) });
}

const minutes = (seconds) => Math.max(1, Math.ceil(seconds / 60));

/** `text` naming the file and field `detail` is about, where it does not already. */
function placed(text, detail) {
  const where = [detail?.file, detail?.field].filter((part) => part && !text.includes(part));
  return where.length ? `${text} (${where.join(", ")})` : text;
}

/** A failure the server told in an import's error event: in the person's language when the
 * catalog knows its code, always naming the file and field it is about. */
function eventError(data) {
  const said = serverText(data.code, data.params || {});
  return said ? placed(said, data) : data.message || t("error.generation");
}

export async function render(root) {
  const who = me();
  if (!who || !who.admin) {
    mount(root, h("p", { class: "error", role: "alert", text: t("server.only_admin_may_do_this") }));
    return null;
  }
  const list = h("ul", { class: "list accounts", id: "account-list", "aria-label": t("nav.accounts") });
  const addresses = h("ul", { class: "list address-lockouts", id: "address-lockouts", "aria-label": t("accounts.addresses") });
  let close = null;
  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.accounts") }),
      h("button", { type: "button", id: "accounts-refresh", text: t("accounts.refresh"), onClick: () => reload() })),
    h("p", { class: "muted", text: t("accounts.lockout_help") }),
    h("div", { class: "split" },
      h("div", {}, list,
        h("section", { class: "panel", id: "address-lockouts-panel" },
          h("h2", { text: t("accounts.addresses") }),
          h("p", { class: "muted", text: t("accounts.addresses_help") }),
          addresses)),
      h("div", {}, addForm(act), importPanel((stop) => { close = stop; }))));

  async function reload() {
    let users;
    try {
      users = await api.get("/users");
    } catch (error) {
      mount(list, h("li", { class: "error", role: "alert", text: explain(error) }));
      return;
    }
    mount(list, users.map((user) => accountItem(user, who, act)));
    let failing;
    try {
      failing = await api.get("/address-lockouts");
    } catch (error) {
      mount(addresses, h("li", { class: "error", role: "alert", text: explain(error) }));
      return;
    }
    mount(addresses, failing.length ? failing.map(addressItem) : h("li", { class: "muted", text: t("accounts.addresses_none") }));
  }

  /** A client address with failed logins: how many, whether it is locked out, and a
   * button that forgets them. */
  function addressItem(entry) {
    const locked = entry.locked_seconds > 0;
    return h("li", { class: "account-row", "data-address": entry.address },
      h("div", { class: "grow" },
        h("div", { class: "row wrap" }, h("span", { class: "strong", translate: "no", text: entry.address }),
          locked ? h("span", { class: "badge warn", text: t("accounts.locked", { minutes: minutes(entry.locked_seconds) }) }) : null),
        h("div", { class: "muted", text: t("accounts.address_failures", { n: entry.failures }) })),
      h("div", { class: "row wrap actions-row" },
        h("button", { type: "button", class: "small unlock-address", text: t("accounts.unlock"), onClick: () =>
          act(() => api.del(`/address-lockouts/${encodeURIComponent(entry.address)}`), phrase("accounts.address_unlocked", { address: entry.address }, ["address"])) })));
  }

  /** Run an admin's write; on success redraw the list and say `done`. */
  async function act(work, done) {
    try {
      const answer = await work();
      if (done) toast(typeof done === "function" ? done(answer) : done);
    } catch (error) {
      reportError(error, t("kept.form"));
      return false;
    }
    await reload();
    return true;
  }

  await reload();
  return () => close && close();
}

/** An account's row: its badges and usage, and the admin's buttons on it (`act` runs one). */
function accountItem(user, who, act) {
  const path = `/users/${encodeURIComponent(user.name)}`;
  const own = user.name === who.name;
  const safe = user.name.replace(/[^A-Za-z0-9_-]/g, "_");
  const badges = [
    user.admin ? h("span", { class: "badge", text: t("accounts.admin") }) : null,
    own ? h("span", { class: "badge", text: t("accounts.you") }) : null,
    user.disabled ? h("span", { class: "badge warn", text: t("accounts.disabled") }) : null,
    user.locked_seconds > 0 ? h("span", { class: "badge warn", text: t("accounts.locked", { minutes: minutes(user.locked_seconds) }) }) : null,
  ];
  const password = h("input", { type: "password", id: `password-${safe}`, autocomplete: "new-password", minlength: 8, required: true });
  const passwordForm = h("form", { class: "editor inline-form", hidden: true, "aria-label": t("accounts.reset_named", { name: user.name }) },
    h("label", { class: "field", for: `password-${safe}` }, h("span", { text: t("accounts.new_password") }), password),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", text: t("accounts.set_password") })));
  passwordForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    await act(() => api.put(`${path}/password`, { password: password.value }), phrase("accounts.password_reset", { name: user.name }));
  });
  const storage = h("input", { type: "number", id: `storage-${safe}`, min: 0, step: "any", value: user.storage_bytes === null ? "" : String(user.storage_bytes / MB), placeholder: t("accounts.no_limit") });
  const hourly = h("input", { type: "number", id: `hourly-${safe}`, min: 0, step: 1, value: user.generations_per_hour === null ? "" : String(user.generations_per_hour), placeholder: t("accounts.no_limit") });
  const quotaForm = h("form", { class: "editor inline-form", hidden: true, "aria-label": t("accounts.quota_named", { name: user.name }) },
    h("label", { class: "field", for: `storage-${safe}` }, h("span", { text: t("accounts.storage_mb") }), storage),
    h("label", { class: "field", for: `hourly-${safe}` }, h("span", { text: t("accounts.generations_hour") }), hourly),
    h("p", { class: "muted", text: t("accounts.empty_no_limit") }),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", text: t("common.save") })));
  quotaForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = {
      storage_bytes: storage.value === "" ? null : Math.round(Number(storage.value) * MB),
      generations_per_hour: hourly.value === "" ? null : Math.round(Number(hourly.value)),
    };
    await act(() => api.put(`${path}/quota`, body), phrase("accounts.quota_set", { name: user.name }));
  });
  const toggle = (form) => (e) => {
    const open = form.hidden;
    for (const other of [passwordForm, quotaForm]) other.hidden = true;
    form.hidden = !open;
    e.currentTarget.setAttribute("aria-expanded", String(open));
    if (open) form.querySelector("input")?.focus();
  };
  return h("li", { class: "account-row", "data-name": user.name },
    h("div", { class: "grow" },
      h("div", { class: "row wrap" }, h("span", { class: "strong", translate: "no", text: user.name }), badges),
      h("div", { class: "muted" }, t("accounts.storage"), " ", usage(user.used_bytes, user.storage_bytes, size)),
      h("div", { class: "muted" }, t("accounts.generations"), " ", usage(user.generations_last_hour, user.generations_per_hour))),
    h("div", { class: "row wrap actions-row" },
      h("button", { type: "button", class: "small reset-password", "aria-expanded": "false", text: t("accounts.reset_password"), onClick: toggle(passwordForm) }),
      h("button", { type: "button", class: "small set-quota", "aria-expanded": "false", text: t("accounts.quotas"), onClick: toggle(quotaForm) }),
      user.locked_seconds > 0 ? h("button", { type: "button", class: "small unlock", text: t("accounts.unlock"), onClick: () =>
        act(() => api.del(`${path}/lockout`), phrase("accounts.unlocked", { name: user.name })) }) : null,
      own ? null : h("button", { type: "button", class: "small toggle-disabled", text: t(user.disabled ? "accounts.enable" : "accounts.disable"), onClick: () => {
        if (!user.disabled && !confirm(t("accounts.confirm_disable", { name: user.name }))) return;
        act(() => api.put(`${path}/disabled`, { disabled: !user.disabled }), phrase(user.disabled ? "accounts.enabled_done" : "accounts.disabled_done", { name: user.name }));
      } }),
      own ? null : h("button", { type: "button", class: "small danger delete-account", text: t("common.delete"), onClick: () => {
        if (!confirm(t("accounts.confirm_delete", { name: user.name }))) return;
        act(() => api.del(path), (gone) => phrase("accounts.deleted", { name: gone.name, chats: gone.chats, documents: gone.documents }));
      } })),
    passwordForm, quotaForm);
}

/** The form that adds an account (`act` runs the write). */
function addForm(act) {
  const name = h("input", { type: "text", id: "new-account-name", autocomplete: "off", maxlength: 64, required: true });
  const password = h("input", { type: "password", id: "new-account-password", autocomplete: "new-password", minlength: 8, required: true });
  const admin = h("input", { type: "checkbox", id: "new-account-admin" });
  const empty = h("input", { type: "checkbox", id: "new-account-empty" });
  const form = h("form", { class: "editor panel", id: "new-account-form" },
    h("h2", { text: t("accounts.add") }),
    h("label", { class: "field", for: "new-account-name" }, h("span", { text: t("login.name") }), name),
    h("label", { class: "field", for: "new-account-password" }, h("span", { text: t("login.password") }), password),
    h("label", { class: "check", for: "new-account-admin" }, admin, h("span", { text: t("accounts.admin_check") })),
    h("label", { class: "check", for: "new-account-empty" }, empty, h("span", { text: t("accounts.empty_check") })),
    h("button", { type: "submit", class: "primary", text: t("accounts.add_button") }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim(), password: password.value, admin: admin.checked, empty: empty.checked };
    const added = await act(() => api.post("/users", body), phrase("accounts.added", { name: body.name }));
    if (added) form.reset();
  });
  return form;
}

/** Import a SillyTavern install's user folders from a path on the server machine, with
 * progress, then what went into which account. `following(stop)` is given the function
 * that stops following it. */
function importPanel(following) {
  // what the admin types are their own words: a path and account names
  const path = h("input", { type: "text", id: "st-server-path", autocomplete: "off", translate: "no", placeholder: "/srv/SillyTavern", required: true });
  const mapping = h("textarea", { id: "st-server-mapping", rows: 2, translate: "no", placeholder: "default-user=alice" });
  const bar = h("progress", { max: 1, value: 0, "aria-label": t("import.progress") });
  const status = h("p", { class: "muted", role: "status", id: "st-server-status" });
  const summary = h("div", { class: "report", id: "st-server-summary" });
  const start = h("button", { type: "submit", class: "primary", id: "st-server-import", text: t("common.import") });
  const form = h("form", { class: "editor panel", id: "st-server-form" },
    h("h2", { text: t("accounts.import_title") }),
    h("p", { class: "muted", text: t("accounts.import_help") }),
    h("label", { class: "field", for: "st-server-path" }, h("span", { text: t("accounts.import_path") }), path),
    h("label", { class: "field", for: "st-server-mapping" }, h("span", { text: t("accounts.import_mapping") }), mapping),
    start, bar, status, summary);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const accounts = {};
    for (const line of mapping.value.split("\n").map((s) => s.trim()).filter(Boolean)) {
      const [handle, ...rest] = line.split("=");
      if (!rest.length || !handle.trim() || !rest.join("=").trim()) {
        status.textContent = serverText("expected_handle_account_got", { pair: line }) || line;
        return;
      }
      accounts[handle.trim()] = rest.join("=").trim();
    }
    mount(summary);
    bar.removeAttribute("value");
    status.textContent = t("accounts.import_starting");
    start.disabled = true;
    let started;
    try {
      started = await api.post("/users/import", { path: path.value.trim(), accounts });
    } catch (error) {
      start.disabled = false;
      bar.value = 0;
      const detail = error.detail && typeof error.detail === "object" ? error.detail : {};
      status.textContent = `${placed(explain(error), detail)} ${t("kept.nothing_stored")}`;
      return;
    }
    following(followTask(started.task.id, (kind, data) => {
      if (kind === "progress") {
        const folder = { folder: data.folder, n: (data.folder_index ?? 0) + 1, count: data.folders ?? started.folders.length };
        if (data.total) {
          bar.max = data.total;
          bar.value = data.done || 0;
          status.textContent = t("accounts.import_progress", { ...folder, done: data.done ?? 0, total: data.total, item: data.item || "" });
        } else status.textContent = t("accounts.import_folder", folder);
      } else if (kind === "done") {
        start.disabled = false;
        bar.max = 1;
        bar.value = 1;
        status.textContent = t("import.finished");
        showSummary(data.folders || []);
      } else if (kind === "error" || kind === "lost") {
        start.disabled = false;
        bar.value = 0;
        status.textContent = kind === "lost" ? t("error.network") : eventError(data);
      }
    }));
  });

  function showSummary(folders) {
    mount(summary, folders.map((f) => {
      const head = f.report
        ? h("h3", {}, phrase("accounts.import_into", { handle: f.handle, account: f.account }, ["handle", "account"]))
        : h("h3", {}, h("span", { translate: "no", text: f.handle }), t("import.colon"), t("accounts.import_skipped"));
      // why, in the person's language, the names in it marked as names
      const key = f.skipped?.code && `server.${f.skipped.code}`;
      const why = f.skipped
        ? h("p", { class: "muted" }, key && has(key) ? phrase(key, f.skipped.params || {}, ["name", "handle"]) : h("span", { translate: "no", text: f.skipped.reason }))
        : null;
      return h("section", { class: "user-folder", "data-handle": f.handle }, head, why, f.report ? reportNode(f.report) : null);
    }));
  }
  return form;
}
