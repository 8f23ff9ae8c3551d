// Going anywhere in a long chat at once. The list holds a window of the path, so its own
// scrollbar spans only that window: beside it a rail stands for the whole chat, its thumb
// at the place of the messages in sight; a drag or a tap on the rail reads the page at that
// place. Home and End (and the rail's two buttons) go to the first and the last message.

import { h, iconButton } from "../../dom.js";
import { t } from "../../i18n.js";
import { readPage } from "./paging.js";

// While the thumb is dragged, the page under it is read once it rests this long (ms); a drop
// reads at once.
const DRAG_REST = 120;
// The thumb's smallest height (px), so a thumb of a long chat can still be taken.
const THUMB_MIN = 28;

const typing = (el) => el instanceof Element && !!el.closest("input, textarea, select, [contenteditable=''], [contenteditable=true], dialog, .drawer");

/** Where the list's view is in the whole chat, and how the rail's thumb stands for it. */
function railGeometry(store, list, track) {
  const { state } = store;

  /** The position of the message at the top of the list's view, with its fraction. */
  function placeInView() {
    const held = store.held();
    if (!held.length) return 0;
    const el = list.element;
    const share = el.scrollHeight > 0 ? el.scrollTop / el.scrollHeight : 0;
    return held[0].position + share * held.length;
  }

  /** How many messages the list's view shows, about. */
  function inSight() {
    const el = list.element;
    const held = store.held().length;
    return el.scrollHeight > 0 ? Math.min(held, (el.clientHeight / el.scrollHeight) * held) : held;
  }

  /** The thumb's height in the track, and how far down it can go. */
  function thumbSpan() {
    const room = track.clientHeight;
    const height = Math.max(THUMB_MIN, Math.min(room, (inSight() / Math.max(1, state.total)) * room));
    return { height, travel: Math.max(0, room - height) };
  }

  return { placeInView, inSight, thumbSpan };
}

/** `jumpTo(position | "end")`: read the page from there unless it is held, and bring that
 * message to the top of the view (the end: the last one into sight). Positions asked for
 * while a read is under way are coalesced: only the latest is drawn. */
function jumper(store, chat, list, update) {
  const { state } = store;
  let busy = null; // the read under way
  let wanted = null; // a position asked for while one was read

  async function reach(goal) {
    const held = store.held();
    const atEnd = goal === "end" || goal >= state.total - 1;
    const inHeld = held.length && (atEnd ? !store.hasNewer() : held[0].position <= goal && goal <= held[held.length - 1].position);
    if (!inHeld) {
      state.paging = true;
      try {
        const page = await readPage(store, chat, atEnd ? "" : `at=${Math.max(0, Math.floor(goal))}`);
        // Another place was asked for meanwhile (the thumb moved on): that one is drawn.
        if (!page || wanted !== null) return;
        list.apply(page, "window");
      } finally {
        state.paging = false;
      }
    }
    if (atEnd) list.scrollToEnd();
    else {
      const target = store.held().find((m) => m.position >= goal);
      const item = target && list.itemOf(target.id);
      if (item) list.element.scrollTop += item.getBoundingClientRect().top - list.element.getBoundingClientRect().top;
    }
    update();
    list.rearm();
  }

  return async function jumpTo(position) {
    wanted = position;
    if (busy) return busy;
    busy = (async () => {
      try {
        while (wanted !== null) {
          const goal = wanted;
          wanted = null;
          await reach(goal);
        }
      } finally {
        busy = null;
      }
    })();
    return busy;
  };
}

/** A drag of the thumb (or a press on the track) maps the thumb's top to the first message
 * in sight: at the track's top the chat's first message, at its bottom its end. Gives
 * `dragging()`, true while the pointer holds the thumb. */
