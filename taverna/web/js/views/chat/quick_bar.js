// Quick Replies in the chat: a button per reply of the chat's active sets, above the input,
// and the replies set to run on a trigger or on a lorebook entry's automation id (their
// STscript runs through script_run.js, as a typed `/` line's does).

import { api } from "../../api.js";
import { h, mount } from "../../dom.js";
import { t } from "../../i18n.js";
import { scriptRunner } from "./script_run.js";

/** The bar and its verbs; `chat.composer` is the input a script reads and empties. */
export function quickBar(store, chat) {
  const { state } = store;
  const bar = h("div", { class: "quick-replies", role: "toolbar", "aria-label": t("qr.bar"), hidden: true });
  const { runScript, followUp } = scriptRunner(store, chat);
  let quickReplies = [];

  async function loadQuickReplies() {
    try {
      quickReplies = (await api.get(`${chat.url}/quick-replies`)).replies;
    } catch {
      quickReplies = [];
    }
    const shown = quickReplies.filter((r) => !r.hidden);
    mount(bar, shown.map((r) => h("button", {
      type: "button",
      class: "small quick-reply",
      title: r.title || r.message,
      "data-set": r.set,
      text: r.label || `${r.set} #${r.id}`,
      onClick: () => runQuickReply(r.message),
    })));
    bar.hidden = shown.length === 0;
    store.update();
  }

  /** Run, one after another, the Quick Replies set to run on `trigger` (chat_change, user,
   * ai); a reply one of them asks for starts after them all. */
  async function runTriggered(...triggers) {
    let next = null;
    for (const trigger of triggers) {
      for (const reply of quickReplies.filter((r) => r.triggers.includes(trigger))) {
        if (!reply.message.trim().startsWith("/")) continue;
        next = (await runScript(reply.message.trim(), false)) || next;
      }
    }
    await followUp(next);
  }

  /** After a reply: the Quick Replies whose automation id matches a lorebook entry that
   * went into its prompt, in the entries' order. */
  async function runAutomations() {
    const wanted = quickReplies.filter((r) => r.automation_id);
    const last = store.lastHeld();
    if (!wanted.length || !last || last.role !== "assistant") return;
    let ids = [];
    try {
      ids = await api.get(`${chat.url}/messages/${encodeURIComponent(last.id)}/automations`);
    } catch {
      return;
    }
    let next = null;
    for (const id of ids) {
      for (const reply of wanted.filter((r) => r.automation_id === id)) {
        if (reply.message.trim().startsWith("/")) next = (await runScript(reply.message.trim(), false)) || next;
      }
    }
    await followUp(next);
  }

  /** Run a Quick Reply's script (or send its text when it is not a script). */
  async function runQuickReply(message) {
    if (state.task || !state.chat) return;
    if (!message.trim().startsWith("/")) {
      chat.composer.input.value = message;
      return chat.generate("normal");
    }
    await followUp(await runScript(message.trim(), false));
  }

  // The buttons follow the run: none works while a reply is written.
  store.subscribe(() => {
    const busy = !!state.task || !state.chat;
    for (const button of bar.querySelectorAll("button")) button.disabled = busy;
  });

  return { element: bar, load: loadQuickReplies, runTriggered, runAutomations, runScript, followUp };
}
