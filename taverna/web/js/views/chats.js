// Every chat: open, rename, delete, and its branches.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { markJump, searchBox } from "./search.js";

export async function render(root) {
  const search = h("input", { type: "search", placeholder: t("chats.search"), "aria-label": t("chats.search") });
  const list = h("ul", { class: "list chats-list" });
  // Messages in every chat (the box above filters the chats by title and character).
  const messages = searchBox({
    url: "/search",
    id: "message-search",
    withChat: true,
    onOpen: (hit) => {
      markJump(hit);
      location.hash = `#/chat/${hit.chat_id}`;
    },
  });
  mount(root, h("div", { class: "page-head" }, h("h1", { text: t("nav.chats") })), search,
    h("section", { class: "message-search", "aria-label": t("search.across") }, messages.form, messages.results), list);
  let all = [];
  const draw = () => {
    const q = search.value.trim().toLocaleLowerCase();
    const shown = all.filter((c) => !q || `${c.title} ${(c.character_names || []).join(" ")}`.toLocaleLowerCase().includes(q));
    mount(list, shown.length ? shown.map(item) : h("li", { class: "muted", text: t("chats.none") }));
  };
  // A chat written elsewhere since the list was read (409): read the list again, say so.
  const whenStale = async (error) => {
    if (error.status !== 409) throw error;
    toast(t("chat.changed_elsewhere"), "error");
    await reload();
    return false;
  };
  const item = (c) => {
    const branches = h("ul", { class: "branches", hidden: true });
    return h("li", { class: "chat-item", "data-id": c.id },
      h("div", { class: "row" },
        h("a", { translate: "no", href: `#/chat/${c.id}`, class: "grow", text: c.title }),
        h("span", { class: "muted" }, h("span", { translate: "no", text: (c.character_names || []).join(", ") }), ` · ${t("chats.summary", { messages: c.message_count, branches: c.branch_count })}`)),
      h("div", { class: "row wrap" },
        h("button", { type: "button", class: "small", text: t("chats.rename"), onClick: async () => {
          const title = prompt(t("chats.rename_to"), c.title);
          if (!title) return;
          if ((await api.patch(`/chats/${c.id}`, { title, revision: c.revision }).catch(whenStale)) === false) return;
          reload();
        } }),
        h("button", { type: "button", class: "small", text: t("chats.branches"), "aria-expanded": "false", onClick: async (e) => {
          const open = branches.hidden;
          branches.hidden = !open;
          e.currentTarget.setAttribute("aria-expanded", String(open));
          if (!open) return;
          const data = await api.get(`/chats/${c.id}/branches`);
          mount(branches, data.map((b) => h("li", {},
            h("span", { class: b.active ? "strong" : "", text: `${b.name} · ${t("chats.length", { n: b.length })}` }),
            h("span", { translate: "no", class: "muted clip", text: b.last_message || "" }),
            h("button", { type: "button", class: "small", text: t("chats.open_branch"), onClick: async () => {
              if ((await api.post(`/chats/${c.id}/branches/${b.id}/switch`, { revision: c.revision }).catch(whenStale)) === false) return;
              location.hash = `#/chat/${c.id}`;
            } }))));
        } }),
        h("a", { class: "button small", href: `/api/chats/${c.id}/export`, download: "", text: t("chats.export") }),
        h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: async () => {
          if (!confirm(t("chats.confirm_delete", { title: c.title }))) return;
          if ((await api.del(`/chats/${c.id}?revision=${c.revision}`).catch(whenStale)) === false) return;
          toast(t("common.deleted"));
          reload();
        } })),
      branches);
  };
  const reload = async () => {
    all = await api.get("/chats");
    draw();
  };
  search.addEventListener("input", draw);
  await reload();
}
