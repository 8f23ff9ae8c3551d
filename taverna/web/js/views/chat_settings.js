// A chat's own settings: the author's note (state on the path) and the chat's lorebook.

import { api } from "../api.js";
import { h, iconButton, mount, toast } from "../dom.js";
import { t } from "../i18n.js";

/** Open the settings of chat `chatId`; `onSaved(change)` gets the chat after a change (or
 * just `{ revision }` when no message changed), or null when the chat had changed
 * elsewhere (a stale revision: the panel closes). */
export async function openChatSettings(chatId, revision, onSaved) {
  document.getElementById("chat-settings")?.remove();
  const body = h("div", { class: "inspector-body" });
  const panel = h("aside", { id: "chat-settings", class: "drawer", role: "dialog", "aria-modal": "true", "aria-label": t("settings.title") },
    h("div", { class: "drawer-head" }, h("h2", { text: t("settings.title") }),
      iconButton(t("inspector.close"), "close", () => panel.remove(), { attrs: { id: "close-settings" } })),
    body);
  document.body.append(panel);
  panel.addEventListener("keydown", (e) => e.key === "Escape" && panel.remove());
  async function change(request) {
    try {
      return await request();
    } catch (error) {
      if (error.status !== 409) throw error;
      panel.remove();
      onSaved(null);
      return null;
    }
  }
  const [settings, books] = await Promise.all([api.get(`/chats/${chatId}/settings`), api.get("/lorebooks")]);
  const note = settings.authors_note || { prompt: "", interval: 1, depth: 4, position: 1, role: 0 };
  const prompt = h("textarea", { id: "an-prompt", rows: 5, value: note.prompt });
  const number = (id, value) => h("input", { id, type: "number", min: "0", step: "1", value });
  const interval = number("an-interval", note.interval);
  const depth = number("an-depth", note.depth);
  const position = h("select", { id: "an-position" }, [[0, t("settings.after_main")], [1, t("settings.in_chat")], [2, t("settings.before_main")]]
    .map(([v, text]) => h("option", { value: v, selected: note.position === v ? "selected" : null, text })));
  const role = h("select", { id: "an-role" }, [[0, "system"], [1, "user"], [2, "assistant"]]
    .map(([v, text]) => h("option", { value: v, selected: note.role === v ? "selected" : null, text })));
  const book = h("select", { id: "chat-lorebook" }, h("option", { value: "", text: t("character.no_lorebook") }),
    books.map((b) => h("option", { value: b.id, selected: settings.lorebook === b.name ? "selected" : null, text: b.name })));
  const field = (id, label, control) => h("label", { class: "field", for: id }, h("span", { text: label }), control);
  mount(body,
    h("h3", { text: t("settings.authors_note") }),
    h("p", { class: "muted", text: t("settings.authors_note_help") }),
    field("an-prompt", t("settings.note_text"), prompt),
    h("div", { class: "row wrap" },
      field("an-interval", t("settings.interval"), interval),
      field("an-depth", t("field.depth"), depth),
      field("an-position", t("field.position"), position),
      field("an-role", t("field.role"), role)),
    h("button", { type: "button", class: "primary", text: t("settings.save_note"), onClick: async () => {
      const saved = await change(() => api.put(`/chats/${chatId}/authors-note`, {
        prompt: prompt.value, interval: Number(interval.value), depth: Number(depth.value),
        position: Number(position.value), role: Number(role.value), revision,
      }));
      if (!saved) return;
      revision = saved.revision;
      toast(t("common.saved"));
      onSaved({ revision });
    } }),
    h("h3", { text: t("settings.chat_lorebook") }),
    field("chat-lorebook", t("settings.chat_lorebook"), book),
    h("button", { type: "button", text: t("settings.save_lorebook"), onClick: async () => {
      const chat = await change(() => api.put(`/chats/${chatId}/lorebook`, { lorebook_id: book.value || null, revision }));
      if (!chat) return;
      revision = chat.revision;
      toast(t("common.saved"));
      onSaved(chat);
    } }));
  prompt.focus();
}
