// A generation in the chat: starting it (send, regenerate, swipe, continue, impersonate),
// following its stream into the page, telling a failure where the reply would have been
// (with Retry), and what runs once it ends: the end of the path read again, Quick Replies,
// the group round's next speaker. A start answers with the run and its place in the queue
// only: the person's message is read from the path's end once the stream says it is stored.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { failureNotice } from "./failure.js";
import { tellLoreOverflow } from "./lore_overflow.js";
import { replyStream } from "./stream.js";

// The Quick Reply triggers a finished generation of each kind fires.
const FINISHED_TRIGGERS = { normal: ["user", "ai"], regenerate: ["ai"], swipe: ["ai"], continue: ["ai"] };

/** The generation's verbs; `list` is the message list the stream is drawn into. */
export function generation(store, chat, list) {
  const { state } = store;
  const failure = failureNotice(store, chat, list);
  const stream = replyStream(store, chat, list, { placeFailure: failure.place, finish });

  /** Start a generation (a write that answers with a task to follow and its place in the
   * queue); false when it failed, as `send` tells. `editedBelow`: the start stored a
   * change itself (an edit-and-resend) below that message (null: from the first), read
   * before the run is followed. `sent`: the text a send posts, put back in the input box
   * should the run end before it started. */
  async function start(request, kept = t("kept.page"), keptOnReload = "", { editedBelow, sent = null } = {}) {
    const result = await chat.send(request, kept, keptOnReload);
    if (!result) return false;
    // In a group an edited message is answered by a round: its later speakers follow.
    state.round = result.round ?? null;
    if (editedBelow !== undefined) await stream.readEnd(editedBelow);
    stream.attach({ ...result.task, position: result.position ?? 0, sent }, result.round?.speakers[0] ?? null);
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
    const sent = kind === "normal" && body.text.trim() ? body.text : null;
    if ((await start(() => api.post(`${chat.url}/generate`, body), kept, kind === "normal" ? kept : "", { sent })) && kind === "normal") {
      input.value = "";
      chat.composer.keepUnsent();
      picture.clear();
    }
  }

  /** The stream ended (`kind`: done, error, cancelled, lost): say how, read the end of the
   * path again, run what follows a saved turn, and let the group round go on or end. */
  async function finish(kind, data) {
    const impersonated = state.task?.kind === "impersonate" ? state.streamText : null;
    const failedKind = state.task?.kind || "normal";
    // A send that never started (its turn never came) gives its text back to the input box.
    const unsent = state.task?.sent && !state.task.started ? state.task.sent : null;
    const finished = FINISHED_TRIGGERS[state.task?.kind];
    state.task = null;
    state.closeStream = null;
    list.element.querySelector("#streaming")?.remove();
    list.element.querySelector("#queued")?.remove();
    store.update();
    if (unsent !== null && kind !== "done") giveBack(chat.composer, unsent);
    if (kind === "error") failure.show({ kind: failedKind, message: data.message || "", cause: data.cause || null, unsent: unsent !== null });
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
    failure.place();
    // Quick Replies on the person's message and on the reply run once the turn is saved.
    // a reply still being saved (the server keeps it until its database answers) has
    // no message yet for Quick Replies to run on
    const stored = kind === "done" && data.outcome !== "saving";
    if (stored && impersonated === null) tellLoreOverflow(chat.url, data.node_id);
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

  return { start, generate, attach: stream.attach, placeStreamItem: stream.place };
}

/** Put the text of a send that never started back in an empty input box. */
function giveBack(composer, text) {
  if (composer.input.value.trim()) return;
  composer.input.value = text;
  composer.keepUnsent();
}
