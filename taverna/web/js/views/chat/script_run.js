// STscript run in the chat: a typed `/` line, or a Quick Reply's script. The server runs it
// and writes its messages and variables; its notices show as toasts.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { t } from "../../i18n.js";

/** `runScript` and `followUp`; `chat.composer` is the input a script reads and empties. */
export function scriptRunner(store, chat) {
  const { state } = store;

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

  return { runScript, followUp };
}
