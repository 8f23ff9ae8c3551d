// The tree view: every fork of a chat, its candidates, branch heads and checkpoints; pick one to go there.

import { api } from "../api.js";
import { h, iconButton, mount, openDrawer } from "../dom.js";
import { t } from "../i18n.js";

/** Open the tree of chat `chatId`; `onPick(chat)` gets the chat after it changed here,
 * or null when the chat had changed elsewhere (a stale revision: the tree closes). */
export async function openTree(chatId, revision, onPick) {
  const body = h("div", { class: "inspector-body" }, h("p", { class: "muted", text: t("inspector.loading") }));
  const panel = openDrawer({ id: "tree", title: t("tree.title"), closeId: "close-tree", onStale: () => onPick(null) }, body);

  async function render() {
    const [tree, checkpoints] = await Promise.all([api.get(`/chats/${chatId}/tree`), api.get(`/chats/${chatId}/checkpoints`)]);
    const depthOf = new Map(tree.map((n) => [n.id, n.depth]));
    const nodes = tree.filter((n) => n.shown);
    mount(body,
      h("h3", { text: t("tree.checkpoints") }),
      checkpoints.length
        ? h("ul", { class: "checkpoints" }, checkpoints.map((c) => h("li", { class: "checkpoint-row" },
          h("button", {
            type: "button",
            class: "link",
            "aria-label": t("tree.checkpoint_open", { name: c.name }),
            onClick: async () => {
              const chat = await panel.write(() => api.post(`/chats/${chatId}/checkpoints/${c.id}/open`, { revision }));
              if (!chat) return;
              panel.remove();
              onPick(chat);
            },
          },
          h("span", { class: "strong", text: `⚑ ${c.name}` }),
          h("span", { class: "muted", text: t("tree.checkpoint_at", { n: depthOf.get(c.node_id) ?? "?" }) })),
          iconButton(t("tree.checkpoint_delete", { name: c.name }), "trash", async () => {
            if (!confirm(t("tree.checkpoint_confirm", { name: c.name }))) return;
            const chat = await panel.write(() => api.del(`/chats/${chatId}/checkpoints/${c.id}?revision=${revision}`));
            if (!chat) return;
            revision = chat.revision;
            onPick(chat);
            await render();
          }, { class: "danger" }))))
        : h("p", { class: "muted", text: t("tree.no_checkpoints") }),
      h("p", { class: "muted", text: t("tree.help") }),
      h("ol", { class: "tree" }, nodes.map((n) =>
        h("li", { class: `tree-node${n.on_path ? " on-path" : ""}`, style: `--level: ${Math.min(n.level, 12)}` },
          h("button", {
            type: "button",
            class: "link",
            "aria-current": n.on_path ? "true" : null,
            onClick: async () => {
              const chat = await panel.write(() => api.post(`/chats/${chatId}/messages/${n.id}/show`, { revision }));
              if (!chat) return;
              panel.remove();
              onPick(chat);
            },
          },
          h("span", { class: "tree-head" },
            h("span", { class: "strong", text: `#${n.depth} ${n.name || n.role}` }),
            n.branches.map((b) => h("span", { class: "badge", text: b })),
            (n.checkpoints || []).map((c) => h("span", { class: "badge checkpoint", text: `⚑ ${c}` }))),
          h("span", { class: "muted clip", text: n.snippet || "…" }))))));
  }
  await render();
}
