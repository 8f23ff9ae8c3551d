// The prompt inspector: the prompt as sent, the ledger of its parts, and the lorebook trace.

import { api } from "../api.js";
import { h, mount, openDrawer } from "../dom.js";
import { explain } from "../errors.js";
import { has, t } from "../i18n.js";
import { ledgerReason, outcomeLabel, partLabel, reasonNode, roleLabel, word } from "../labels.js";
import { overflowAlertOn } from "./world_info.js";
import { loreCut } from "./chat/lore_overflow.js";

/** A message's source as a person reads it: a chat message by its number and speaker, a
 * prompt slot by its name in the person's language. */
function sourceLabel(source, labels) {
  const id = source.split(/:(.*)/s)[1];
  return (id && labels[id]) || labels[source] || word("source", source);
}

function promptView(prompt, labels) {
  if (prompt.kind === "text") {
    return h("pre", { class: "prompt-text", translate: "no", text: prompt.text });
  }
  // A message's ledger line (the part placed at its index) says its source by code.
  const lines = new Map((prompt.ledger?.items || []).filter((i) => i.included && i.position != null).map((i) => [i.position, i]));
  return h("ol", { class: "prompt-messages" }, (prompt.messages || []).map((m, index) =>
    h("li", { class: `pm role-${m.role}`, "data-source": m.source || "" },
      h("div", { class: "pm-head" }, h("span", { class: "role", text: roleLabel(m.role) }), m.name ? h("span", { class: "pm-name", translate: "no", text: m.name }) : null,
        m.source ? messageSource(m.source, lines.get(index), labels) : null),
      h("pre", { class: "pm-content", translate: "no", text: m.content })),
  ));
}

/** A message's source: by its ledger line's code when the page knows it, else as a slot,
 * a chat message or a name. */
function messageSource(source, line, labels) {
  const attrs = { class: "pm-source", title: source };
  const coded = line && codedSource(line, labels);
  if (coded) return h("span", attrs, coded);
  const text = sourceLabel(source, labels);
  return h("span", { ...attrs, translate: Object.values(SOURCE_WORDS()).includes(text) ? null : "no", text });
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
        h("td", { "data-label": t(`inspector.regex_${c}`), class: c === "pattern" ? "src" : "", translate: ["source", "pattern"].includes(c) ? "no" : null, text: regexCell(c, note[c], note) }))))))));
}

/** A cell of the skipped regexes: the kind and the reason in words, the rest as written. */
function regexCell(column, value, note) {
  if (column === "kind") return word("kind", value);
  if (column === "reason") return ledgerReason(note) ?? String(value ?? "");
  return String(value ?? "");
}

/** A ledger line's source as shown: by its code in the person's language when the page
 * knows it; else words of the catalog read as words, and a name (a book's, an entry's, a
 * message's speaker) marked as a name. */
function sourceCell(tag, attrs, item, labels) {
  const coded = codedSource(item, labels);
  // one child: a phone lays a cell's children out as a row with gaps
  if (coded) return h(tag, attrs, h("span", {}, coded));
  const text = readable(item.source, labels);
  const named = !Object.values(SOURCE_WORDS()).includes(text) && !squashed(item.source);
  return h(tag, { ...attrs, translate: named ? "no" : null, text });
}
const SOURCE_WORDS = () => Object.fromEntries(SOURCES.map((s) => [s, word("source", s)]));
// The prompt's own slots and parts, named in the catalog (source.*).
const SOURCES = ["main", "nsfw", "jailbreak", "enhanceDefinitions", "charDescription", "charPersonality", "scenario", "personaDescription",
  "worldInfoBefore", "worldInfoAfter", "dialogueExamples", "chatHistory", "before", "after", "description", "personality", "persona",
  "authors_note", "quiet", "recall", "impersonate", "quietPrompt", "bias", "newChat", "groupNudge", "continueNudge", "emptyUserMessageReplacement",
  "budget", "story_string", "system_prompt", "example", "newMainChat", "continuePrefill", "tool-call", "tool-result"];

// A message id inside a source (a summary names the message it belongs to) reads as the message.
const MESSAGE_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
// System messages merged into one (the preset's squash) name their slots joined by "+".
const squashed = (source) => source.includes("+") && source.split("+").every((s) => SOURCES.includes(s));
const readable = (source, labels) => labels[source] || (SOURCES.includes(source) ? word("source", source)
  : squashed(source) ? source.split("+").map((s) => word("source", s)).join(" + ") : source.replace(MESSAGE_ID, (id) => labels[id] || id));

// Values of a coded source that are names as written (shown as they are, marked so).
const NAMED_VALUES = new Set(["names", "name"]);
// Values counted from 0, which a person reads counted from 1: a Chat Completion example
// turn of a prompt kept before the engine counted them from 1 (example_block_turn).
const FROM_ZERO = { example_turn: ["block", "turn"] };

