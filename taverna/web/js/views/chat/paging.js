// Paging the chat by cursor: an edge of the list coming into sight reads the next page, and
// the end of a generation reads the path's end again.

import { api } from "../../api.js";

// Messages per page read from the server.
const PAGE = 50;

/** The list's paging; `list` gives its element, edges, `apply` and `loadContextLine`. */
export function cursorPaging(store, chat, list) {
  const { state } = store;
  const { olderEdge, newerEdge, apply } = list;
  const edges = new IntersectionObserver((seen) => {
    for (const entry of seen) {
      if (!entry.isIntersecting) continue;
      loadPage(entry.target === olderEdge ? "older" : "newer");
    }
  }, { root: list.element, rootMargin: "400px 0px" });
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

  /** Read the page just before ("older") or after ("newer") the held messages. */
  async function loadPage(side) {
    const older = side === "older";
    if (state.paging || state.closed || !(older ? store.hasOlder() : store.hasNewer())) return;
    state.paging = true;
    const edge = () => (older ? store.firstHeld() : store.lastHeld());
    try {
      const from = edge();
      const page = await readPage(store, chat, `${older ? "before" : "after"}=${encodeURIComponent(from.id)}`);
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
        list.loadContextLine();
        chat.loadDrafts();
      }
      return true;
    } catch {
      return false;
    }
  }


  return { rearm, refreshEnd, disconnect: () => edges.disconnect() };
}

/** The page of the chat's path `query` names (`before=id` / `after=id`); null when the chat
 * changed elsewhere meanwhile (it is then read again). */
export async function readPage(store, chat, query) {
  const page = await api.get(`${chat.url}?limit=${PAGE}&${query}`);
  if (page.revision !== store.state.chat.revision) {
    await chat.changedElsewhere();
    return null;
  }
  return page;
}
