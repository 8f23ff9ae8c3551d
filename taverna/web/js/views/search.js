// Message search: across chats (the chats page) or in one chat (a panel over the chat).
// A hit shows its chat, speaker and place, a snippet with the matches marked, and whether
// it is on another branch; opening it goes to the message (switching the path to it).

import { api } from "../api.js";
import { h, mount, openDrawer } from "../dom.js";
import { t } from "../i18n.js";
import { personaLabel } from "../labels.js";

const JUMP = "taverna.jump-to";

/** Remember to show message `hit` when its chat opens (a hit picked on another page). */
export function markJump(hit) {
  sessionStorage.setItem(JUMP, JSON.stringify(hit));
}

/** The hit to show in chat `chatId`, if one was marked for it (given once). */
export function takeJump(chatId) {
  const hit = JSON.parse(sessionStorage.getItem(JUMP) || "null");
  if (!hit || hit.chat_id !== chatId) return null;
  sessionStorage.removeItem(JUMP);
  return hit;
}

/** The list of `hits`; `onOpen(hit)` when one is picked. `withChat`: name each hit's chat. */
export function hitList(hits, onOpen, { withChat }) {
  if (!hits.length) return h("p", { class: "muted", id: "search-empty", text: t("search.none") });
  return h("ol", { class: "search-results" }, hits.map((hit) =>
    h("li", { class: "search-hit", "data-node": hit.node_id },
      h("button", { type: "button", class: "link", onClick: () => onOpen(hit) },
        h("span", { class: "search-head" },
          withChat ? h("span", { class: "strong", translate: "no", text: hit.chat_title }) : null,
          h("span", { class: "muted" }, `#${hit.position} `, hit.speaker ? h("span", { translate: "no", text: hit.role === "user" ? personaLabel(hit.speaker) : hit.speaker }) : t(`search.role_${hit.role}`)),
          hit.on_path ? null : h("span", { class: "badge", text: t("search.other_branch") })),
        h("span", { class: "search-snippet", translate: "no" }, hit.snippet.map((piece) =>
          piece.match ? h("mark", { text: piece.text }) : piece.text))))));
}

/** A search box with its results under it; `url` answers `?q=`. */
export function searchBox({ url, onOpen, withChat, id }) {
  const input = h("input", { type: "search", id, placeholder: t("search.placeholder"), "aria-label": t("search.messages"), enterkeyhint: "search" });
  const results = h("div", { class: "search-body", "aria-live": "polite" });
  let asked = 0;
  const form = h("form", { class: "search-form", role: "search", onSubmit: async (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (!q) return mount(results);
    const mine = ++asked;
    mount(results, h("p", { class: "muted", text: t("search.searching") }));
    const hits = await api.get(`${url}?q=${encodeURIComponent(q)}`);
    if (mine === asked) mount(results, hitList(hits, onOpen, { withChat }));
  } }, input, h("button", { type: "submit", class: "small", text: t("search.go") }));
  return { form, input, results };
}

/** The search panel of chat `chatId`; `onOpen(hit)` goes to a hit (the panel closes). */
export function openChatSearch(chatId, onOpen) {
  let panel;
  const box = searchBox({
    url: `/chats/${encodeURIComponent(chatId)}/search`,
    id: "chat-search-input",
    withChat: false,
    onOpen: (hit) => {
      panel.remove();
      onOpen(hit);
    },
  });
  panel = openDrawer({ id: "chat-search", title: t("search.in_chat"), closeId: "close-chat-search" },
    h("div", { class: "inspector-body" }, box.form, box.results));
  box.input.focus();
  return panel;
}
