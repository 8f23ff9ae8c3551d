// Values the server sends as plain English words (roles, part kinds, outcomes, reasons,
// import kinds), read in the person's language. A value the catalog does not know shows as
// it came, so nothing is ever hidden.

import { h } from "./dom.js";
import { has, language, t } from "./i18n.js";

const slug = (value) => String(value).trim().toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "");

/** `value` through the catalog key `${group}.${slug(value)}`, else as it is. */
export function word(group, value) {
  if (value === null || value === undefined || value === "") return "";
  const key = `${group}.${slug(value)}`;
  return has(key) ? t(key) : String(value);
}

/** Whether `value` has words of its own in the catalog under `group`. */
export const knows = (group, value) => value !== null && value !== undefined && has(`${group}.${slug(value)}`);

export const roleLabel = (role) => word("role", role);
export const apiLabel = (api) => word("api", api);
export const partLabel = (kind) => word("part", kind);
export const outcomeLabel = (outcome) => word("outcome", outcome);
export const importKindLabel = (kind) => word("kind", kind);

// The names a new data folder starts with: shown in the person's language, stored as they are.
const DEFAULT_NAMES = { main: "names.main_branch", User: "names.user" };

/** A branch's name as shown: the first branch, "main", reads in the person's language. */
export const branchLabel = (name) => (name === "main" ? t(DEFAULT_NAMES.main) : name);

/** A persona's name as shown: the default persona, "User", reads in the person's language. */
export const personaLabel = (name) => (name === "User" ? t(DEFAULT_NAMES.User) : name);

// SillyTavern's own prompt slots, by the names it gives them.
const SLOT_NAMES = {
  main: "Main Prompt", nsfw: "Auxiliary Prompt", jailbreak: "Post-History Instructions",
  enhanceDefinitions: "Enhance Definitions", worldInfoBefore: "World Info (before)",
  personaDescription: "Persona Description", charDescription: "Char Description",
  charPersonality: "Char Personality", scenario: "Scenario", worldInfoAfter: "World Info (after)",
  dialogueExamples: "Chat Examples", chatHistory: "Chat History",
};

/** Whether a prompt slot still has SillyTavern's own name (said in the page's language
 * outside English); a name the person gave is theirs and shown as written. */
export const slotNamed = (slot) => language() !== "en" && SLOT_NAMES[slot.identifier] === slot.name && knows("source", slot.identifier);

/** A prompt slot's name as shown. */
export const slotLabel = (slot) => (slotNamed(slot) ? word("source", slot.identifier) : slot.name || slot.identifier);

