// The prompt inspector: the prompt as sent, the ledger of its parts, and the lorebook trace.

import { api } from "../api.js";
import { h, mount, openDrawer } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";

/** A message's source as a person reads it: a chat message by its number and speaker. */
function sourceLabel(source, labels) {
  const id = source.split(/:(.*)/s)[1];
  return (id && labels[id]) || labels[source] || source;
}

function promptView(prompt, labels) {
  if (prompt.kind === "text") {
    return h("pre", { class: "prompt-text", text: prompt.text });
  }
  return h("ol", { class: "prompt-messages" }, (prompt.messages || []).map((m) =>
    h("li", { class: `pm role-${m.role}`, "data-source": m.source || "" },
      h("div", { class: "pm-head" }, h("span", { class: "role", text: m.role }), m.name ? h("span", { class: "pm-name", text: m.name }) : null,
        m.source ? h("span", { class: "pm-source", text: sourceLabel(m.source, labels), title: m.source }) : null),
      h("pre", { class: "pm-content", text: m.content })),
  ));
}

/** The user regexes (lorebook regex keys, regex scripts) a time limit stopped this turn:
 * what they are, where they come from, and what followed (no match, text left as it was). */
function skippedRegexView(notes) {
  if (!notes || !notes.length) return null;
  const cols = ["kind", "source", "pattern", "count", "reason"];
  return h("section", { class: "regex-skipped", role: "status" },
    h("p", { class: "error", text: t("inspector.regex_skipped", { n: notes.length }) }),
    h("div", { class: "table-wrap" }, h("table", { class: "trace" },
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", text: t(`inspector.regex_${c}`) })))),
      h("tbody", {}, notes.map((note) => h("tr", {}, cols.map((c) =>
        h("td", { "data-label": t(`inspector.regex_${c}`), class: c === "pattern" ? "src" : "", text: String(note[c] ?? "") }))))))));
}

// A message id inside a source (a summary names the message it belongs to) reads as the message.
const MESSAGE_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const readable = (source, labels) => labels[source] || source.replace(MESSAGE_ID, (id) => labels[id] || id);

function ledgerView(ledger, labels) {
  const items = ledger.items || [];
  return h("div", {},
    h("p", { class: "muted", text: t("inspector.totals", { total: ledger.total_tokens ?? 0, budget: ledger.budget ?? 0 }) }),
    skippedRegexView(ledger.skipped_regexes),
    h("div", { class: "table-wrap" }, h("table", { class: "ledger" },
      h("thead", {}, h("tr", {}, [t("inspector.part"), t("inspector.source"), t("inspector.tokens"), t("inspector.status")].map((c) => h("th", { scope: "col", text: c })))),
      h("tbody", {}, items.map((item) =>
        h("tr", { class: item.included ? "in" : "cut" },
          h("td", { "data-label": t("inspector.part"), text: item.kind }),
          h("td", { "data-label": t("inspector.source"), class: "src", text: readable(item.source, labels), title: item.source }),
          h("td", { "data-label": t("inspector.tokens"), class: "num", text: String(item.tokens) }),
          h("td", { "data-label": t("inspector.status"), text: item.included ? (item.reason || t("inspector.included")) : t("inspector.cut", { reason: item.reason || "" }) })),
      )))),
  );
}

/** Activated entries read plainly, entries the budget dropped as cut, the rest (no match,
 * cooldown, filtered...) muted: they were never in the prompt, so nothing was lost. */
function traceClass(outcome) {
  if (outcome === "activated") return "in";
  return outcome === "budget" ? "cut" : "skip";
}

function traceView(trace, skipped) {
  if (!trace || !trace.length) return h("div", {}, skippedRegexView(skipped), h("p", { class: "muted", text: t("inspector.no_trace") }));
  const cols = ["book", "uid", "comment", "outcome", "primary_key", "reason"];
  return h("div", {}, skippedRegexView(skipped), h("div", { class: "table-wrap" }, h("table", { class: "trace" },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", text: t(`inspector.trace_${c}`) })))),
    h("tbody", {}, trace.map((row) => h("tr", { class: traceClass(row.outcome) }, cols.map((c) => {
      const v = row[c];
      return h("td", { "data-label": t(`inspector.trace_${c}`), text: typeof v === "boolean" ? (v ? "✓" : "—") : Array.isArray(v) ? v.join(", ") : v == null ? "" : String(v) });
    })))),
  )));
}

/** Open the inspector for the next generation of a chat, or for the generation of message `nodeId`. */
export async function openInspector(chatId, nodeId, labels = {}) {
  const body = h("div", { class: "inspector-body" }, h("p", { class: "muted", text: t("inspector.loading") }));
  const tabs = h("div", { class: "tabs", role: "tablist" });
  const panel = openDrawer({
    id: "inspector",
    title: nodeId ? t("inspector.title_past") : t("inspector.title_next"),
    label: t("inspector.title"),
    closeId: "close-inspector",
  }, tabs, body);
  let data;
  try {
    data = await api.get(nodeId ? `/chats/${chatId}/messages/${nodeId}/prompt` : `/chats/${chatId}/prompt`);
  } catch (error) {
    mount(body, h("p", { class: "error", role: "alert", text: explain(error) }));
    return;
  }
  // A stored reply's record is the prompt as it was sent; without one it was built again.
  if (nodeId && data.as_sent) panel.heading.textContent = t("inspector.title_sent");
  const views = {
    prompt: () => promptView(data.prompt, labels),
    ledger: () => ledgerView(data.prompt.ledger || {}, labels),
    trace: () => traceView(data.prompt.ledger?.trace, data.prompt.ledger?.skipped_regexes),
    request: () => h("pre", { class: "prompt-text", text: JSON.stringify(data.request ?? data.prompt, null, 2) }),
  };
  const show = (name) => {
    tabs.querySelectorAll("button").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.tab === name)));
    mount(body, views[name]());
  };
  mount(tabs, Object.keys(views).map((name) =>
    h("button", { type: "button", role: "tab", "data-tab": name, text: t(`inspector.tab_${name}`), onClick: () => show(name) })));
  show("prompt");
}
