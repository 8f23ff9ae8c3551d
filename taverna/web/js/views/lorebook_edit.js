// One lorebook: its entries and an editor for every entry field; attach to a character or chat.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";

// Fields shown first, in this order; any other field of an entry follows, typed by its value.
const ORDER = ["comment", "key", "keysecondary", "content", "constant", "selective", "selectiveLogic", "disable",
  "position", "depth", "role", "order", "probability", "useProbability", "scanDepth", "caseSensitive", "matchWholeWords",
  "excludeRecursion", "preventRecursion", "delayUntilRecursion", "group", "groupOverride", "groupWeight", "useGroupScoring",
  "sticky", "cooldown", "delay", "ignoreBudget"];
const CHOICES = {
  position: [[0, "↑Char"], [1, "↓Char"], [2, "↑AN"], [3, "↓AN"], [4, "@D"], [5, "↑EM"], [6, "↓EM"], [7, "Outlet"]],
  selectiveLogic: [[0, "AND ANY"], [1, "NOT ALL"], [2, "NOT ANY"], [3, "AND ALL"]],
  role: [[0, "system"], [1, "user"], [2, "assistant"]],
};
// On/off fields where "unset" means "use the global setting".
const TRISTATE = ["caseSensitive", "matchWholeWords", "useGroupScoring"];
const label = (field) => {
  const text = t(`entry.${field}`);
  return text === `entry.${field}` ? field : text;
};

function entryEditor(entry) {
  const fields = [...ORDER.filter((f) => f in entry), ...Object.keys(entry).filter((f) => !ORDER.includes(f) && f !== "uid" && f !== "extras")];
  const controls = {};
  const box = h("div", { class: "fields entry-fields" });
  for (const field of fields) {
    const value = entry[field];
    const id = `e-${field}`;
    let control;
    if (TRISTATE.includes(field)) {
      const pick = value === true ? "true" : value === false ? "false" : "";
      control = h("select", { id }, [["", t("entry.use_global")], ["true", t("entry.yes")], ["false", t("entry.no")]].map(([v, text]) =>
        h("option", { value: v, selected: v === pick ? "selected" : null, text })));
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(field) }), control));
    } else if (CHOICES[field]) {
      control = h("select", { id }, CHOICES[field].map(([v, text]) => h("option", { value: v, selected: Number(value) === v ? "selected" : null, text })));
      if (value === null || value === undefined) control.prepend(h("option", { value: "", selected: "selected", text: "—" }));
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(field) }), control));
    } else if (typeof value === "boolean") {
      control = h("input", { id, type: "checkbox", checked: value });
      box.append(h("label", { class: "check", for: id }, control, h("span", { text: label(field) })));
    } else if (Array.isArray(value)) {
      control = h("input", { id, type: "text", value: value.join(", ") });
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(field) }), control));
    } else if (typeof value === "number" || (value === null && ["depth", "order", "probability", "scanDepth", "groupWeight", "sticky", "cooldown", "delay"].includes(field))) {
      control = h("input", { id, type: "number", step: "any", value: value ?? "" });
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(field) }), control));
    } else if (value === null || typeof value === "string") {
      control = field === "content"
        ? h("textarea", { id, rows: 8, value: value ?? "" })
        : h("input", { id, type: "text", value: value ?? "" });
      box.append(h("label", { class: `field ${field === "content" ? "wide" : ""}`, for: id }, h("span", { text: label(field) }), control));
    } else continue;
    controls[field] = [value, control];
  }
  box.read = () => {
    const out = { ...entry };
    for (const [field, [orig, control]] of Object.entries(controls)) {
      if (TRISTATE.includes(field)) out[field] = control.value === "" ? null : control.value === "true";
      else if (CHOICES[field]) out[field] = control.value === "" ? null : Number(control.value);
      else if (typeof orig === "boolean") out[field] = control.checked;
      else if (Array.isArray(orig)) out[field] = control.value.split(/[,，]/).map((s) => s.trim()).filter(Boolean);
      else if (control.type === "number") out[field] = control.value === "" ? null : Number(control.value);
      else out[field] = orig === null && control.value === "" ? null : control.value;
    }
    return out;
  };
  return box;
}

export async function render(root, params) {
  let book = await api.get(`/lorebooks/${params.id}`);
  const [characters, chats] = await Promise.all([api.get("/characters"), api.get("/chats")]);
  const entryList = h("ul", { class: "list entries" });
  const editor = h("div", { class: "editor" });
  const search = h("input", { type: "search", placeholder: t("lorebooks.search"), "aria-label": t("lorebooks.search") });
  const attachChar = h("select", { "aria-label": t("lorebooks.attach_character") }, characters.map((c) => h("option", { value: c.id, text: c.name })));
  const attachChat = h("select", { "aria-label": t("lorebooks.attach_chat") }, chats.map((c) => h("option", { value: c.id, text: c.title })));
  mount(root,
    h("div", { class: "page-head" }, h("a", { href: "#/lorebooks", class: "back", text: "‹", "aria-label": t("chat.back") }),
      h("h1", { text: book.name }),
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
        await api.put(`/chats/${attachChat.value}/lorebook`, { lorebook_id: params.id });
        toast(t("lorebooks.attached"));
      } })),
    h("div", { class: "split" }, h("div", {}, search, entryList), editor));

  const select = (entry) => {
    const form = entryEditor(entry);
    entryList.querySelectorAll("li").forEach((li) => li.classList.toggle("selected", li.dataset.uid === String(entry.uid)));
    mount(editor, h("h2", { text: `#${entry.uid} ${entry.comment || ""}` }), form,
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
        h("span", { class: "strong", text: e.comment || t("lorebooks.untitled") }),
        h("span", { class: "muted clip", text: (e.key || []).join(", ") })),
      e.constant ? h("span", { class: "badge", text: t("entry.constant") }) : null,
      e.disable ? h("span", { class: "badge", text: t("entry.disable") }) : null)));
  };
  search.addEventListener("input", drawList);
  drawList();
}
