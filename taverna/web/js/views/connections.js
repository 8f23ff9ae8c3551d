// Connections to model APIs: add, test, pick a model, choose the default.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { explain, explainOutcome, reportError } from "../errors.js";
import { t } from "../i18n.js";
import { apiLabel } from "../labels.js";
import { fieldForm } from "../form.js";
import { profilesSection } from "./connection_profiles.js";

const APIS = ["openai", "openai-compatible", "anthropic", "google", "mistral", "koboldcpp", "llamacpp", "openai-text", "local"];
let sourcesLoaded = null;
/** The services a connection is made from by name (once a page), the gone ones left out. */
function loadSources() {
  sourcesLoaded ??= api.get("/connections/sources")
    .then((found) => found.filter((s) => !s.gone))
    .catch(() => []);
  return sourcesLoaded;
}

/** Where a generic API answers when its URL is left empty, from the sources on it (the
 * OpenAI-compatible ones: a server of one's own). */
function apiUrl(sources, name) {
  if (name === "local") return "";
  if (name === "openai-compatible") return t("connections.url_own");
  const on = name === "openai-text" ? "openai" : name;
  return sources.find((s) => s.api === on && s.url)?.url || t("connections.url_own");
}

/** A source's or an API's name as the list shows it. */
const sourceLabel = (sources, name) => sources.find((s) => s.name === name)?.label;

/**
 * The API choice as the list of sources by name, grouped Chat Completion / Text Completion,
 * then the generic APIs; each choice sets the URL placeholder and the key hint.
 */
function offerSources(form) {
  const select = form.fields.api.control;
  const url = form.fields.url.control;
  const key = form.fields.key.control;
  let sources = [];
  const hint = () => {
    const chosen = sources.find((s) => s.name === select.value);
    if (chosen) {
      url.placeholder = chosen.needs_url ? t("connections.url_own") : chosen.url;
      key.placeholder = chosen.key === "none" ? t("connections.key_optional") : chosen.key_hint;
      // a key's shape (sk-…) is no word to translate
      if (chosen.key === "none") key.removeAttribute("translate");
      else key.setAttribute("translate", "no");
    } else {
      key.removeAttribute("translate");
      url.placeholder = apiUrl(sources, select.value);
      key.placeholder = ["koboldcpp", "llamacpp", "openai-compatible"].includes(select.value) ? t("connections.key_optional") : "";
    }
  };
  select.addEventListener("change", hint);
  hint();
  loadSources().then((found) => {
    if (!found.length) return;
    sources = found;
    const current = select.value;
    const named = new Set(found.map((s) => s.name));
    const group = (family, label) => h("optgroup", { label }, found.filter((s) => s.family === family)
      .map((s) => h("option", { value: s.name, translate: "no", text: s.label })));
    mount(select,
      group("chat", t("connections.group_chat")),
      group("text", t("connections.group_text")),
      h("optgroup", { label: t("connections.group_generic") }, APIS.filter((name) => !named.has(name))
        .map((name) => h("option", { value: name, text: apiLabel(name) }))));
    select.value = current;
    hint();
  });
}

/** What a connection test that failed says: the part that failed, then why. */
function testFailure(r) {
  const message = explainOutcome(r);
  if (!r.part) return t("connections.failed", { message });
  return t("connections.failed_part", { part: t(`connections.part.${r.part}`), message });
}

/**
 * The form that adds a connection (API, URL, model, key). `first`: the first connection,
 * made the default with a name of its own; `onSaved(connection)` runs once it is stored.
 */
