// Going to a search hit in the chat: onto its branch, the page that holds it read, and the
// message brought into sight, marked a moment.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { readPage } from "./paging.js";

/** Go to message `hit` (a search hit): onto its path first when it is on another
 * branch, then read the page that starts with it and bring it into sight, marked.
 * `list` gives `apply`, `itemOf` and `rearm` (the paging's). */
export async function showHit(store, chat, list, hit) {
  const { state } = store;
  if (!hit.on_path) {
    const answer = await chat.write(() => api.post(`${chat.url}/messages/${hit.node_id}/show`, { revision: state.chat.revision }));
    if (!answer) return;
    // The path moved under the person: say so, and that the old one is kept.
    toast(t("search.switched_branch"));
  }
  if (!list.itemOf(hit.node_id)) {
    state.paging = true;
    try {
      if (hit.parent_id) {
        const page = await readPage(store, chat, `after=${encodeURIComponent(hit.parent_id)}`);
        if (!page) return;
        list.apply(page, "window");
      }
      // The first message of a long chat: read back page by page until it is there.
      while (!list.itemOf(hit.node_id) && store.hasOlder()) {
        const page = await readPage(store, chat, `before=${encodeURIComponent(store.firstHeld().id)}`);
        if (!page) return;
        list.apply(page, "older");
      }
    } finally {
      state.paging = false;
      list.rearm();
    }
  }
  const item = list.itemOf(hit.node_id);
  if (!item) return toast(t("search.not_found"), "error");
  item.scrollIntoView({ block: "center" });
  item.classList.add("found");
  setTimeout(() => item.classList.remove("found"), 3000);
}
