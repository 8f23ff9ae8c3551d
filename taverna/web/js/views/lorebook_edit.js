// One lorebook: its entries and an editor for every entry field; attach to a character or chat.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { roleLabel } from "../labels.js";
import { fieldForm, inferField } from "../form.js";

// Fields shown first, in this order; any other field of an entry follows, typed by its value.
const ORDER = ["comment", "key", "keysecondary", "content", "constant", "selective", "selectiveLogic", "disable",
  "position", "depth", "role", "order", "probability", "useProbability", "scanDepth", "caseSensitive", "matchWholeWords",
  "excludeRecursion", "preventRecursion", "delayUntilRecursion", "group", "groupOverride", "groupWeight", "useGroupScoring",
  "sticky", "cooldown", "delay", "ignoreBudget"];
// SillyTavern's numbers for an entry's position and its secondary-key logic, in words.
const POSITIONS = ["before_char", "after_char", "before_an", "after_an", "at_depth", "before_examples", "after_examples", "outlet"];
const LOGIC = ["and_any", "not_all", "not_any", "and_all"];
const CHOICES = {
  position: () => POSITIONS.map((name, i) => [i, t(`entry.position_${name}`)]),
  selectiveLogic: () => LOGIC.map((name, i) => [i, t(`logic.${name}`)]),
  role: () => ["system", "user", "assistant"].map((r, i) => [i, roleLabel(r)]),
};
// On/off fields where "unset" means "use the global setting".
const TRISTATE = ["caseSensitive", "matchWholeWords", "useGroupScoring"];
// Numbers that may be unset (null): left empty, they are unset again.
const NUMBERS = ["depth", "order", "probability", "scanDepth", "groupWeight", "sticky", "cooldown", "delay"];

/** An entry field's kind: declared for the fields above, else read from its value. */
function entryField(name, value) {
  if (TRISTATE.includes(name)) return [name, "tristate"];
  if (CHOICES[name]) return [name, "choice", { choices: CHOICES[name](), blank: "—" }];
  if (name === "content") return [name, "text", { rows: 8, wide: true }];
  if (Array.isArray(value)) return [name, "list"];
  if (typeof value === "number" || (value === null && NUMBERS.includes(name))) return [name, "number"];
  if (value === null || typeof value === "string") return [name, "line"];
  return inferField(name, value);
}

function entryEditor(entry) {
  const names = [...ORDER.filter((f) => f in entry), ...Object.keys(entry).filter((f) => !ORDER.includes(f) && f !== "uid" && f !== "extras")];
  return fieldForm(names.map((name) => entryField(name, entry[name])).filter(Boolean), entry,
    { prefix: "e", labels: "entry", box: h("div", { class: "fields entry-fields" }) });
}

export async function render(root, params) {
  let book = await api.get(`/lorebooks/${params.id}`);
  const [characters, chats] = await Promise.all([api.get("/characters"), api.get("/chats")]);
  const entryList = h("ul", { class: "list entries" });
  const editor = h("div", { class: "editor" });
  const search = h("input", { type: "search", placeholder: t("lorebooks.search"), "aria-label": t("lorebooks.search") });
  const attachChar = h("select", { "aria-label": t("lorebooks.attach_character") }, characters.map((c) => h("option", { translate: "no", value: c.id, text: c.name })));
  const attachChat = h("select", { "aria-label": t("lorebooks.attach_chat") }, chats.map((c) => h("option", { translate: "no", value: c.id, text: c.title })));
  mount(root,
    h("div", { class: "page-head" }, h("a", { href: "#/lorebooks", class: "back", text: "‹", "aria-label": t("chat.back") }),
      h("h1", { translate: "no", text: book.name }),
      h("button", { type: "button", class: "primary", text: t("lorebooks.new_entry"), onClick: async () => {
        book = await api.post(`/lorebooks/${params.id}/entries`, {});
        drawList();
        select(book.entries[book.entries.length - 1]);
      } })),
    h("div", { class: "row wrap attach" },
      attachChar, h("button", { type: "button", class: "small", text: t("lorebooks.attach_character"), onClick: async () => {
        await api.put(`/characters/${attachChar.value}/lorebook`, { lorebook_id: params.id });
        toast(t("lorebooks.attached"));
      } }),
      attachChat, h("button", { type: "button", class: "small", text: t("lorebooks.attach_chat"), onClick: async () => {
        // At the revision the list read: a chat written since (409) is read again first.
        const chat = chats.find((c) => c.id === attachChat.value);
        try {
          chat.revision = (await api.put(`/chats/${chat.id}/lorebook`, { lorebook_id: params.id, revision: chat.revision })).revision;
        } catch (error) {
          if (error.status !== 409) throw error;
          chats.splice(0, chats.length, ...(await api.get("/chats")));
          toast(t("chat.changed_elsewhere"), "error");
          return;
        }
        toast(t("lorebooks.attached"));
      } })),
    h("div", { class: "split" }, h("div", {}, search, entryList), editor));

  const select = (entry) => {
    const form = entryEditor(entry);
    entryList.querySelectorAll("li").forEach((li) => li.classList.toggle("selected", li.dataset.uid === String(entry.uid)));
    mount(editor, h("h2", { translate: "no", text: `#${entry.uid} ${entry.comment || ""}` }), form,
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", text: t("common.save"), onClick: async () => {
          book = await api.put(`/lorebooks/${params.id}/entries/${entry.uid}`, form.read());
          toast(t("common.saved"));
          drawList();
        } }),
        h("button", { type: "button", class: "danger", text: t("common.delete"), onClick: async () => {
          book = await api.del(`/lorebooks/${params.id}/entries/${entry.uid}`);
          mount(editor);
          drawList();
        } })));
  };
  const drawList = () => {
    const q = search.value.trim().toLocaleLowerCase();
    const entries = (book.entries || []).filter((e) => !q || `${e.comment} ${(e.key || []).join(" ")} ${e.content}`.toLocaleLowerCase().includes(q));
    mount(entryList, entries.map((e) => h("li", { "data-uid": String(e.uid) },
      h("button", { type: "button", class: "link", onClick: () => select(e) },
        h("span", { class: "strong", translate: e.comment ? "no" : null, text: e.comment || t("lorebooks.untitled") }),
        h("span", { class: "muted clip", translate: "no", text: (e.key || []).join(", ") })),
      e.constant ? h("span", { class: "badge", text: t("entry.constant") }) : null,
      e.disable ? h("span", { class: "badge", text: t("entry.disable") }) : null)));
  };
  search.addEventListener("input", drawList);
  drawList();
}
