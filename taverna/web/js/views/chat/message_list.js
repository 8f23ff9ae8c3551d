// The chat's messages: the window of the active path the store holds, drawn by key (message
// id → its <li>, messageItems), and paged by cursor as the person scrolls (cursorPaging).

import { h } from "../../dom.js";
import { chatJumps } from "./jumps.js";
import { messageMarks } from "./marks.js";
import { messageItems } from "./message_items.js";
import { cursorPaging } from "./paging.js";
import { showHit } from "./search_hit.js";

// The most messages kept in the page at once: farther ones are dropped and read again by
// cursor, so a long chat keeps a small DOM.
const HELD = 100;

/** The list and its verbs; `chat` gives the other parts' verbs (takeFacts, placeStreamItem...). */
export function messageList(store, chat) {
  const { state } = store;
  // The messages sit between two edges; an edge coming into sight reads the next page.
  const olderEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "older" });
  const newerEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "newer" });
  const list = h("ol", { class: "messages", id: "chat-messages", "aria-live": "off" }, olderEdge, newerEdge);
  const atBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight < 48;
  const scrollToEnd = () => {
    list.scrollTop = list.scrollHeight;
  };
  const items = messageItems(store, chat, list, olderEdge);
  const marks = messageMarks(store, chat, list, items.itemOf);

  /**
   * The one way a server answer reaches the page: merge it into the state, then bring the list
   * in line by key (message id → its <li>). `answer` is a chat: its own facts, and a run of
   * consecutive messages from `window.start`. `joins` says where the run goes:
   *   "change"  the path may differ from the run's start on: the held messages from there
   *             are replaced (a write's answer: `window.changed_from`)
   *   "window"  the run is shown instead of what was held (opening, a reload, a write that
   *             reached further back than one window)
   *   "older" / "newer"  a page read by cursor, just before / after the held messages
   * A held message keeps its <li> unless the answer replaced it or its place changed what it
   * shows (the last reply has more buttons): a change at one message redraws that message
   * and those after it, nothing else. An answer without messages only moves the revision on.
   */
  function apply(answer, joins = answer.window?.changed_from == null ? "window" : "change") {
    if (!answer.messages) {
      state.chat.revision = answer.revision;
      return;
    }
    const stick = joins === "window" || (joins === "change" && atBottom());
    const before = store.held();
    const kept = new Set(before);
    chat.takeFacts(answer);
    const now = merged(before, answer.messages, answer.window.start, joins, !!state.task);
    // The first message that stays keeps its place on the screen while others come and go.
    const anchor = items.itemOf(now.find((m) => kept.has(m))?.id);
    const anchorTop = anchor?.getBoundingClientRect().top;
    state.order = now.map((m) => m.id);
    state.byId = new Map(now.map((m) => [m.id, m]));
    items.drawHeld(kept);
    marks.placeForkNotes();
    if (joins === "window" && state.task) chat.placeStreamItem();
    marks.placeContextLine();
    store.update();
    // Keep in sight what the person was looking at: the end, or the first message kept.
    if (stick) scrollToEnd();
    else if (anchor?.isConnected) list.scrollTop += anchor.getBoundingClientRect().top - anchorTop;
    paging.rearm();
  }

  const paging = cursorPaging(store, chat, {
    element: list,
    olderEdge,
    newerEdge,
    apply,
    loadContextLine: marks.loadContextLine,
  });
  // Home / End and the rail that stands for the whole chat.
  const jumps = chatJumps(store, chat, { element: list, apply, rearm: paging.rearm, itemOf: items.itemOf, scrollToEnd });
  store.subscribe(jumps.update);

  return {
    element: list,
    rail: jumps.element,
    apply,
    refreshEnd: paging.refreshEnd,
    showHit: (hit) => showHit(store, chat, { apply, itemOf: items.itemOf, rearm: paging.rearm }, hit),
    loadContextLine: marks.loadContextLine,
    loadSummaryMarks: marks.loadSummaryMarks,
    itemOf: items.itemOf,
    /** Draw message `id` again as held (an edit given up). */
    redrawHeld(id) {
      const shown = state.byId.get(id);
      if (shown) items.redraw(shown);
    },
    /** Put `li` (the streaming reply, a failure) after the last message. */
    placeAtEnd: (li) => newerEdge.before(li),
    scrollToEnd,
    /** Run `change` and keep the list's end in sight if it was (a notice taking room). */
    keepingEnd(change) {
      const stick = atBottom();
      change();
      if (stick) scrollToEnd();
    },
    disconnect() {
      paging.disconnect();
      jumps.disconnect();
    },
  };
}

/** The messages held after an answer (see `apply`), from those held before and its run;
 * while a reply is written (`busy`) none is dropped. */
function merged(before, run, start, joins, busy) {
  if (joins === "window") return run;
  if (joins === "older") {
    const now = [...run, ...before];
    // The far end goes (read again by cursor when scrolled back to).
    return busy ? now : now.slice(0, HELD);
  }
  if (joins === "newer") return [...before, ...run].slice(-HELD);
  const kept = before.filter((m) => m.position < start);
  // Held messages that stop short of `start` (the far end was dropped): the change is out
  // of sight and is read again when the person scrolls there.
  const last = kept[kept.length - 1];
  return !last || last.position === start - 1 ? [...kept, ...run] : kept;
}
