// The chat view's one state object: the messages held (by id, in path order), the run under
// way and the group's, with what follows from them; the parts that show controls subscribe
// and are told after each change, so a control's state is decided in one place.

/** A fresh store: `state`, the views derived from it, `subscribe(listener)` and `update()`. */
export function chatStore() {
  const state = {
    chat: null, // the chat's own facts: title, revision, characters, persona, branches...
    byId: new Map(), // message id -> message as the server sent it
    order: [], // the ids held, in path order (consecutive positions)
    total: 0, // live messages on the whole path
    task: null,
    failure: null, // the last generation that failed, told inline until retried or dismissed
    closeStream: null,
    streamText: "",
    reasoningText: "",
    contextCut: null,
    summaries: null,
    paging: false,
    group: null, // a group chat's group: its members, muted ones, turn order
    round: null, // a group round under way: its speakers and the tasks started so far
    auto: false, // auto mode: the group takes turns by itself while the person is idle
    membersOpen: null, // the members' list unfolded (null: by the screen's width)
    modelsOpen: false, // each member's own connection and preset unfolded
    modelChoices: null, // the connections and presets a member may have of its own
    idleSince: 0,
    closed: false, // the person left the chat: nothing more is read or followed
  };
  const listeners = [];
  const held = () => state.order.map((id) => state.byId.get(id));
  const firstHeld = () => state.byId.get(state.order[0]);
  const lastHeld = () => state.byId.get(state.order[state.order.length - 1]);
  const hasOlder = () => (state.order.length ? firstHeld().position > 0 : false);
  const hasNewer = () => (state.order.length ? lastHeld().position < state.total - 1 : false);

  return {
    state,
    held,
    firstHeld,
    lastHeld,
    hasOlder,
    hasNewer,
    isLastReply: (m) => m.position === state.total - 1 && m.role === "assistant",
    /** Whether the path ends in a reply another member may write again (not the greeting alone). */
    canRewrite() {
      const last = lastHeld();
      return !!last && last.role === "assistant" && last.position === state.total - 1 && state.total > 1 && !hasNewer();
    },
    /** Message ids as the inspector's ledger shows them: "#3 Ann". */
    labels() {
      return Object.fromEntries(held().map((m) => [m.id, `#${m.position} ${m.name || m.role}`]));
    },
    subscribe(listener) {
      listeners.push(listener);
    },
    /** Take `changes` into the state, then tell every listener (each sets its controls). */
    update(changes = {}) {
      Object.assign(state, changes);
      for (const listener of listeners) listener(state);
    },
  };
}
