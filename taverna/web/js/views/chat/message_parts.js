/** Small parts of a chat message: the speaker's avatar and the model's folded reasoning. */
import { h } from "../../dom.js";
import { t } from "../../i18n.js";

/** The speaker's picture, else the first letter of their name. */
export function avatarFor(message, chat) {
  const isUser = message.role === "user";
  const name = message.name || (isUser ? chat.persona?.name : chat.characters?.[0]?.name) || "?";
  const url = isUser ? chat.persona?.avatar_url : message.avatar_url;
  if (url) return h("img", { class: "avatar", src: url, alt: "", loading: "lazy" });
  return h("span", { class: "avatar letter", "aria-hidden": "true", text: [...name][0] || "?" });
}

/** The model's visible reasoning, folded away (shown as plain text, never as HTML). */
export function reasoningBlock(text, open = false) {
  if (!text) return null;
  return h("details", { class: "reasoning", open: open ? "open" : null },
    h("summary", { text: t("chat.reasoning") }), h("div", { class: "reasoning-text", text }));
}
