// Paging the chat by cursor: an edge of the list coming into sight reads the next page, and
// a search hit or the end of a generation reads the page it needs.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { t } from "../../i18n.js";

// Messages per page read from the server.
const PAGE = 50;

/** The list's paging; `list` gives its element, edges, `apply`, `itemOf` and `loadContextLine`. */
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
        list.loadContextLine();
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
    if (!list.itemOf(hit.node_id)) {
      state.paging = true;
      try {
        if (hit.parent_id) {
          const page = await readPage(`after=${encodeURIComponent(hit.parent_id)}`);
          if (!page) return;
          apply(page, "window");
        }
        // The first message of a long chat: read back page by page until it is there.
        while (!list.itemOf(hit.node_id) && store.hasOlder()) {
          const page = await readPage(`before=${encodeURIComponent(store.firstHeld().id)}`);
          if (!page) return;
          apply(page, "older");
        }
      } finally {
        state.paging = false;
        rearm();
      }
    }
    const item = list.itemOf(hit.node_id);
    if (!item) return toast(t("search.not_found"), "error");
    item.scrollIntoView({ block: "center" });
    item.classList.add("found");
    setTimeout(() => item.classList.remove("found"), 3000);
  }

  return { rearm, refreshEnd, showHit, disconnect: () => edges.disconnect() };
}