export function connectionForm({ id, title, first = false, onSaved }) {
  const fields = [
    ...(first ? [] : [["name", "line", { label: t("field.name"), attrs: { required: true } }]]),
    ["api", "choice", { choices: APIS.map((name) => [name, apiLabel(name)]) }],
    ["url", "line", { attrs: { type: "url" } }],
    ["model", "line", { placeholder: t("connections.model_hint") }],
    ["key", "line", { attrs: { type: "password", autocomplete: "off" } }],
    ...(first ? [] : [["default", "bool"]]),
  ];
  const form = fieldForm(fields, {}, { prefix: first ? "first" : "c", labels: "connections", box: h("form", { class: "editor", id }, h("h2", { text: title })) });
  offerSources(form);
  offerLocalModels(form.fields.model.control, `${id}-local-models`);
  form.append(h("button", { type: "submit", class: "primary", text: t("common.save") }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = form.read();
    if (first) Object.assign(body, { name: (body.model || body.api).slice(0, 60), default: true });
    let saved;
    try {
      saved = await api.post("/connections", { ...body, key: body.key || null });
    } catch (error) {
      reportError(error, t("kept.form"));
      return;
    }
    form.fields.key.control.value = "";
    toast(t("common.saved"));
    await onSaved(saved);
  });
  return form;
}

/**
 * The models folder's GGUF files, offered as the model of a local connection (a local
 * model is named by its file name there; with accounts, only an admin may list them).
 */
function offerLocalModels(input, listId) {
  const names = h("datalist", { id: listId });
  input.setAttribute("list", listId);
  input.after(names);
  api.get("/connections/local-models").then((found) => {
    for (const name of found) names.append(h("option", { value: name }));
  }).catch(() => {});
}

export async function render(root) {
  const sources = await loadSources();
  const shownApi = (c) => sourceLabel(sources, c.source) || apiLabel(c.api);
  const list = h("ul", { class: "list" });
  const form = connectionForm({ id: "connection-form", title: t("connections.add"), onSaved: () => reload() });
  let connections = [];
  const profiles = profilesSection(() => connections);
  mount(root, h("div", { class: "page-head" }, h("h1", { text: t("nav.connections") }),
    h("a", { id: "get-model", class: "button", href: "#/models", text: t("connections.get_model") })), h("div", { class: "split" }, list, form), profiles.element);

  const item = (c) => {
    const editor = connectionEditor(c, sources, reload);
    const status = h("span", { class: "muted", role: "status" });
    const models = h("select", { hidden: true, "aria-label": t("connections.pick_model") });
    models.addEventListener("change", async () => {
      await api.patch(`/connections/${encodeURIComponent(c.name)}`, { model: models.value });
      toast(t("connections.model_set", { model: models.value }));
      reload();
    });
    return h("li", { class: "connection", "data-name": c.name },
      h("div", { class: "grow" },
        h("div", { class: "strong" }, h("span", { translate: "no", text: c.name }), c.default ? ` (${t("connections.default")})` : ""),
        c.api === "local"
          ? h("div", { class: "muted clip" }, `${apiLabel(c.api)} · `, c.model ? h("span", { translate: "no", text: c.model }) : t("connections.bundled_model"),
          ` · ${t(c.offload && c.offload !== "cpu" ? "connections.on_gpu" : "connections.on_cpu")}`)
          : h("div", { class: "muted clip" }, `${shownApi(c)} · `, h("span", { translate: "no", text: `${c.url || ""} · ${c.model || "—"}` }), c.has_key ? " · 🔑" : ""),
        c.api === "local" ? h("p", { class: "local-note", text: t("connections.local_note") }) : null,
        status),
      h("div", { class: "row wrap" },
        h("button", { type: "button", class: "small", text: t("connections.test"), onClick: async () => {
          status.textContent = t("connections.testing");
          try {
            const r = await api.post(`/connections/${encodeURIComponent(c.name)}/test`);
            status.textContent = r.ok ? t("connections.ok", { ms: r.latency_ms ?? "?" }) : testFailure(r);
          } catch (error) {
            status.textContent = t("connections.failed", { message: explain(error) });
          }
        } }),
        h("button", { type: "button", class: "small", text: t("connections.models"), onClick: async () => {
          try {
            const found = await api.get(`/connections/${encodeURIComponent(c.name)}/model-sizes`);
            const shown = ({ id: m, context }) => (context ? t("connections.model_context", { model: m, tokens: context }) : m);
            mount(models, h("option", { value: "", text: t("connections.pick_model") }), found.map((m) => h("option", { value: m.id, selected: m.id === c.model ? "selected" : null, translate: m.context ? null : "no", text: shown(m) })));
            models.hidden = false;
          } catch (error) {
            status.textContent = t("connections.failed", { message: explain(error) });
          }
        } }),
        models,
        c.default ? null : h("button", { type: "button", class: "small", text: t("connections.make_default"), onClick: async () => {
          await api.patch(`/connections/${encodeURIComponent(c.name)}`, { default: true });
          reload();
        } }),
        h("button", { type: "button", class: "small edit-connection", text: t("connections.edit"), "aria-expanded": "false", onClick: (e) => {
          const open = editor.hidden;
          editor.hidden = !open;
          e.currentTarget.setAttribute("aria-expanded", String(open));
          if (open) editor.querySelector("input")?.focus();
        } }),
        h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: async () => {
          if (!confirm(t("connections.confirm_delete", { name: c.name }))) return;
          await api.del(`/connections/${encodeURIComponent(c.name)}`);
          reload();
        } })),
      editor);
  };

  const reload = async () => {
    connections = await api.get("/connections");
    mount(list, connections.length ? connections.map(item) : h("li", { class: "muted", text: t("connections.none") }));
    await profiles.reload();
  };
  await reload();
}

