// Completion in the chat input, as SillyTavern's: in a line starting with `/`, a command's
// name offers the matching commands (aliases and one-line help beside them); after the
// command, a word offers its named arguments (`name=`); after `/getvar `, `/setvar key=`,
// `/addvar key=`... and inside `{{getvar::` the variable names. Arrow keys move, Tab or
// Enter takes the chosen one, Escape closes; on a touch screen a tap takes it.

import { api } from "../../api.js";
import { h, mount } from "../../dom.js";
import { t } from "../../i18n.js";

let commandsRead = null; // one read of /api/script-commands per page

function commands() {
  if (!commandsRead) commandsRead = api.get("/script-commands").catch(() => { commandsRead = null; return []; });
  return commandsRead;
}

// Commands whose unnamed text (or key=) names a chat / a global variable.
const CHAT_VARIABLE = new Set(["getvar", "setvar", "addvar", "incvar", "decvar", "flushvar"]);
const GLOBAL_VARIABLE = new Set(["getglobalvar", "setglobalvar", "addglobalvar", "incglobalvar", "decglobalvar", "flushglobalvar"]);
const MAX_SHOWN = 60;

/** What is being typed before the caret: {kind, word, start, command?, scope?}, or null. */
export function completionContext(text, caret, known) {
  const before = text.slice(0, caret);
  const macro = /\{\{(getvar|getglobalvar)::([\w.-]*)$/i.exec(before);
  if (macro) {
    const scope = macro[1].toLowerCase() === "getvar" ? "local" : "global";
    return { kind: "variable", scope, word: macro[2], start: caret - macro[2].length, macro: true };
  }
  if (!text.trimStart().startsWith("/")) return null;
  const segment = before.slice(before.lastIndexOf("|") + 1).replace(/^\s+/, "");
  const name = /^\/([\w?-]*)$/.exec(segment);
  if (name) return { kind: "command", word: name[1], start: caret - name[1].length };
  const call = /^\/([\w?-]+)\s(?:[^]*\s)?(\S*)$/.exec(segment);
  if (!call) return null;
  const command = known.get(call[1].toLowerCase());
  if (!command) return null;
  const word = call[2];
  const scope = CHAT_VARIABLE.has(command.name) ? "local" : GLOBAL_VARIABLE.has(command.name) ? "global" : null;
  const keyed = /^key=(\S*)$/.exec(word);
  if (scope && keyed) return { kind: "variable", scope, word: keyed[1], start: caret - keyed[1].length };
  const rest = segment.slice(call[1].length + 2);
  if (scope && /^(getvar|getglobalvar|incvar|incglobalvar|decvar|decglobalvar|flushvar|flushglobalvar)$/.test(command.name) && !/\s/.test(rest) && !word.includes("=")) {
    return { kind: "variable", scope, word, start: caret - word.length, orArguments: command };
  }
  if (word && !word.includes("=")) return { kind: "argument", command, word, start: caret - word.length };
  return null;
}

/** What completes `context`: commands (of `known`), their named arguments, or variable names
 * (of `names`: {local, global}, read by the caller first). */
function candidates(context, known, names) {
  const word = context.word.toLowerCase();
  if (context.kind === "command") {
    return [...new Set(known.values())]
      .filter((c) => [c.name, ...c.aliases].some((n) => n.toLowerCase().startsWith(word)))
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((c) => ({
        label: `/${c.name}`,
        aliases: c.aliases.map((a) => `/${a}`).join(" "),
        detail: c.help,
        insert: `${c.name} `,
      }));
  }
  if (context.kind === "argument") {
    return context.command.named
      .filter((n) => n.toLowerCase().startsWith(word))
      .map((n) => ({ label: `${n}=`, detail: context.command.usage, insert: `${n}=` }));
  }
  const scope = names[context.scope] || {};
  const found = Object.keys(scope)
    .filter((n) => n.toLowerCase().startsWith(word) && n !== context.word)
    .sort()
    .map((n) => ({
      label: n,
      detail: t(context.scope === "local" ? "complete.chat_variable" : "complete.global_variable"),
      insert: n,
      closeMacro: context.macro,
    }));
  if (context.orArguments && word) {
    for (const n of context.orArguments.named.filter((a) => a.startsWith(word))) {
      found.push({ label: `${n}=`, detail: context.orArguments.usage, insert: `${n}=` });
    }
  }
  return found;
}

/** One offered completion in the list; `chosen` marks it, a tap or a click takes it. */
function optionItem(item, i, chosen, accept) {
  return h("li", {
    role: "option",
    id: `script-complete-${i}`,
    class: i === chosen ? "chosen" : "",
    "aria-selected": i === chosen ? "true" : "false",
    onmousedown: (event) => event.preventDefault(), // keep the caret in the input
    onclick: () => accept(i),
  },
  h("span", { class: "complete-name", translate: "no", text: item.label }),
  item.aliases ? h("span", { class: "complete-aliases", translate: "no", text: item.aliases }) : null,
  h("span", { class: "complete-help", lang: "en", text: item.detail }));
}

/**
 * Completion for `input`; `variables()` resolves to {local, global} (the chat's and the
 * global variables). Returns the list element to place above the input.
 */
export function scriptCompletion({ input, variables }) {
  const list = h("ul", { class: "script-complete", role: "listbox", id: "script-complete", "aria-label": t("complete.list"), hidden: true });
  input.setAttribute("aria-controls", "script-complete");
  input.setAttribute("aria-autocomplete", "list");
  let items = [];
  let chosen = 0;
  let known = new Map();
  let names = null; // {local, global} read when a variable is first wanted, again on focus
  let reading = null;

  commands().then((found) => {
    known = new Map();
    for (const c of found) for (const n of [c.name, ...c.aliases]) known.set(n, c);
  });

  function readVariables() {
    if (!reading) {
      reading = variables().then((found) => { names = found; }).catch(() => { names = { local: {}, global: {} }; })
        .finally(() => { reading = null; refresh(); });
    }
  }

  function close() {
    items = [];
    list.hidden = true;
    mount(list);
    input.removeAttribute("aria-activedescendant");
  }

  function offered(context) {
    if (context.kind === "variable" && !names) {
      readVariables();
      return [];
    }
    return candidates(context, known, names);
  }

  function refresh() {
    const context = completionContext(input.value, input.selectionStart ?? input.value.length, known);
    if (!context || input.selectionStart !== input.selectionEnd) return close();
    const found = offered(context).slice(0, MAX_SHOWN);
    if (!found.length) return close();
    const same = found.length === items.length && found.every((item, i) => item.label === items[i].label);
    items = found.map((item) => ({ ...item, start: context.start }));
    if (!same) chosen = 0;
    draw();
  }

  function draw() {
    mount(list, ...items.map((item, i) => optionItem(item, i, chosen, accept)));
    list.hidden = false;
    input.setAttribute("aria-activedescendant", `script-complete-${chosen}`);
    list.children[chosen]?.scrollIntoView({ block: "nearest" });
  }

  function accept(index) {
    const item = items[index];
    if (!item) return;
    const caret = input.selectionStart ?? input.value.length;
    const after = input.value.slice(caret);
    const insert = item.insert + (item.closeMacro && !after.startsWith("}}") ? "}}" : "");
    input.value = input.value.slice(0, item.start) + insert + after;
    const at = item.start + insert.length;
    input.setSelectionRange(at, at);
    input.focus();
    close();
    input.dispatchEvent(new Event("input", { bubbles: true })); // and what follows it opens
  }

  input.addEventListener("keydown", (event) => {
    if (list.hidden || event.isComposing) return;
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (event.key in moves) {
      chosen = (chosen + moves[event.key] + items.length) % items.length;
      draw();
    } else if ((event.key === "Tab" || event.key === "Enter") && !event.shiftKey) {
      accept(chosen);
    } else if (event.key === "Escape") {
      close();
    } else return;
    event.preventDefault();
    event.stopImmediatePropagation(); // the input's own Enter (send) waits
  });
  input.addEventListener("input", refresh);
  input.addEventListener("click", refresh);
  input.addEventListener("focus", () => { names = null; });
  input.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== input) close(); }, 150));
  return list;
}