/** A ledger line's source in the person's language from its code (`ledger_source.<code>`)
 * and values: a role read as a role, a slot's name as the slot, a summary's message as the
 * message; the person's names as they are, marked as names. Null when the page does not
 * know the code (the English `source` is shown then). */
function codedSource(item, labels) {
  const { code, params } = item?.source_code ? { code: item.source_code, params: item.source_params || {} } : shapeOf(item?.source);
  if (code === "merged") return mergedSource(params, labels);
  if (!code || !has(`ledger_source.${code}`)) return null;
  const values = {};
  for (const [name, value] of Object.entries(params)) {
    if (name === "role") values.role = roleLabel(value);
    else if (NAMED_VALUES.has(name)) values[name] = namesNode(String(value), labels);
    else values[name] = String((FROM_ZERO[code] || []).includes(name) ? Number(value) + 1 : value);
  }
  // text values fill the sentence (and choose a count's plural form); nodes go in after
  const words = Object.fromEntries(Object.entries(values).filter(([, v]) => typeof v === "string"));
  const parts = fill(t(`ledger_source.${code}`, words), values);
  if (params.summary) {
    const messages = String(params.summary).split(",").map((id) => labels[id] || id).join(", ");
    parts.push(...fill(t("ledger_source.summary_of"), { message: h("span", { translate: "no", text: messages }) }));
  }
  return parts;
}

/** System messages merged into one (squashed): each part by its own code in the person's
 * language, a slot by its name, any other name as written; joined by " + ". Null when the
 * parts cannot be read (the English is shown then). */
function mergedSource(params, labels) {
  let pieces;
  try {
    pieces = JSON.parse(String(params.parts ?? ""));
  } catch {
    return null;
  }
  if (!Array.isArray(pieces) || !pieces.length) return null;
  return pieces.flatMap((piece, i) => {
    const coded = piece?.code && piece.code !== "merged" ? codedSource({ source_code: piece.code, source_params: piece.params || {} }, labels) : null;
    const source = String(piece?.source ?? "");
    // a slot filled from the card ("jailbreak:character") reads as the slot
    const slot = source.split(":")[0];
    const known = SOURCES.includes(slot) || labels[source];
    const text = SOURCES.includes(slot) && !labels[source] ? word("source", slot) : readable(source, labels);
    const node = coded ? h("span", {}, coded) : h("span", { translate: known ? null : "no", text });
    return i ? [" + ", node] : [node];
  });
}

// SillyTavern's keys of the extension prompts a depth injection names, by their words.
const EXTENSION_KEYS = { "1_memory": "part.summary", "2_floating_prompt": "source.authors_note", "3_vectors": "source.recall",
  DEPTH_PROMPT: "part.depth_prompt", PERSONA_DESCRIPTION: "source.persona", QUIET_PROMPT: "source.quiet" };

/** A name inside a source: a slot's or an extension prompt's in the person's language
 * (a lorebook's at-depth group as the lorebook), null for one as written. */
function knownName(name) {
  if (SOURCES.includes(name)) return word("source", name);
  if (EXTENSION_KEYS[name]) return t(EXTENSION_KEYS[name]);
  // a depth injection among the parts moved after the chat (cache-friendly prompts)
  const injection = name.match(/^injection@(\d+):(system|user|assistant)$/);
  if (injection) return t("ledger_source.at_depth", { depth: injection[1], role: roleLabel(injection[2]) });
  return /^customDepthWI-\d+-\d+$/.test(name) ? t("part.lorebook") : null;
}

// The engine's words of a source, by their shape: a prompt kept before sources had codes.
const SOURCE_SHAPES = [
  [/^reply priming$/, "reply_priming"], [/^token padding$/, "token_padding"],
  [/^(\d+) messages$/, "messages", ["n"]], [/^(\d+) older messages$/, "older_messages", ["n"]],
  [/^block (\d+) turn (\d+)$/, "example_turn", ["block", "turn"]], [/^block (\d+)$/, "example_block", ["block"]],
  [/^depth (\d+) (system|user|assistant): (.*)$/s, "depth_injection", ["depth", "role", "names"]],
  [/^lorebook and extension prompts$/, "moved_to_end"],
  [/^before story string$/, "before_story_string"], [/^after story string$/, "after_story_string"],
  [/^context template$/, "context_template"], [/^message being continued$/, "continued_message"],
];

function shapeOf(source) {
  for (const [pattern, code, names = []] of SOURCE_SHAPES) {
    const match = String(source ?? "").match(pattern);
    if (match) return { code, params: Object.fromEntries(names.map((name, i) => [name, match[i + 1]])) };
  }
  return { code: null, params: {} };
}

