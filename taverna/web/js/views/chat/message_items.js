// The chat's messages as <li>s, drawn by key (message id → its <li>): a held message keeps
// its <li> until the server sends it again or its place changes what it shows.

import { messageItem } from "./message.js";

/** The drawn items after `olderEdge`; `drawHeld(kept)` brings them in line with the store. */
export function messageItems(store, chat, list, olderEdge) {
  const { state } = store;
  const drawn = new Map(); // message id -> its <li>

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

  return { drawHeld, redraw, itemOf: (id) => drawn.get(id) };
}