// Sentences the server writes, by their shape: [pattern, catalog key, names of the groups].
// Quoted names and numbers pass through; the rest is said in the person's language.
const SENTENCES = [
  // the prompt ledger
  [/^context full$/, "reason.context_full"],
  [/^not placed$/, "reason.not_placed"],
  [/^(context full|not placed): (\d+) older message\(s\) not sent$/, "reason.older_not_sent", ["why", "n"]],
  [/^budget: a required part does not fit$/, "reason.required_does_not_fit"],
  // the lorebook trace
  [/^activated$/, "reason.activated"],
  [/^disabled$/, "reason.disabled"],
  [/^constant$/, "reason.constant"],
  [/^sticky$/, "reason.sticky"],
  [/^on cooldown$/, "reason.on_cooldown"],
  [/^has no primary keys$/, "reason.no_primary_keys"],
  [/^no primary key found in the scanned text( \(a regex key was stopped by a time limit and counted as no match\))?$/, "reason.no_primary_key", ["stopped"]],
  [/^primary key '(.*)'$/s, "reason.primary_key", ["key"]],
  [/^primary key '(.*)' found but secondary keys fail (.+?)( \(a regex key was stopped by a time limit and counted as no match\))?$/s, "reason.secondary_fail", ["key", "logic", "stopped"]],
  [/^primary key '(.*)' and secondary keys satisfy (.+)$/s, "reason.secondary_pass", ["key", "logic"]],
  [/^filtered out for this character$/, "reason.character_filter"],
  [/^filtered out by the character's tags$/, "reason.tag_filter"],
  [/^delayed until the chat has (\d+) messages$/, "reason.delay", ["n"]],
  [/^waits for a recursion pass$/, "reason.waits_recursion"],
  [/^waits for recursion level (\d+) \(now (\d+)\)$/, "reason.waits_level", ["level", "now"]],
  [/^cannot be activated by other entries$/, "reason.exclude_recursion"],
  [/^@@activate decorator$/, "reason.activate_decorator"],
  [/^@@dont_activate decorator$/, "reason.dont_activate_decorator"],
  [/^activated from outside the scan$/, "reason.forced"],
  [/^after the budget overflowed$/, "reason.after_budget"],
  [/^rolled ([\d.]+) > probability ([\d.]+)$/, "reason.probability", ["roll", "chance"]],
  [/^budget of (\d+) tokens reached; the scan stops here$/, "reason.budget", ["budget"]],
  [/^lost group '(.*)' to a sticky member$/s, "reason.group_sticky", ["group"]],
  [/^lost group '(.*)' to a prioritized member$/s, "reason.group_prioritized", ["group"]],
  [/^on cooldown inside group '(.*)'$/s, "reason.group_cooldown", ["group"]],
  [/^delayed inside group '(.*)'$/s, "reason.group_delay", ["group"]],
  [/^scored (\d+) < (\d+) in group '(.*)'$/s, "reason.group_score", ["score", "best", "group"]],
  [/^group '(.*)' already activated in an earlier pass$/s, "reason.group_earlier", ["group"]],
  [/^lost the weighted draw of group '(.*)' \(([\d.]+) of ([\d.]+)\)$/s, "reason.group_draw", ["group", "roll", "total"]],
  [/^removed by SillyTavern's splice\(-1\) quirk$/, "reason.group_quirk"],
  [/^stopped at its ([\d.]+) ms limit; counted as no match$/, "reason.regex_key_stopped", ["ms"]],
  [/^stopped at its ([\d.]+) ms limit; the text was left as it was$/, "reason.regex_script_stopped", ["ms"]],
  // a plugin's prompt handler changed the prompt after it was built
  [/^added by a prompt handler$/, "reason.prompt_handler_added"],
  [/^removed by a prompt handler$/, "reason.prompt_handler_removed"],
  [/^changed by a prompt handler$/, "reason.prompt_handler_changed"],
  // drafts and imports
  [/^impersonation$/, "reason.impersonation"],
  [/^stopped$/, "reason.stopped"],
  [/^not something taverna imports$/, "reason.not_imported"],
  [/^empty chat file$/, "reason.empty_chat"],
  [/^listed by the group, not found$/, "reason.group_chat_missing"],
  [/^avatar picture not found; persona kept without it$/, "reason.avatar_missing"],
  [/^line left out: (.+)$/s, "reason.line_left_out", ["why"]],
];

// Words inside a sentence that are themselves values: the secondary-key logic, the cause.
const INNER = { logic: "logic" };
// Values inside a sentence that are the person's own words (a key, a group's name).
const OWN = new Set(["key", "group"]);

// The params of a coded reason that are the person's words or values shown as they are.
const CODED_OWN = new Set(["key", "group", "score", "roll", "chance", "total", "best", "budget", "n", "level", "now"]);

/** A reason the server gave by its code (`reason.<code>` in the catalog) with its params;
 * null when the page does not know the code (then the English is parsed, as for a record
 * stored before reasons had codes). */
function coded({ code, params = {} } = {}) {
  if (!code || !has(`reason.${code}`)) return null;
  const out = {};
  const own = new Set();
  for (const [name, value] of Object.entries(params)) {
    if (name === "stopped") continue;
    if (INNER[name]) out[name] = word(INNER[name], value);
    else {
      out[name] = String(value);
      if (CODED_OWN.has(name)) own.add(name);
    }
  }
  out.stopped = params.stopped ? t("reason.stopped_note") : "";
  return { key: `reason.${code}`, params: out, own };
}

// Where a lorebook entry went (a ledger line's `place`: the position's name, `@depth` after
// an at-depth one), by the names the entry editor gives the positions.
const PLACES = {
  before: "entry.position_before_char", after: "entry.position_after_char",
  an_top: "entry.position_before_an", an_bottom: "entry.position_after_an",
  em_top: "entry.position_before_examples", em_bottom: "entry.position_after_examples",
  at_depth: "entry.position_at_depth", outlet: "entry.position_outlet", none: "reason.place_none",
};

function placeLabel(place) {
  const [name, depth] = String(place).split("@");
  if (!PLACES[name]) return null;
  return depth === undefined ? t(PLACES[name]) : t("reason.place_depth", { place: t(PLACES[name]), depth });
}

/** A prompt ledger line's reason in the person's language, by its code and params (a
 * line stored before lines had codes is read by its English shape); null when neither is
 * known, so the caller shows the original marked as not translated. */
export function ledgerReason(item) {
  const { code, params = {} } = item || {};
  if (!code || !has(`reason.${code}`)) return item?.reason ? sentence(item.reason) : "";
  const out = {};
  for (const [name, value] of Object.entries(params)) {
    if (name === "why") out.why = has(`reason.${value}`) ? t(`reason.${value}`) : String(value);
    else if (name === "at") out.at = word("source", value);
    else if (name === "place") {
      const place = placeLabel(value);
      if (place === null) return null;
      out.place = place;
    } else out[name] = String(value);
  }
  return t(`reason.${code}`, out);
}

/** The catalog key and params of a sentence the server wrote; `own` names the params that
 * are the person's words or text the page cannot read (shown as they are). Null when the
 * sentence's shape is not known. */
function parse(text) {
  for (const [pattern, key, names = []] of SENTENCES) {
    const match = String(text).match(pattern);
    if (!match) continue;
    const params = {};
    const own = new Set();
    names.forEach((name, i) => {
      const value = match[i + 1] ?? "";
      if (name === "stopped") params.stopped = value ? t("reason.stopped_note") : "";
      else if (name === "why") {
        const inner = sentence(value);
        params.why = inner ?? value;
        if (inner === null) own.add("why");
      } else if (INNER[name]) params[name] = word(INNER[name], value);
      else {
        params[name] = value;
        if (OWN.has(name)) own.add(name);
      }
    });
    return { key, params, own };
  }
  return null;
}

/** A sentence the server wrote, in the person's language when its shape is known; `null`
 * when it is not (the caller then shows the original, marked as not translated). */
export function sentence(text) {
  if (!text) return "";
  const parsed = parse(text);
  return parsed && t(parsed.key, parsed.params);
}

/** `sentence(text)`, or the text as it came when its shape is not known. */
export const reasonLabel = (text) => sentence(text) ?? String(text ?? "");

/** The sentence as an element `tag` (by its `code`, `{code, params}`, when the server gave
 * one): the person's words inside it (and the whole of a sentence the page cannot read)
 * marked translate="no", so no checker or translator takes them for the page's own words. */
export function reasonNode(text, tag = "span", attrs = {}, code = null) {
  if (!text) return h(tag, attrs);
  const parsed = coded(code || {}) || parse(text);
  if (!parsed) return h(tag, { ...attrs, translate: "no", text: String(text) });
  const held = Object.fromEntries([...parsed.own].map((name) => [name, `{${name}}`]));
  const template = t(parsed.key, { ...parsed.params, ...held });
  const parts = template.split(/\{(\w+)\}/).map((piece, i) =>
    i % 2 === 0 ? piece : h("span", { translate: "no", text: String(parsed.params[piece] ?? "") }));
  // one run of text: a phone's table cell lays out its children side by side
  return h(tag, attrs, h("span", {}, parts));
}
