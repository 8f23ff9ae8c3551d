// The chat's reads and writes. A write states the revision it read; a stale one (409) shows
// the chat as it is now instead, and says so; any other failure is told with what was kept.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";

/** The reads and writes of the chat at `chat.url`; answers go through `chat.apply`. */
export function chatServer(store, chat) {
  const { state } = store;
  let reloading = null;
  let toldAt = 0;

  async function load() {
    chat.apply(await api.get(chat.url), "window");
    if (state.chat.task && (!state.task || state.task.id !== state.chat.task.id)) chat.attach(state.chat.task);
    chat.loadContextLine();
    chat.loadDrafts();
  }

  /** A write or a page met a newer revision: show the chat as it is now, and say so
   * (once: a page read and a write can meet the same change together). */
  function changedElsewhere(kept = "") {
    reloading ??= (async () => {
      try {
        await load();
        if (Date.now() - toldAt > 3000) toast(`${t("chat.changed_elsewhere")} ${kept}`.trim(), "error");
        toldAt = Date.now();
      } finally {
        reloading = null;
      }
    })();
    return reloading;
  }

  /** Send a write: its answer, or null when it failed. A stale revision shows the chat as it
   * is now instead; any failure is told with what was kept (`kept`, or `keptOnReload` when
   * the chat was read again, which redraws its messages). */
  async function send(request, kept = t("kept.page"), keptOnReload = "") {
    try {
      return await request();
    } catch (error) {
      if (error.status === 409) await changedElsewhere(keptOnReload);
      else reportError(error, kept);
      return null;
    }
  }

  /** Send a write and apply its answer (null when it failed, as `send` tells). */
  async function write(request, kept = t("kept.page"), keptOnReload = "") {
    const answer = await send(request, kept, keptOnReload);
    if (answer) {
      chat.apply(answer);
      chat.loadContextLine();
    }
    return answer;
  }

  // Read the chat again, waiting for the server to answer if it is restarting.
  async function recover() {
    for (let attempt = 0; attempt < 120 && !state.closed; attempt += 1) {
      try {
        await load();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  return { load, changedElsewhere, send, write, recover, isReloading: () => reloading !== null };
}