/** Names joined by commas: a known one in the person's language, any other as written. */
function namesNode(names, labels) {
  return names.split(",").flatMap((name, i) => {
    const known = knownName(name);
    const piece = h("span", { translate: known === null ? "no" : null, text: known ?? readable(name, labels) });
    return i ? [", ", piece] : [piece];
  });
}

/** A catalog sentence with `{name}` filled: the values' text or nodes, in order. */
function fill(template, values) {
  return template.split(/\{(\w+)\}/).map((piece, i) => (i % 2 === 0 ? piece : values[piece] ?? `{${piece}}`)).filter((p) => p !== "");
}

function ledgerView(ledger, labels) {
  const items = ledger.items || [];
  return h("div", {},
    h("p", { class: "muted", text: t("inspector.totals", { total: ledger.total_tokens ?? 0, budget: ledger.budget ?? 0 }) }),
    // the tokenizer's name is an identifier, the same in every language
    ledger.tokenizer ? h("p", { class: "muted ledger-tokenizer", id: "ledger-tokenizer" },
      ...fill(t("inspector.counted_with"), { name: h("span", { translate: "no", text: ledger.tokenizer }) })) : null,
    ledger.tokenizer_note ? h("p", { class: "notice ledger-tokenizer-note", role: "status", text: t("inspector.counted_estimate", { why: ledger.tokenizer_note }) }) : null,
    skippedRegexView(ledger.skipped_regexes),
    h("div", { class: "table-wrap" }, h("table", { class: "ledger" },
      h("thead", {}, h("tr", {}, [t("inspector.part"), t("inspector.source"), t("inspector.tokens"), t("inspector.status")].map((c) => h("th", { scope: "col", text: c })))),
      h("tbody", {}, items.map((item) =>
        h("tr", { class: item.included ? "in" : "cut", "data-kind": item.kind, "data-source-code": item.source_code || null },
          h("td", { "data-label": t("inspector.part"), text: partLabel(item.kind) }),
          sourceCell("td", { "data-label": t("inspector.source"), class: "src", title: item.source }, item, labels),
          h("td", { "data-label": t("inspector.tokens"), class: "num", text: String(item.tokens) }),
          h("td", { "data-label": t("inspector.status"), ...statusText(item) })),
      )))),
  );
}

/** A ledger row's status: included, or cut and why (a reason the page cannot read in the
 * person's language is shown as the server wrote it, marked so). */
function statusText(item) {
  const reason = item.reason ? ledgerReason(item) : "";
  if (reason === null) return { translate: "no", text: item.included ? item.reason : `${t("inspector.cut", { reason: "" })}${item.reason}` };
  return { text: item.included ? reason || t("inspector.included") : t("inspector.cut", { reason }) };
}

/** Activated entries read plainly, entries the budget dropped as cut, the rest (no match,
 * cooldown, filtered...) muted: they were never in the prompt, so nothing was lost. */
function traceClass(outcome) {
  if (outcome === "activated") return "in";
  return outcome === "budget" ? "cut" : "skip";
}

/** No decision to list: either no book was scanned, or books were and no entry matched. */
function emptyTrace(books) {
  if (!books || !books.length) return h("p", { class: "muted no-trace", text: t("inspector.no_trace") });
  return h("p", { class: "muted no-trace" }, t("inspector.nothing_matched", { n: books.length }), " ",
    h("span", { translate: "no", class: "scanned-books", text: books.join(", ") }));
}

/** An entry's title; an untitled entry is named by its keys, else by its number. */
function titleCell(row, label) {
  const title = (row.comment || "").trim();
  if (title) return h("td", { "data-label": label, translate: "no", text: title });
  const keys = (row.keys || []).join(", ");
  return h("td", { "data-label": label, class: "untitled" },
    keys ? h("span", { translate: "no", text: keys }) : h("span", { text: t("inspector.entry_number", { uid: row.uid }) }));
}

/** The key found, and the activated entry whose text it was found in (recursion). */
function foundInCell(row, label) {
  const said = t("inspector.found_in", { hit: "{hit}", title: "{title}" });
  const words = { hit: row.primary_key, title: row.found_in.title };
  // one piece of text in the cell (a phone lays the cell out as label and value)
  return h("td", { "data-label": label, class: "found-in" }, h("span", {}, said.split(/\{(hit|title)\}/).map((piece, i) =>
    (i % 2 ? h("span", { translate: "no", class: `found-${piece}`, text: words[piece] }) : piece))));
}

