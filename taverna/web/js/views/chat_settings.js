// A chat's own settings: the author's note and the summary (state on the path), recall by
// meaning's settings (the person's, shown beside the summary), the
// chat's lorebook and the Quick Reply sets it offers besides the global ones, and its
// variables where the branch being read ends (editing them records new state there; other
// branches keep theirs).

import { api } from "../api.js";
import { h, mount, openDrawer, toast } from "../dom.js";
import { t } from "../i18n.js";
import { roleLabel } from "../labels.js";
import { fieldForm } from "../form.js";
import { summarySection } from "./summary.js";
import { recallSection } from "./recall.js";
import { chatLooksSection } from "./chat_looks.js";

const ROLES = () => [[0, roleLabel("system")], [1, roleLabel("user")], [2, roleLabel("assistant")]];
const count = { empty: 0, attrs: { min: "0", step: "1" } };

/** One variable as a name and a value to edit (a value other than text shows as JSON). */
function variableRow(name, value) {
  const shown = typeof value === "string" ? value : JSON.stringify(value);
  const row = h("li", { class: "row" },
    h("input", { type: "text", class: "var-name", value: name, "aria-label": t("vars.name") }),
    h("input", { type: "text", class: "var-value grow", value: shown, "aria-label": t("vars.value") }),
    h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: () => row.remove() }));
  return row;
}

/** The rows as name → value (text as typed; SillyTavern reads numeric text as a number). */
function readRows(box) {
  const values = {};
  for (const row of box.children) {
    const name = row.querySelector(".var-name").value.trim();
    if (name) values[name] = row.querySelector(".var-value").value;
  }
  return values;
}

/** Open the settings of chat `chatId`; `onSaved(change)` gets the chat after a change (or
 * just `{ revision }` when no message changed), or null when the chat had changed
 * elsewhere (a stale revision: the panel closes). */
export async function openChatSettings(chatId, revision, onSaved) {
  const body = h("div", { class: "inspector-body" });
  const panel = openDrawer({ id: "chat-settings", title: t("settings.title"), closeId: "close-settings", onStale: () => onSaved(null) }, body);
  const [settings, books, qrSets, chatQr, variables] = await Promise.all([
    api.get(`/chats/${chatId}/settings`),
    api.get("/lorebooks"),
    api.get("/quick-replies"),
    api.get(`/chats/${chatId}/quick-replies`),
    api.get(`/chats/${chatId}/variables`),
  ]);
  const variableParts = variablesSection(chatId, panel, variables, () => revision, (saved) => {
    revision = saved.revision;
    onSaved({ revision });
  });
  const qrParts = quickReplySection(chatId, panel, qrSets, chatQr, () => revision, (saved) => {
    revision = saved.revision;
    onSaved({ revision, quickReplies: true });
  });
  const summaryParts = await summarySection(chatId, panel, () => revision, (answer) => {
    revision = answer.revision;
    onSaved({ revision, summary: true });
  });
  const recallParts = await recallSection();
  const looksParts = await chatLooksSection(chatId, panel, () => revision, (saved) => {
    revision = saved.revision;
    onSaved({ revision });
  });
  const note = settings.authors_note || { prompt: "", interval: 1, depth: 4, position: 1, role: 0 };
  // The note's text, then its numbers side by side.
  const text = fieldForm([["prompt", "text", { rows: 5, label: t("settings.note_text") }]], note, { prefix: "an", shownOnly: true });
  const numbers = fieldForm([
    ["interval", "number", { ...count, label: t("settings.interval") }],
    ["depth", "number", count],
    ["position", "choice", { choices: [[0, t("settings.after_main")], [1, t("settings.in_chat")], [2, t("settings.before_main")]] }],
    ["role", "choice", { choices: ROLES() }],
  ], note, { prefix: "an", box: h("div", { class: "row wrap" }), shownOnly: true });
  const book = fieldForm([["lorebook", "choice", {
    id: "chat-lorebook",
    label: t("settings.chat_lorebook"),
    choices: [["", t("character.no_lorebook")], ...books.map((b) => [b.id, b.name, true])],
  }]], { lorebook: books.find((b) => b.name === settings.lorebook)?.id });
  mount(body,
    h("h3", { text: t("settings.authors_note") }),
    h("p", { class: "muted", text: t("settings.authors_note_help") }),
    text,
    numbers,
    h("button", { type: "button", class: "primary", text: t("settings.save_note"), onClick: async () => {
      const saved = await panel.write(() => api.put(`/chats/${chatId}/authors-note`, {
        ...text.read(), ...numbers.read(), revision,
      }));
      if (!saved) return;
      revision = saved.revision;
      toast(t("common.saved"));
      onSaved({ revision });
    } }),
    ...summaryParts,
    ...recallParts,
    h("h3", { text: t("settings.chat_lorebook") }),
    book,
    h("button", { type: "button", text: t("settings.save_lorebook"), onClick: async () => {
      const chat = await panel.write(() => api.put(`/chats/${chatId}/lorebook`, { lorebook_id: book.read().lorebook, revision }));
      if (!chat) return;
      revision = chat.revision;
      toast(t("common.saved"));
      onSaved(chat);
    } }),
    ...variableParts,
    ...qrParts,
    ...looksParts);
  text.fields.prompt.control.focus();
}

