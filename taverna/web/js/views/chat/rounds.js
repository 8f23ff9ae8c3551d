// A group chat's rounds: the members who answer a message, one after another; speak now,
// write the last reply again as another member, and auto mode's turns while the person is idle.

import { api } from "../../api.js";
import { t } from "../../i18n.js";

/** The rounds' verbs (`startRound`, `followRound`, `speakNow`, `rewriteAs`, `stop`). */
export function groupRounds(store, chat) {
  const { state } = store;

  async function rewriteAs(name) {
    if (state.task || !state.chat || !store.canRewrite()) return;
    const result = await chat.send(() => api.post(`${chat.url}/generate`, { kind: "swipe", member: name, revision: state.chat.revision }));
    if (!result) return;
    // the start answers with the run and its place only: a swipe changes nothing yet
    chat.attach({ ...result.task, position: result.position }, name);
  }

  // Auto mode: when nothing runs for the group's delay, the group takes a turn by itself.
  const autoTimer = setInterval(() => {
    const delay = (state.group?.auto_mode_delay ?? 5) * 1000;
    if (!state.auto || state.closed || state.task || state.round || !state.chat || chat.isReloading()) return;
    if (Date.now() - (state.idleSince || 0) < delay) return;
    state.idleSince = Date.now();
    startRound({ auto: true, revision: state.chat.revision }, t("kept.page"));
  }, 500);

  /** A group's round: the person's message (if any) and the members who answer it. */
  async function startRound(body, kept) {
    const result = await chat.send(() => api.post(`${chat.url}/round`, body), kept, kept);
    if (!result) return false;
    chat.apply(result.chat);
    state.round = result.round;
    if (result.task) chat.attach(result.task, result.round.speakers[0]);
    else chat.drawMembers();
    return true;
  }

  async function speakNow(name) {
    if (state.task || !state.chat) return;
    if (store.hasNewer()) await chat.load();
    await startRound({ member: name, revision: state.chat.revision }, t("kept.page"));
  }

  /** After one speaker of a round: follow the next one's generation once it starts. */
  async function followRound() {
    const round = state.round;
    if (!round) return false;
    const seen = round.tasks.length;
    for (let attempt = 0; attempt < 600 && !state.closed && state.round === round; attempt += 1) {
      let found;
      try {
        found = await api.get(`/rounds/${round.id}`);
      } catch {
        break;
      }
      if (found.tasks.length > seen) {
        state.round = found;
        chat.attach(found.tasks[found.tasks.length - 1], found.speakers[found.tasks.length - 1]);
        return true;
      }
      if (found.done) break;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    if (state.round === round) state.round = null;
    chat.drawMembers();
    return false;
  }

  return { startRound, followRound, speakNow, rewriteAs, stop: () => clearInterval(autoTimer) };
}
