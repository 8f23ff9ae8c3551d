// A reply being written, followed into the page: its stream drawn after the last message (or
// into the last one, for a continue; into the input box, for an impersonation), and what the
// run tells of itself meanwhile (runStatus).

import { followTask } from "../../api.js";
import { h } from "../../dom.js";
import { renderRich } from "../../rich.js";
import { runStatus } from "./run_status.js";
import { avatarFor, reasoningBlock } from "./message_parts.js";

/** The stream's verbs; `list` is the message list it is drawn into, `placeFailure` clears a
 * told failure, `finish(kind, data)` runs once the stream ends. */
export function replyStream(store, chat, list, { placeFailure, finish }) {
  const { state } = store;
  const listEl = list.element;
  const status = runStatus(store, chat, list, () => placeStreamItem());

  function streamItem() {
    const speaker = state.task?.speaker;
    const member = speaker && state.group?.members.find((m) => m.name === speaker);
    const char = member || (speaker && { name: speaker }) || state.chat.characters?.[0] || {};
    const body = h("div", { class: "content markdown", translate: "no", "aria-live": "polite", "aria-busy": "true" });
    renderRich(body, state.streamText || "…");
    return h("li", { class: "message assistant streaming", id: "streaming" },
      avatarFor({ role: "assistant", name: char.name, avatar_url: char.avatar_url }, state.chat),
      h("div", { class: "bubble" }, h("div", { class: "meta" }, h("span", { translate: "no", class: "name", text: char.name || "" })),
        reasoningBlock(state.reasoningText, true), body));
  }

  /** The streaming reply sits after the last message (a continue grows that one instead). */
  function placeStreamItem() {
    listEl.querySelector("#streaming")?.remove();
    if (state.task && !["impersonate", "continue"].includes(state.task.kind)) list.placeAtEnd(streamItem());
    status.place();
    updateStream();
  }

  function streamTarget() {
    if (state.task.kind === "continue") {
      const last = store.lastHeld() && list.itemOf(store.lastHeld().id);
      const content = last?.querySelector(".content");
      if (content) {
        last.classList.add("streaming");
        content.setAttribute("aria-busy", "true");
      }
      return content;
    }
    return listEl.querySelector("#streaming .content");
  }

  function updateStream() {
    if (!state.task) return;
    if (state.task.kind === "impersonate") {
      chat.composer.input.value = state.streamText;
      return;
    }
    const target = streamTarget();
    if (!target) return;
    const text = state.task.kind === "continue" ? state.task.base + state.streamText : state.streamText;
    renderRich(target, text || "…");
    list.scrollToEnd();
  }

  function attach(task, speaker = null) {
    if (state.closeStream) state.closeStream();
    state.failure = null;
    placeFailure();
    const last = store.lastHeld();
    // A group reply is written by one member: a round names it, a swipe keeps the last one's.
    const author = speaker ?? (state.chat.group_id && task.kind !== "impersonate" && last?.role === "assistant" ? last.name : null);
    const queued = task.status === "queued" ? (task.position ?? 0) : null;
    state.task = { ...task, queued, speaker: author, base: task.kind === "continue" && last ? last.content : "" };
    chat.drawMembers();
    state.streamText = "";
    state.reasoningText = "";
    placeStreamItem();
    store.update();
    list.scrollToEnd();
    state.closeStream = followTask(task.id, async (kind, data) => {
      if (kind === "delta") {
        state.streamText += data.text || "";
        updateStream();
      } else if (kind === "reasoning") {
        const first = !state.reasoningText;
        state.reasoningText += data.text || "";
        const shown = listEl.querySelector("#streaming .reasoning-text");
        if (shown) shown.textContent = state.reasoningText;
        else if (first) placeStreamItem();
      } else if (kind === "status") {
        status.told(data);
      } else if (["done", "error", "cancelled", "lost"].includes(kind)) {
        await finish(kind, data);
      }
    });
  }

  return { attach, place: placeStreamItem, readEnd: status.readEnd };
}
