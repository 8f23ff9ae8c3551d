// The chat's header: its title (a click renames it), the branch picker, and the chat-wide
// actions: the tree, the chat's settings, search in the chat, undo and redo, the inspector.

import { api } from "../../api.js";
import { h, iconButton, mount, toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { branchLabel } from "../../labels.js";
import { openChatSettings } from "../chat_settings.js";
import { openInspector } from "../inspector.js";
import { openChatSearch } from "../search.js";
import { openTree } from "../tree.js";

/** The header and `showFacts(facts)`, which shows the chat's title and branches as read. */
export function chatHeader(store, chat) {
  const { state } = store;
  const titleText = h("span", { class: "chat-title-text", translate: "no" });
  const title = h("h1", { class: "chat-title" }, h("button", {
    type: "button",
    class: "link chat-rename",
    id: "rename-chat",
    title: t("chat.rename"),
    onClick: () => renameChat(),
  }, titleText));
  const branchSelect = h("select", { "aria-label": t("chat.branches"), class: "branch-select" });
  // The actions that write need the chat's revision: they wait, disabled, for its first read.
  const chatActions = [
    iconButton(t("tree.open"), "branch", () => openTree(chat.id, state.chat.revision, (answer) => {
      if (!answer) return chat.changedElsewhere();
      chat.apply(answer);
      chat.loadContextLine();
    }), { attrs: { id: "open-tree" } }),
    iconButton(t("settings.title"), "note", () => openChatSettings(chat.id, state.chat.revision, (change) => {
      if (!change) return chat.changedElsewhere();
      chat.apply(change);
      if (change.quickReplies) chat.loadQuickReplies();
      if (change.summary) chat.loadSummaryMarks();
    }), { attrs: { id: "open-settings" } }),
    iconButton(t("search.in_chat"), "search", () => openChatSearch(chat.id, chat.showHit), { attrs: { id: "open-search" } }),
    iconButton(t("chat.undo"), "undo", () => history("undo")),
    iconButton(t("chat.redo"), "redo", () => history("redo")),
  ];
  for (const button of chatActions) button.disabled = true;
  const header = h(
    "div",
    { class: "chat-header" },
    h("a", { href: "#/chats", class: "back", "aria-label": t("chat.back"), title: t("chat.back"), text: "‹" }),
    title,
    branchSelect,
    ...chatActions,
    iconButton(t("chat.inspector"), "inspect", () => openInspector(chat.id, null, store.labels()), { attrs: { id: "open-inspector" } }),
  );
  branchSelect.addEventListener("change", () =>
    chat.write(() => api.post(`${chat.url}/branches/${branchSelect.value}/switch`, { revision: state.chat.revision })));

  async function renameChat() {
    if (!state.chat) return;
    const name = prompt(t("chat.rename_prompt"), state.chat.title);
    if (name === null || !name.trim() || name.trim() === state.chat.title) return;
    const answer = await chat.write(() => api.patch(chat.url, { title: name.trim(), revision: state.chat.revision }));
    if (answer) toast(t("chat.renamed", { name: answer.title }));
  }

  async function history(step) {
    if (state.task) return;
    await chat.write(() => api.post(`${chat.url}/${step}`, { revision: state.chat.revision }));
  }

  function showBranches(branches) {
    // After a checkpoint was opened no branch is active: the picker says so and offers
    // every branch, which still ends where it did.
    const detached = branches.length > 0 && !branches.some((b) => b.active);
    mount(branchSelect,
      detached ? h("option", { value: "", selected: "selected", disabled: "disabled", text: t("chat.no_branch") }) : null,
      branches.map((b) =>
        h("option", { value: b.id, selected: b.active ? "selected" : null, translate: b.name === "main" ? null : "no", text: `${branchLabel(b.name)} (${b.length})` }),
      ));
    branchSelect.hidden = branches.length < 2 && !detached;
  }

  return {
    element: header,
    showFacts(facts) {
      for (const button of chatActions) button.disabled = false;
      titleText.textContent = facts.title;
      showBranches(facts.branches || []);
    },
  };
}
