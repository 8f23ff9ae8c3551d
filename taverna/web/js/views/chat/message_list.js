// The chat's messages: the window of the active path the store holds, drawn by key (message
// id → its <li>), and paged by cursor as the person scrolls.

import { api } from "../../api.js";
import { h, toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { messageMarks } from "./marks.js";
import { messageItem } from "./message.js";

// Messages per page read from the server, and the most kept in the page at once: farther
// ones are dropped and read again by cursor, so a long chat keeps a small DOM.
const PAGE = 50;
const HELD = 100;

/** The list and its verbs; `chat` gives the other parts' verbs (takeFacts, placeStreamItem...). */
export function messageList(store, chat) {
  const { state } = store;
  const drawn = new Map(); // message id -> its <li>
  // The messages sit between two edges; an edge coming into sight reads the next page.
  const olderEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "older" });
  const newerEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "newer" });
  const list = h("ol", { class: "messages", "aria-live": "off" }, olderEdge, newerEdge);
  const atBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight < 48;
  const scrollToEnd = () => {
    list.scrollTop = list.scrollHeight;
  };
  const marks = messageMarks(store, chat, list, (id) => drawn.get(id));

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
    const now = merged(before, answer.messages, answer.window.start, joins);
    // The first message that stays keeps its place on the screen while others come and go.
    const anchor = drawn.get(now.find((m) => kept.has(m))?.id);
    const anchorTop = anchor?.getBoundingClientRect().top;
    state.order = now.map((m) => m.id);
    state.byId = new Map(now.map((m) => [m.id, m]));
    drawHeld(kept);
    marks.placeForkNotes();
    if (joins === "window" && state.task) chat.placeStreamItem();
    marks.placeContextLine();
    store.update();
    // Keep in sight what the person was looking at: the end, or the first message kept.
    if (stick) scrollToEnd();
    else if (anchor?.isConnected) list.scrollTop += anchor.getBoundingClientRect().top - anchorTop;
    rearm();
  }

  /** The messages held after an answer (see `apply`), from those held before and its run. */
  function merged(before, run, start, joins) {
    if (joins === "window") return run;
    if (joins === "older") {
      const now = [...run, ...before];
      // The far end goes (read again by cursor when scrolled back to).
      return state.task ? now : now.slice(0, HELD);
    }
    if (joins === "newer") return [...before, ...run].slice(-HELD);
    const kept = before.filter((m) => m.position < start);
    // Held messages that stop short of `start` (the far end was dropped): the change is out
    // of sight and is read again when the person scrolls there.
    const last = kept[kept.length - 1];
    return !last || last.position === start - 1 ? [...kept, ...run] : kept;
  }

  /** Bring the list's <li>s in line with the held messages, in path order. `kept`: the
   * message objects held before the answer; another object (new, or sent again) is drawn. */
  function drawHeld(kept) {
    list.querySelectorAll(".context-line").forEach((el) => el.remove());
    for (const [id, li] of drawn) {
      if (!kept.has(state.byId.get(id))) {
        li.remove();
        drawn.delete(id);
      }
    }
    let previous = olderEdge;
    for (const m of store.held()) {
      let li = drawn.get(m.id);
      if (li && li.dataset.last !== (store.isLastReply(m) ? "1" : "0")) li = redraw(m);
      li ??= draw(m);
      if (previous.nextElementSibling !== li) previous.after(li);
      previous = li;
    }
  }

  function redraw(m) {
    const old = drawn.get(m.id);
    const fresh = draw(m);
    if (old) old.replaceWith(fresh);
    return fresh;
  }

  function draw(m) {
    const li = messageItem(m, { isLast: store.isLastReply(m), busy: !!state.task, facts: state.chat, chat });
    drawn.set(m.id, li);
    return li;
  }

  // The message buttons follow the run: none works while a reply is written.
  store.subscribe(() => {
    const busy = !!state.task || !state.chat;
    for (const button of list.querySelectorAll("li.message:not(#streaming) button")) {
      button.disabled = busy || button.dataset.off === "1";
    }
  });

  // ------------------------------------------------------------ paging by cursor

  const edges = new IntersectionObserver((seen) => {
    for (const entry of seen) {
      if (!entry.isIntersecting) continue;
      loadPage(entry.target === olderEdge ? "older" : "newer");
    }
  }, { root: list, rootMargin: "400px 0px" });
  edges.observe(olderEdge);
  edges.observe(newerEdge);

  // Observing again reports the edges' current state: a page that did not fill the
  // screen leads straight to the next one.
  function rearm() {
    for (const edge of [olderEdge, newerEdge]) {
      edges.unobserve(edge);
      edges.observe(edge);
    }
  }

  async function readPage(query) {
    const page = await api.get(`${chat.url}?limit=${PAGE}&${query}`);
    if (page.revision !== state.chat.revision) {
      await chat.changedElsewhere();
      return null;
    }
    return page;
  }

  /** Read the page just before ("older") or after ("newer") the held messages. */
  async function loadPage(side) {
    const older = side === "older";
    if (state.paging || state.closed || !(older ? store.hasOlder() : store.hasNewer())) return;
    state.paging = true;
    const edge = () => (older ? store.firstHeld() : store.lastHeld());
    try {
      const from = edge();
      const page = await readPage(`${older ? "before" : "after"}=${encodeURIComponent(from.id)}`);
      if (page && edge() === from) apply(page, side);
    } finally {
      state.paging = false;
      rearm();
    }
  }

  /** After a generation: read the end of the path again from the message before the last
   * one (a reply was added, swapped or grown there), and the drafts. False if it failed. */
  async function refreshEnd() {
    try {
      const shown = store.held();
      if (store.hasNewer() || shown.length < 2) {
        await chat.load();
        return true;
      }
      const anchor = shown[shown.length - 2];
      const page = await api.get(`${chat.url}?limit=${PAGE}&after=${encodeURIComponent(anchor.id)}`);
      if (page.window.has_newer) await chat.load();
      else {
        apply(page, "change");
        marks.loadContextLine();
        chat.loadDrafts();
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Go to message `hit` (a search hit): onto its path first when it is on another
   * branch, then read the page that starts with it and bring it into sight, marked. */
  async function showHit(hit) {
    if (!hit.on_path) {
      const answer = await chat.write(() => api.post(`${chat.url}/messages/${hit.node_id}/show`, { revision: state.chat.revision }));
      if (!answer) return;
    }
    if (!drawn.get(hit.node_id)) {
      state.paging = true;
      try {
        if (hit.parent_id) {
          const page = await readPage(`after=${encodeURIComponent(hit.parent_id)}`);
          if (!page) return;
          apply(page, "window");
        }
        // The first message of a long chat: read back page by page until it is there.
        while (!drawn.get(hit.node_id) && store.hasOlder()) {
          const page = await readPage(`before=${encodeURIComponent(store.firstHeld().id)}`);
          if (!page) return;
          apply(page, "older");
        }
      } finally {
        state.paging = false;
        rearm();
      }
    }
    const item = drawn.get(hit.node_id);
    if (!item) return toast(t("search.not_found"), "error");
    item.scrollIntoView({ block: "center" });
    item.classList.add("found");
    setTimeout(() => item.classList.remove("found"), 3000);
  }

  return {
    element: list,
    apply,
    refreshEnd,
    showHit,
    loadContextLine: marks.loadContextLine,
    loadSummaryMarks: marks.loadSummaryMarks,
    itemOf: (id) => drawn.get(id),
    /** Draw message `id` again as held (an edit given up). */
    redrawHeld(id) {
      const shown = state.byId.get(id);
      if (shown) redraw(shown);
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
    disconnect: () => edges.disconnect(),
  };
}