function thumbDrag(track, thumb, geometry, state, jumpTo) {
  let dragging = false;
  let grab = 0; // where in the thumb the pointer took it (px)
  let resting = null; // the read once the dragged thumb rests
  function follow(event) {
    const box = track.getBoundingClientRect();
    const { travel } = geometry.thumbSpan();
    const top = Math.min(travel, Math.max(0, event.clientY - box.top - grab));
    thumb.style.transform = `translateY(${top}px)`;
    const share = travel > 0 ? top / travel : 0;
    const position = share >= 1 ? "end" : Math.floor(share * Math.max(0, state.total - geometry.inSight()));
    clearTimeout(resting);
    if (event.type === "pointermove") resting = setTimeout(() => jumpTo(position), DRAG_REST);
    else jumpTo(position);
  }
  track.addEventListener("pointerdown", (event) => {
    dragging = true;
    const held = thumb.getBoundingClientRect();
    const onThumb = event.clientY >= held.top && event.clientY <= held.bottom;
    grab = onThumb ? event.clientY - held.top : held.height / 2;
    track.setPointerCapture?.(event.pointerId);
    event.preventDefault();
    // Taken by the thumb, nothing moved yet; a press on the track goes there.
    if (!onThumb) follow(event);
  });
  track.addEventListener("pointermove", (event) => {
    if (dragging) follow(event);
  });
  const drop = (event) => {
    if (!dragging) return;
    dragging = false;
    follow(event);
  };
  track.addEventListener("pointerup", drop);
  track.addEventListener("pointercancel", drop);
  return { dragging: () => dragging };
}

/** Home and End anywhere in the chat but in a field (there they move the caret); gives the
 * listener, to be removed when the chat closes. */
function homeEndKeys(toFirst, toLast) {
  function onKey(event) {
    if (event.defaultPrevented || event.altKey || event.metaKey || event.shiftKey || typing(event.target)) return;
    if (event.key !== "Home" && event.key !== "End") return;
    event.preventDefault();
    if (event.key === "Home") toFirst();
    else toLast();
  }
  document.addEventListener("keydown", onKey);
  return onKey;
}

/** The rail and its verbs. `list` gives `element`, `apply`, `rearm`, `itemOf` and
 * `scrollToEnd` (the message list's). */
export function chatJumps(store, chat, list) {
  const { state } = store;
  const thumb = h("div", { class: "rail-thumb" });
  const track = h("div", {
    class: "rail-track",
    role: "scrollbar",
    "aria-orientation": "vertical",
    "aria-controls": "chat-messages",
    "aria-label": t("chat.rail"),
    "aria-valuemin": "0",
    tabindex: "-1",
  }, thumb);
  const first = iconButton(t("chat.to_first"), "first", () => toFirst(), { attrs: { id: "to-first" } });
  const last = iconButton(t("chat.to_last"), "last", () => toLast(), { attrs: { id: "to-last" } });
  const element = h("div", { class: "chat-rail", hidden: true }, first, track, last);
  const geometry = railGeometry(store, list, track);

  /** Put the thumb where the messages in sight are in the whole chat: its top is the first
   * message in sight, as a share of the places a view can start at. */
  function update() {
    const total = state.total;
    const held = store.held().length;
    element.hidden = !held || total <= held;
    if (element.hidden) return;
    const { height, travel } = geometry.thumbSpan();
    const share = Math.min(1, geometry.placeInView() / Math.max(1, total - geometry.inSight()));
    thumb.style.height = `${height}px`;
    thumb.style.transform = `translateY(${share * travel}px)`;
    track.setAttribute("aria-valuemax", String(total - 1));
    track.setAttribute("aria-valuenow", String(Math.floor(geometry.placeInView())));
  }

  const jumpTo = jumper(store, chat, list, update);
  const toFirst = () => jumpTo(0);
  const toLast = () => jumpTo("end");
  const drag = thumbDrag(track, thumb, geometry, state, jumpTo);
  const onKey = homeEndKeys(toFirst, toLast);
  list.element.addEventListener("scroll", () => {
    if (!drag.dragging()) update();
  }, { passive: true });
  const resized = new ResizeObserver(() => update());
  resized.observe(track);

  return {
    element,
    update,
    jumpTo,
    disconnect() {
      document.removeEventListener("keydown", onKey);
      resized.disconnect();
    },
  };
}
