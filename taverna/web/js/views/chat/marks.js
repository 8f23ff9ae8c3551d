// The marks set among the chat's messages: where the last reply's prompt began (the
// "context cut" line), forks in the middle (other candidates that messages follow), and the
// summaries' marks.

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { t } from "../../i18n.js";
import { markSummaries } from "../summary.js";

/** The marks of the messages in `list`; `itemOf(id)` is a held message's <li>. */
export function messageMarks(store, chat, list, itemOf) {
  const { state } = store;

  // Forks in the middle: at a message with other candidates that messages follow, a note
  // says how many and offers to go there (a switch there is not a loss). Read in one
  // request for the held messages, kept until the chat's next revision.
  const forks = { revision: null, byId: new Map(), asked: new Set() };

  function placeForkNotes() {
    if (!state.chat) return;
    if (forks.revision !== state.chat.revision) {
      forks.revision = state.chat.revision;
      forks.byId.clear();
      forks.asked.clear();
    }
    const missing = [];
    for (const m of store.held()) {
      if (m.candidate_count < 2) continue;
      if (forks.byId.has(m.id)) forkNote(m);
      else if (!forks.asked.has(m.id)) missing.push(m.id);
    }
    if (!missing.length) return;
    for (const id of missing) forks.asked.add(id);
    const revision = state.chat.revision;
    api.get(`${chat.url}/forks?ids=${missing.map(encodeURIComponent).join(",")}`).then((found) => {
      if (state.closed || forks.revision !== revision) return;
      for (const [id, candidates] of Object.entries(found)) forks.byId.set(id, candidates);
      for (const id of missing) {
        const m = state.byId.get(id);
        if (m) forkNote(m);
      }
    }).catch(() => {});
  }

  function forkNote(m) {
    const li = itemOf(m.id);
    if (!li) return;
    li.querySelector(".fork-note")?.remove();
    const others = (forks.byId.get(m.id) || []).filter((c) => !c.on_path && c.follow > 0);
    if (!others.length) return;
    li.querySelector(".bubble").append(h("div", { class: "fork-note", role: "note" },
      others.slice(0, 3).map((c) => h("p", {},
        h("span", { text: t("chat.fork_follow", { n: c.follow, k: c.index }) }), " ",
        h("button", {
          type: "button",
          class: "small fork-go",
          text: t("chat.fork_go", { k: c.index }),
          disabled: state.task ? "disabled" : null,
          onClick: () => chat.choose(m, c.index),
        })))));
  }

  // The "context cut" line: where the last reply's prompt began, as recorded when it was
  // sent (no prompt is built for it).
  async function loadContextLine() {
    try {
      const found = await api.get(`${chat.url}/context`);
      state.contextCut = found.first_message_in_context;
    } catch {
      state.contextCut = null;
    }
    placeContextLine();
    loadSummaryMarks();
  }

  // The summaries' marks: the message each belongs to, the messages one keeps out of the prompt.
  async function loadSummaryMarks() {
    try {
      state.summaries = await api.get(`${chat.url}/summary`);
    } catch {
      state.summaries = null;
    }
    markSummaries(list, state.summaries);
  }

  function placeContextLine() {
    list.querySelectorAll(".context-line").forEach((el) => el.remove());
    const cut = state.contextCut && state.byId.get(state.contextCut);
    if (!cut || cut.position === 0) return;
    itemOf(cut.id)?.before(h("li", { class: "context-line", role: "separator", "aria-label": t("chat.context_cut") },
      h("span", { text: t("chat.context_cut") })));
  }

  return { placeForkNotes, placeContextLine, loadContextLine, loadSummaryMarks };
}