/** The chat's variables (where the branch being read ends) and the global ones, to edit;
 * `revision()` is the chat's as held, `kept(saved)` takes the chat's saved variables. */
function variablesSection(chatId, panel, variables, revision, kept) {
  const localRows = h("ul", { class: "var-rows", id: "chat-variables" });
  const globalRows = h("ul", { class: "var-rows", id: "global-variables" });
  const fill = (box, values) => mount(box, Object.entries(values).map(([k, v]) => variableRow(k, v)));
  fill(localRows, variables.local);
  fill(globalRows, variables.global);
  return [
    h("h3", { text: t("vars.chat") }),
    h("p", { class: "muted", text: t("vars.chat_help") }),
    localRows,
    h("div", { class: "row" },
      h("button", { type: "button", text: t("vars.add"), onClick: () => localRows.append(variableRow("", "")) }),
      h("button", { type: "button", class: "primary", id: "save-chat-variables", text: t("vars.save"), onClick: async () => {
        const saved = await panel.write(() => api.put(`/chats/${chatId}/variables`, { local: readRows(localRows), revision: revision() }));
        if (!saved) return;
        fill(localRows, saved.local);
        toast(t("common.saved"));
        kept(saved);
      } })),
    h("h3", { text: t("vars.global") }),
    globalRows,
    h("div", { class: "row" },
      h("button", { type: "button", text: t("vars.add"), onClick: () => globalRows.append(variableRow("", "")) }),
      h("button", { type: "button", text: t("vars.save"), onClick: async () => {
        const saved = await panel.write(() => api.put("/variables", { global: readRows(globalRows) }));
        if (!saved) return;
        fill(globalRows, saved);
        toast(t("common.saved"));
      } })),
  ];
}

/** The Quick Reply sets the chat offers besides the global ones; `revision()` and `kept` as
 * the variables'. */
function quickReplySection(chatId, panel, qrSets, chatQr, revision, kept) {
  // Each set the chat may choose, and whether its buttons show (a hidden set's replies
  // still run on their triggers and by name).
  const qrBoxes = qrSets.filter((s) => !s.active).map((s) => h("span", { class: "qr-choice", "data-set": s.name },
    h("label", { class: "inline" },
      h("input", { type: "checkbox", class: "qr-on", value: s.name, checked: chatQr.chat_sets.includes(s.name) ? "checked" : null }), " ",
      h("span", { translate: "no", text: s.name })),
    h("label", { class: "inline muted" },
      h("input", { type: "checkbox", class: "qr-shown", checked: chatQr.chat_visible?.[s.name] !== false ? "checked" : null }), " ", t("qr.show_buttons"))));
  return [
    qrBoxes.length ? h("h3", { text: t("qr.chat_sets") }) : null,
    qrBoxes.length ? h("div", { class: "row wrap", id: "chat-qr-sets" }, ...qrBoxes) : null,
    qrBoxes.length ? h("button", { type: "button", text: t("common.save"), onClick: async () => {
      const sets = qrBoxes.map((b) => b.querySelector(".qr-on")).filter((i) => i.checked).map((i) => i.value);
      const visible = Object.fromEntries(qrBoxes.map((b) => [b.dataset.set, b.querySelector(".qr-shown").checked]));
      const saved = await panel.write(() => api.put(`/chats/${chatId}/quick-replies`, { sets, visible, revision: revision() }));
      if (!saved) return;
      toast(t("common.saved"));
      kept(saved);
    } }) : null,
  ];
}