function traceView(trace, skipped, books) {
  if (!trace || !trace.length) return h("div", {}, skippedRegexView(skipped), emptyTrace(books));
  const cols = ["book", "uid", "comment", "outcome", "primary_key", "reason"];
  return h("div", {}, skippedRegexView(skipped), h("div", { class: "table-wrap" }, h("table", { class: "trace" },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", text: t(`inspector.trace_${c}`) })))),
    h("tbody", {}, trace.map((row) => h("tr", { class: traceClass(row.outcome) }, cols.map((c) => {
      const v = row[c];
      const label = t(`inspector.trace_${c}`);
      if (c === "outcome") return h("td", { "data-label": label, text: outcomeLabel(v) });
      if (c === "reason") return reasonNode(v, "td", { "data-label": label }, { code: row.code, params: row.params });
      if (c === "comment") return titleCell(row, label);
      if (c === "primary_key" && row.found_in?.title !== undefined) return foundInCell(row, label);
      // The book, the entry's title and the key found are the person's own words.
      return h("td", { "data-label": label, translate: "no", text: typeof v === "boolean" ? (v ? "✓" : "—") : Array.isArray(v) ? v.join(", ") : v == null ? "" : String(v) });
    })))),
  )));
}

/** An interceptor would stop this turn: the prompt shown would never be sent. */
function abortedNote(aborted) {
  if (!aborted) return null;
  const key = aborted.reason ? "inspector.aborted" : "inspector.aborted_no_reason";
  return h("p", { class: "error prompt-aborted", role: "alert", text: t(key, { by: aborted.by, reason: aborted.reason }) });
}

/** The lorebook budget overflowed (entries were cut by it) and the person asked to be
 * told (the World Info settings' overflow alert): a notice saying how many were left out. */
async function overflowNote(trace) {
  const cut = loreCut(trace);
  if (!cut || !(await overflowAlertOn())) return null;
  return h("p", { class: "notice lore-overflow", role: "status", id: "lore-overflow" },
    t("inspector.lore_overflow", { n: cut }), " ", h("a", { href: "#/lorebooks", text: t("wi.title") }));
}

/** A past reply's tokens as its API counted them: how much of the prompt its prompt cache
 * gave and how much was new, so a person sees what the cache saved. */
function usageNote(usage) {
  if (!usage) return null;
  const shown = (n) => (n === null || n === undefined ? "?" : String(n));
  const lines = [t("inspector.usage", { prompt: shown(usage.prompt), reply: shown(usage.reply) })];
  if (usage.cached === null || usage.cached === undefined) {
    if (!usage.written) lines.push(t("inspector.usage_no_cache"));
  } else {
    lines.push(t("inspector.usage_cached", { cached: usage.cached, new: shown(usage.new) }));
  }
  if (usage.written) lines.push(t("inspector.usage_written", { written: usage.written }));
  return h("p", { class: "muted reply-usage", id: "reply-usage", text: lines.join(" ") });
}

/** How much of the prompt the model server reuses from the prompt of the reply before it,
 * and the part where the two first differ (measured when the server reported it). */
function reuseNote(reuse, labels) {
  if (!reuse) return null;
  const key = reuse.identical ? "inspector.reuse_identical" : reuse.measured ? "inspector.reuse_measured" : "inspector.reuse_estimated";
  const line = reuse.part;
  const part = line
    ? h("span", { class: "reuse-part", "data-kind": line.kind }, partLabel(line.kind), " (", codedSource(line, labels) || readable(line.source || "", labels), ")")
    : h("span", { class: "reuse-part", text: t(reuse.at_end ? "inspector.reuse_end" : "inspector.reuse_unnamed") });
  return h("p", { class: "muted prefix-reuse", id: "prefix-reuse" },
    fill(t(key), { reused: String(reuse.reused_tokens), total: String(reuse.total_tokens), part }));
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
  const overflow = await overflowNote(data.prompt.ledger?.trace);
  if (overflow) tabs.before(overflow);
  const usage = usageNote(data.usage);
  if (usage) tabs.before(usage);
  const reuse = reuseNote(data.reuse, labels);
  if (reuse) tabs.before(reuse);
  const views = {
    prompt: () => h("div", {}, abortedNote(data.prompt.ledger?.aborted), promptView(data.prompt, labels)),
    ledger: () => h("div", {}, abortedNote(data.prompt.ledger?.aborted), ledgerView(data.prompt.ledger || {}, labels)),
    trace: () => traceView(data.prompt.ledger?.trace, data.prompt.ledger?.skipped_regexes, data.prompt.ledger?.scanned_books),
    request: () => h("pre", { class: "prompt-text", translate: "no", text: JSON.stringify(data.request ?? data.prompt, null, 2) }),
  };
  const show = (name) => {
    tabs.querySelectorAll("button").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.tab === name)));
    mount(body, views[name]());
  };
  mount(tabs, Object.keys(views).map((name) =>
    h("button", { type: "button", role: "tab", "data-tab": name, text: t(`inspector.tab_${name}`), onClick: () => show(name) })));
  show("prompt");
}
