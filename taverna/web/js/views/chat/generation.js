// A generation in the chat: starting it (send, regenerate, swipe, continue, impersonate),
// following its stream into the page, telling a failure where the reply would have been
// (with Retry), and what runs once it ends: the end of the path read again, Quick Replies,
// the group round's next speaker.

import { api, followTask } from "../../api.js";
import { h, toast } from "../../dom.js";
import { failureCause, retryable } from "../../errors.js";
import { t } from "../../i18n.js";
import { renderRich } from "../../rich.js";
import { avatarFor, reasoningBlock } from "./message_parts.js";

// The Quick Reply triggers a finished generation of each kind fires.
const FINISHED_TRIGGERS = { normal: ["user", "ai"], regenerate: ["ai"], swipe: ["ai"], continue: ["ai"] };

/** The generation's verbs; `list` is the message list the stream is drawn into. */
export function generation(store, chat, list) {
  const { state } = store;
  const listEl = list.element;

  /** Start a generation (a write that answers with the change and a task to follow);
   * false when it failed, as `send` tells. */
  async function start(request, kept = t("kept.page"), keptOnReload = "") {
    const result = await chat.send(request, kept, keptOnReload);
    if (!result) return false;
    chat.apply(result.chat);
    // In a group an edited message is answered by a round: its later speakers follow.
    state.round = result.round ?? null;
    attach(result.task, result.round?.speakers[0] ?? null);
    return true;
  }

  async function generate(kind) {
    if (state.task || !state.chat) return;
    const { input, picture } = chat.composer;
    // Nothing can answer yet: the first connection's form is right there, so go to it.
    if (chat.composer.offerConnection()) return;
    if (kind === "normal" && input.value.trim().startsWith("/")) {
      await chat.followUp(await chat.runScript(input.value.trim()));
      return;
    }
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal") {
      body.text = input.value;
      if (picture.pending()) body.image = picture.pending().url;
      if (!body.text.trim() && !body.image && !state.total) return;
    }
    // The reply streams at the end of the path: be there (the far end may have been dropped).
    if (store.hasNewer()) await chat.load();
    const kept = kind === "normal" ? t("kept.message") : t("kept.page");
    if (kind === "normal" && state.chat.group_id) {
      if (await chat.startRound({ text: body.text, revision: body.revision }, kept)) {
        input.value = "";
        chat.composer.keepUnsent();
      }
      return;
    }
    if ((await start(() => api.post(`${chat.url}/generate`, body), kept, kind === "normal" ? kept : "")) && kind === "normal") {
      input.value = "";
      chat.composer.keepUnsent();
      picture.clear();
    }
  }

  // ---------------------------------------------------------------- the stream

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
    state.task = { ...task, speaker: author, base: task.kind === "continue" && last ? last.content : "" };
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
      } else if (["done", "error", "cancelled", "lost"].includes(kind)) {
        await finish(kind, data);
      }
    });
  }

  /** The stream ended (`kind`: done, error, cancelled, lost): say how, read the end of the
   * path again, run what follows a saved turn, and let the group round go on or end. */
  async function finish(kind, data) {
    const impersonated = state.task?.kind === "impersonate" ? state.streamText : null;
    const failedKind = state.task?.kind || "normal";
    const finished = FINISHED_TRIGGERS[state.task?.kind];
    state.task = null;
    state.closeStream = null;
    listEl.querySelector("#streaming")?.remove();
    store.update();
    if (kind === "error") showFailure({ kind: failedKind, message: data.message || "", cause: data.cause || null });
    if (kind === "cancelled") toast(t("chat.stopped"));
    if (kind === "done" && data.outcome === "saving") toast(t("chat.saving_note"), "warning");
    if (impersonated !== null) {
      chat.composer.input.value = data.text ?? impersonated;
      chat.composer.keepUnsent();
      // The text is in the input box now; its stored draft is not needed.
      if (data.draft_id) await api.del(`/drafts/${data.draft_id}`).catch(() => {});
    }
    if (kind === "lost") toast(t("chat.reconnecting"));
    // The server may be going away as the stream ends (a restart): keep trying.
    if (kind === "lost" || !(await list.refreshEnd())) await chat.recover();
    placeFailure();
    // Quick Replies on the person's message and on the reply run once the turn is saved.
    // a reply still being saved (the server keeps it until its database answers) has
    // no message yet for Quick Replies to run on
    const stored = kind === "done" && data.outcome !== "saving";
    if (stored && finished) await chat.runTriggered(...finished);
    if (stored && finished) await chat.runAutomations();
    // A round goes on with its next speaker; a stop or a failure has ended it.
    if (state.round && kind === "done") await chat.followRound();
    else {
      state.round = null;
      // a stop or a failure turns auto mode off: the person takes over
      if (kind !== "done") state.auto = false;
      chat.drawMembers();
    }
    state.idleSince = Date.now();
  }

  // ---------------------------------------------------------------- a failure

  /** A failed generation, told on the spot where its reply would have been: the cause in
   * words, the server's own message, and Retry (the same kind of generation again). */
  function showFailure(failure) {
    state.failure = failure;
    placeFailure();
  }

  function placeFailure() {
    listEl.querySelector("#failure")?.remove();
    const failure = state.failure;
    if (!failure || state.task) return;
    const retry = retryable(failure.cause) ? h("button", { type: "button", class: "primary small", id: "retry", text: t("chat.retry"), onClick: () => retryFailed(failure.kind) }) : null;
    const dismiss = h("button", { type: "button", class: "small", text: t("chat.dismiss"), onClick: () => {
      state.failure = null;
      placeFailure();
    } });
    const detail = failure.message ? h("p", { translate: "no", class: "muted failure-detail", text: failure.message }) : null;
    list.placeAtEnd(h("li", { class: "message assistant failed", id: "failure", role: "alert" },
      h("div", { class: "bubble" },
        h("p", { class: "failure-title", text: t(failure.kind === "impersonate" ? "chat.failed_impersonate" : "chat.failed_reply") }),
        h("p", { class: "failure-cause", text: failureCause(failure.cause, failure.message) }),
        detail,
        h("div", { class: "row wrap" }, retry, dismiss))));
    list.scrollToEnd();
  }

  async function retryFailed(kind) {
    if (state.task || !state.chat) return;
    state.failure = null;
    placeFailure();
    // A failed send stored the person's message: the retry answers it (no new text).
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal") body.text = "";
    if (!(await start(() => api.post(`${chat.url}/generate`, body)))) showFailure({ kind, message: "", cause: null });
  }

  return { start, generate, attach, placeStreamItem };
}
