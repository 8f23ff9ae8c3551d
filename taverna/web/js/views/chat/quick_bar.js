// Quick Replies in the chat: a button per reply of the chat's active sets, above the input;
// the replies set to run on a trigger or on a lorebook entry's automation id; and the
// STscript runs they (and a typed `/` line) make.

import { api } from "../../api.js";
import { h, mount, toast } from "../../dom.js";
import { t } from "../../i18n.js";

/** The bar and its verbs; `chat.composer` is the input a script reads and empties. */
export function quickBar(store, chat) {
  const { state } = store;
  const bar = h("div", { class: "quick-replies", role: "toolbar", "aria-label": t("qr.bar"), hidden: true });
  let quickReplies = [];

  /** Run an STscript (a line starting with `/`) in the chat: its messages and variables are
   * written by the server; its notices show as toasts; a reply it asks for starts after it.
   * Returns the reply kind to start (or null). */
  async function runScript(text, fromInput = true) {
    const { input } = chat.composer;
    const answer = await chat.send(
      () => api.post(`${chat.url}/script`, { text, revision: state.chat.revision, input: fromInput ? "" : input.value }),
      fromInput ? t("kept.message") : t("kept.page"),
      fromInput ? t("kept.message") : "",
    );
    if (!answer) return null;
    if (fromInput) input.value = "";
    // `/setinput` puts its text in the input box, as SillyTavern's does.
    if (answer.input !== null && answer.input !== undefined) input.value = answer.input;
    if (fromInput || answer.input != null) chat.composer.keepUnsent();
    chat.apply(answer.chat);
    chat.loadContextLine();
    for (const notice of answer.notices) toast(notice.text, ["error", "warning"].includes(notice.severity) ? notice.severity : "info");
    return answer.follow_up || null;
  }

  /** Start the reply a script asked for ("trigger": a normal one). */
  async function followUp(next) {
    if (next) await chat.generate(next === "trigger" ? "normal" : next);
  }

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
