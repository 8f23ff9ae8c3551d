// What a run tells of itself before its reply streams: while it waits for other replies'
// prompts to be built, a "queued" note (how many go before it) after the stream; once the
// person's message is stored, the path's end is read again to show it (the start answered
// with the run and its place only).

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { t } from "../../i18n.js";

// Messages read from the end of the path.
const PAGE = 50;

/** The run's status verbs; `placeStreamItem` puts the reply being written back at the end. */
export function runStatus(store, chat, list, placeStreamItem) {
  const { state } = store;
  const listEl = list.element;

  /** The "queued" note after the stream, while the run waits for its prompt to be built. */
  function placeQueued() {
    listEl.querySelector("#queued")?.remove();
    const ahead = state.task?.queued;
    if (ahead == null) return;
    const words = ahead > 0 ? t("chat.queued", { n: ahead }) : t("chat.queued_now");
    list.placeAtEnd(h("li", { class: "queued-note muted", id: "queued", role: "status", text: words }));
  }

  /** Read the path's end (the message the run's start stored, the buttons it changed) as a
   * change: from message `below` (null: the whole window), else from the message before
   * the last one held. */
  async function readEnd(below) {
    const task = state.task;
    const shown = store.held();
    const anchor = below === undefined ? shown[shown.length - 2]?.id : below;
    if (!anchor || store.hasNewer() || !state.byId.has(anchor)) {
      await chat.load();
      placeStreamItem();
      return;
    }
    const page = await api.get(`${chat.url}?limit=${PAGE}&after=${encodeURIComponent(anchor)}`).catch(() => null);
    // a run that ended meanwhile has read the end itself, and told its end after it
    if (state.task !== task) return;
    if (!page || page.window.has_newer) await chat.load();
    else list.apply(page, "change");
    // the reply being written stays after the messages
    placeStreamItem();
  }

  function told(data) {
    if (!state.task) return;
    if (data.type === "Queued") state.task.queued = data.ahead;
    else if (data.type === "Started") {
      state.task.queued = null;
      state.task.started = true;
    } else if (data.type === "Posted") readEnd();
    placeQueued();
  }

  return { place: placeQueued, readEnd, told };
}
