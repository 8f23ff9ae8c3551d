// Element builders: every text goes in through textContent, never as HTML.

import { fieldWords } from "./field_words.js";
import { has, t, valueWords } from "./i18n.js";
import { icon } from "./icons.js";

/**
 * Build an element. `attrs` keys: class, text, on* handlers, aria-*, data-*, and
 * plain attributes/properties. Children are nodes or strings (strings become text).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = !!value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace all children of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** An icon button with an accessible name (aria-label + tooltip); `name` picks the icon. */
export function iconButton(label, name, onClick, extra = {}) {
  return h(
    "button",
    { type: "button", class: `icon ${extra.class || ""}`.trim(), "aria-label": label, title: label, onClick, ...extra.attrs },
    icon(name),
  );
}

/**
 * Open a side panel over the page in place of any with the same `id`: a modal dialog with
 * a title and a close button (Escape closes it too), then `parts`. `panel.heading` is its
 * title. `panel.write(request)` sends a write made from the panel and gives its answer, or
 * null when what the panel showed had changed meanwhile (a 409: the panel closes, and
 * `onStale()` is told).
 */
export function openDrawer({ id, title, label = title, closeId, onStale }, ...parts) {
  document.getElementById(id)?.remove();
  const heading = h("h2", { text: title });
  const panel = h("aside", { id, class: "drawer", role: "dialog", "aria-modal": "true", "aria-label": label },
    h("div", { class: "drawer-head" }, heading,
      iconButton(t("inspector.close"), "close", () => panel.remove(), { attrs: { id: closeId } })),
    ...parts);
  panel.heading = heading;
  panel.write = async (request) => {
    try {
      return await request();
    } catch (error) {
      if (error.status !== 409) throw error;
      panel.remove();
      onStale?.();
      return null;
    }
  };
  document.body.append(panel);
  panel.addEventListener("keydown", (e) => e.key === "Escape" && panel.remove());
  panel.querySelector(`#${closeId}`).focus();
  return panel;
}

/** `t(key, params)` as nodes: the values of the params in `own` (names people gave) marked
 * translate="no", as their own words. */
export function phrase(key, params, own = ["name"]) {
  const held = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, own.includes(k) ? `{${k}}` : v]));
  return t(key, held).split(/\{(\w+)\}/).map((piece, i) =>
    (i % 2 === 0 ? piece : h("span", { translate: "no", text: String(params[piece] ?? "") })));
}

/** Show a short message at the bottom of the screen (text, or nodes: a name marked as such). */
/** Toasts stand above a chat's composer (and the bars over it), never over what is typed:
 * also when the chat opens, or its composer grows, while they are shown. */
let lifting = null;

function liftAboveComposer(box) {
  const lift = () => {
    const composer = document.querySelector(".composer");
    const top = composer && composer.offsetParent ? composer.getBoundingClientRect().top : null;
    box.style.bottom = top === null ? "" : `${Math.max(16, window.innerHeight - top + 8)}px`;
  };
  lift();
  if (lifting) return;
  lifting = setInterval(() => {
    lift();
    if (!box.childElementCount) {
      clearInterval(lifting);
      lifting = null;
    }
  }, 200);
}

export function toast(message, kind = "info") {
  const box = document.getElementById("toasts");
  if (!box) return;
  const attrs = { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" };
  const item = typeof message === "string" ? h("div", { ...attrs, text: message }) : h("div", attrs, message);
  liftAboveComposer(box);
  box.append(item);
  setTimeout(() => item.remove(), kind === "info" ? 3500 : 8000);
}

/** What an import did with a loose value, in the person's language when the catalog knows
 * its code (server.<code>); else the server's English. */
export function warningText(warning) {
  const key = warning.code && `server.${warning.code}`;
  const line = lineOf(warning);
  return key && has(key) ? (line === null ? "" : t("import.at_line", { line })) + t(key, valueWords(warning.params || {})) : warning.message;
}

// A chat file's warning names its line (param `line`) where its sentence does not.
const lineOf = (warning) => (warning.params?.line !== undefined && !t(`server.${warning.code}`).includes("{line}") ? warning.params.line : null);

/** Where a warning is, before its sentence: the line first, then the field (the file's own
 * word, marked translate="no"), each named once. */
function whereNodes(warning, field) {
  const line = lineOf(warning);
  const named = field ? h("span", { translate: "no", text: field }) : null;
  const key = line === null ? (named ? "import.at_field" : null) : (named ? "import.at_line_field" : "import.at_line");
  if (!key) return [];
  return t(key, { line, field: "{field}" }).split("{field}").flatMap((piece, i) => (i ? [named, piece] : [piece]));
}

/** `warningText` as an element: the values inside the sentence (a field, a file's value)
 * marked translate="no", being the file's own words; `field`, when given, said once where
 * the warning is. */
export function warningNode(warning, attrs = {}, field = null) {
  const key = warning.code && `server.${warning.code}`;
  if (!key || !has(key)) {
    return h("span", attrs, field ? [h("span", { translate: "no", text: field }), ": "] : null, h("span", { translate: "no", text: warning.message }));
  }
  const params = warning.params || {};
  const said = valueWords(params);
  const parts = t(key, Object.fromEntries(Object.keys(params).map((name) => [name, said[name] === params[name] ? `{${name}}` : said[name]])))
    .split(/\{(\w+)\}/)
    .map((piece, i) => (i % 2 === 0 ? piece : h("span", { translate: "no", text: String(params[piece] ?? "") })));
  return h("span", attrs, whereNodes(warning, field), parts);
}

/** An import warning in plain words: the field said as a person would ("the character
 * note's depth"), what was read, and the field's path folded under "details". */
export function plainWarningNode(warning, attrs = {}) {
  const words = warning.field && fieldWords(warning.field);
  return h("span", attrs, words ? `${words}${t("import.colon")}` : null, warningNode(warning),
    warning.field ? h("details", { class: "raw-detail field-path" },
      h("summary", { text: t("import.details") }), h("code", { translate: "no", text: warning.field })) : null);
}

/** After an import: say how many values of the file were read loosely, and the first one. */
export function toastWarnings(file, warnings) {
  if (!warnings || !warnings.length) return;
  const first = warnings[0];
  const key = warnings.length === 1 ? "import.read_loosely_one" : "import.read_loosely";
  // the file's name is the person's own words, marked so
  const nodes = { file: h("span", { translate: "no", text: file }), first: plainWarningNode(first) };
  const said = t(key, { file: "{file}", n: warnings.length, first: "{first}" });
  toast(said.split(/\{(file|first)\}/).map((piece, i) => (i % 2 === 0 ? piece : nodes[piece])), "warning");
}

/** `text` with each macro it names ({{match}}, {{summary}}...) as code a person types as
 * written, marked translate="no". */
export function withMacros(text) {
  return String(text).split(/(\{\{\w+\}\})/).map((piece, i) => (i % 2 ? h("code", { translate: "no", text: piece }) : piece));
}

/** Copy text to the clipboard, with a fallback for pages served over plain http. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { value: text, "aria-hidden": "true", style: "position:fixed;left:-9999px" });
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

/** A multipart body of `fields` for an upload; files keep their folder paths. */
export function formWith(fields) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (Array.isArray(v)) v.forEach((item) => form.append(k, item, item.webkitRelativePath || item.name));
    else form.append(k, v);
  }
  return form;
}
