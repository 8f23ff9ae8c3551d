// A chat's own looks, in its settings: a background over the global one (or the global
// one), and custom CSS added after the global CSS while the chat is open.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { showChatLooks } from "../looks.js";

/** The section's parts for chat `chatId`; `revision()` is the chat's as held, `kept(saved)`
 * takes the chat's revision after a save. */
export async function chatLooksSection(chatId, panel, revision, kept) {
  const [own, global] = await Promise.all([api.get(`/chats/${chatId}/looks`), api.get("/looks")]);
  const background = h("select", { id: "chat-background", "aria-label": t("looks.chat_background") },
    h("option", { value: "", text: t("looks.global_background") }),
    global.backgrounds.map((bg) => h("option", { value: bg.url, translate: "no", text: bg.name, selected: bg.url === own.background ? "selected" : null })));
  const css = h("textarea", { class: "custom-css", id: "chat-css", rows: 5, spellcheck: "false", value: own.custom_css, "aria-label": t("looks.chat_css") });
  const removed = h("p", { class: "css-removed", hidden: !own.removed.length, text: t("looks.css_removed", { items: own.removed.join("  ") }) });
  return [
    h("h3", { text: t("looks.chat_looks") }),
    h("p", { class: "muted", text: t("looks.chat_looks_help") }),
    h("label", { class: "field" }, h("span", { text: t("looks.chat_background") }), background),
    h("label", { class: "field" }, h("span", { text: t("looks.chat_css") }), css),
    removed,
    h("button", { type: "button", id: "save-chat-looks", text: t("looks.save_chat_looks"), onClick: async () => {
      const saved = await panel.write(() => api.put(`/chats/${chatId}/looks`, {
        background: background.value || null, custom_css: css.value, revision: revision(),
      }));
      if (!saved) return;
      showChatLooks(saved);
      removed.hidden = !saved.removed.length;
      mount(removed, t("looks.css_removed", { items: saved.removed.join("  ") }));
      css.value = saved.custom_css;
      toast(t("common.saved"));
      kept(saved);
    } }),
  ];
}