/** Change a connection's URL, model or key in place (an empty key keeps the stored one);
 * `reload` redraws the list once it is saved. */
function connectionEditor(c, sources, reload) {
  const fields = c.api === "local"
    ? [["model", "line", { placeholder: t("connections.model_hint") }]]
    : [
      ["url", "line", { placeholder: sources.find((s) => s.name === c.source)?.url || apiUrl(sources, c.api), attrs: { type: "url" } }],
      ["model", "line", { placeholder: t("connections.model_hint") }],
      ["key", "line", { placeholder: c.has_key ? t("connections.key_kept") : "", attrs: { type: "password", autocomplete: "off" } }],
    ];
  // Claude (and Claude through OpenRouter) caches the prompt up to the breakpoints asked for
  const caches = c.api === "anthropic" || c.source === "openrouter";
  if (caches) fields.push(["cache_system_prompt", "bool"], ["caching_at_depth", "number", { empty: -1, attrs: { min: "-1", step: "1" } }]);
  const safe = c.name.replace(/[^A-Za-z0-9_-]/g, "_");
  const form = fieldForm(fields, { url: c.url || "", model: c.model || "", cache_system_prompt: c.cache_system_prompt, caching_at_depth: c.caching_at_depth }, {
    prefix: `edit-${safe}`,
    labels: "connections",
    box: h("form", { class: "editor connection-editor", hidden: true, "aria-label": t("connections.edit_named", { name: c.name }) }),
  });
  if (c.api === "local") offerLocalModels(form.fields.model.control, `edit-${safe}-local-models`);
  form.append(h("div", { class: "row" },
    h("button", { type: "submit", class: "primary small", text: t("common.save") }),
    h("button", { type: "button", class: "small", text: t("chat.cancel"), onClick: () => {
      form.hidden = true;
    } })));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = form.read();
    const change = { model: body.model ?? "" };
    if (c.api !== "local") change.url = body.url ?? "";
    if (body.key) change.key = body.key;
    if (caches) Object.assign(change, { cache_system_prompt: body.cache_system_prompt, caching_at_depth: body.caching_at_depth });
    try {
      await api.patch(`/connections/${encodeURIComponent(c.name)}`, change);
    } catch (error) {
      reportError(error, t("kept.form"));
      return;
    }
    toast(t("common.saved"));
    reload();
  });
  return form;
}
