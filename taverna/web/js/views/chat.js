// The chat view: a window of the active path, paged by cursor as the person scrolls,
// streaming, and every per-message action. One state object holds the messages by id in
// path order; every server answer goes through `apply`, which merges it into the state and
// redraws the messages it changed (by id), nothing else.

import { api, firstStart, followTask, takeNewChat } from "../api.js";
import { copyText, formWith, h, iconButton, mount, toast } from "../dom.js";
import { failureCause, reportError, retryable } from "../errors.js";
import { connectionForm } from "./connections.js";
import { t } from "../i18n.js";
import { renderRich } from "../rich.js";
import { deleteQuestion } from "./chat/questions.js";
import { branchLabel, personaLabel, reasonNode } from "../labels.js";
import { openInspector } from "./inspector.js";
import { openChatSettings } from "./chat_settings.js";
import { markSummaries } from "./summary.js";
import { openChatSearch, takeJump } from "./search.js";
import { openTree } from "./tree.js";
import { turnBar } from "./chat/turn_bar.js";
import { scriptCompletion } from "./chat/script_complete.js";
import { avatarFor, reasoningBlock } from "./chat/message_parts.js";

// Messages per page read from the server, and the most kept in the page at once: farther
// ones are dropped and read again by cursor, so a long chat keeps a small DOM.
const PAGE = 50;
const HELD = 100;

/** Render the chat with id `params.id` into `root`; returns a cleanup function. */
export async function render(root, params) {
  let closed = false;
  const chatUrl = `/chats/${encodeURIComponent(params.id)}`;
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
    paging: false,
    group: null, // a group chat's group: its members, muted ones, turn order
    round: null, // a group round under way: its speakers and the tasks started so far
    auto: false, // auto mode: the group takes turns by itself while the person is idle
    membersOpen: null, // the members' list unfolded (null: by the screen's width)
    modelsOpen: false, // each member's own connection and preset unfolded
    modelChoices: null, // the connections and presets a member may have of its own
    idleSince: 0,
  };
  const drawn = new Map(); // message id -> its <li>
  // The messages sit between two edges; an edge coming into sight reads the next page.
  const olderEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "older" });
  const newerEdge = h("li", { class: "sentinel", "aria-hidden": "true", "data-edge": "newer" });
  const list = h("ol", { class: "messages", "aria-live": "off" }, olderEdge, newerEdge);
  // Enter sends where there is a keyboard and a mouse; on a touch screen Enter adds a line
  // (as phone keyboards expect) and the hint says to use the Send button.
  const finePointer = window.matchMedia("(pointer: fine)");
  const input = h("textarea", {
    id: "chat-input",
    rows: 2,
    placeholder: t(finePointer.matches ? "chat.placeholder" : "chat.placeholder_touch"),
    "aria-label": t("chat.input"),
  });
  // Persona, connection and model of the next turn, and the typed text's tokens.
  const turn = turnBar({ chatUrl, input, chat: () => state.chat, applyChat: (answer) => apply(answer) });
  const sendButton = h("button", { type: "button", class: "primary", id: "send", text: t("chat.send") });
  const stopButton = h("button", { type: "button", class: "danger", id: "stop", text: t("chat.stop"), hidden: true });
  const impersonateButton = iconButton(t("chat.impersonate"), "impersonate", () => generate("impersonate"));
  const continueButton = iconButton(t("chat.continue"), "continue", () => generate("continue"));
  // The title is a button: a click renames the chat.
  const titleText = h("span", { class: "chat-title-text", translate: "no" });
  const title = h("h1", { class: "chat-title" }, h("button", {
    type: "button",
    class: "link chat-rename",
    id: "rename-chat",
    title: t("chat.rename"),
    onClick: () => renameChat(),
  }, titleText));
  const branchSelect = h("select", { "aria-label": t("chat.branches"), class: "branch-select" });
  // The actions that write need the chat's revision: they wait, disabled, for its first read.
  const chatActions = [
    iconButton(t("tree.open"), "branch", () => openTree(params.id, state.chat.revision, (chat) => {
      if (!chat) return changedElsewhere();
      apply(chat);
      loadContextLine();
    }), { attrs: { id: "open-tree" } }),
    iconButton(t("settings.title"), "note", () => openChatSettings(params.id, state.chat.revision, (change) => {
      if (!change) return changedElsewhere();
      apply(change);
      if (change.quickReplies) loadQuickReplies();
      if (change.summary) loadSummaryMarks();
    }), { attrs: { id: "open-settings" } }),
    iconButton(t("search.in_chat"), "search", () => openChatSearch(params.id, showHit), { attrs: { id: "open-search" } }),
    iconButton(t("chat.undo"), "undo", () => history("undo")),
    iconButton(t("chat.redo"), "redo", () => history("redo")),
  ];
  for (const button of chatActions) button.disabled = true;
  const header = h(
    "div",
    { class: "chat-header" },
    h("a", { href: "#/chats", class: "back", "aria-label": t("chat.back"), title: t("chat.back"), text: "‹" }),
    title,
    branchSelect,
    ...chatActions,
    iconButton(t("chat.inspector"), "inspect", () => openInspector(params.id, null, labels()), { attrs: { id: "open-inspector" } }),
  );
  // A picture to send with the next message: uploaded when chosen, shown above the input.
  let pendingPicture = null;
  const pictureChip = h("div", { class: "picture-chip", hidden: true, id: "pending-picture" });
  const attachButton = iconButton(t("chat.attach_picture"), "picture", () =>
    choosePicture(async (picture) => {
      pendingPicture = picture;
      showPendingPicture();
    }), { attrs: { id: "attach-picture" } });
  // Quick Replies: a button per reply of the chat's active sets, above the input.
  const quickBar = h("div", { class: "quick-replies", role: "toolbar", "aria-label": t("qr.bar"), hidden: true });
  const composer = h(
    "div",
    { class: "composer" },
    quickBar,
    turn.bar,
    pictureChip,
    input,
    h("div", { class: "composer-actions" }, attachButton, impersonateButton, continueButton, sendButton, stopButton),
  );
  // Completion of commands, their arguments and variable names, above the input.
  input.before(scriptCompletion({ input, variables: () => api.get(`${chatUrl}/variables`) }));
  const drafts = h("div", { class: "drafts", "aria-live": "polite" });
  // A group chat's members: who they are, who is muted, who speaks next; speak now.
  const members = h("aside", { class: "group-members", id: "group-members", hidden: true, "aria-label": t("groups.members") });
  // No model connected: the first connection is made right here, then the person sends.
  const notice = h("div", { class: "notice first-run", hidden: true, id: "first-connection" },
    h("p", {}, h("span", { text: t("chat.no_connection") }), " ", h("a", { href: "#/connections", text: t("chat.all_connections") })),
    connectionForm({
      id: "first-connection-form",
      title: t("chat.first_connection"),
      first: true,
      onSaved: async (saved) => {
        notice.hidden = true;
        localNotice.hidden = saved.api !== "local";
        turn.load();
        input.focus();
      },
    }));
  // Said plainly: the model in the box is small; a better one is one connection away.
  const localNotice = h("p", { class: "notice local-model", hidden: true, id: "local-model-notice" },
    h("span", { text: t("chat.local_model") }), " ", h("a", { href: "#/connections", text: t("chat.connect_better") }));
  // A card with regex scripts of its own: asked once whether they may run, as SillyTavern asks.
  const regexNotice = h("div", { class: "notice regex-consent", hidden: true, id: "regex-consent", role: "region", "aria-label": t("nav.regex") });
  mount(root, h("section", { class: "chat", "aria-label": t("chat.title") }, header, members, regexNotice, list, notice, localNotice, drafts, composer));

  // ------------------------------------------------------------------ the state

  const held = () => state.order.map((id) => state.byId.get(id));
  const firstHeld = () => state.byId.get(state.order[0]);
  const lastHeld = () => state.byId.get(state.order[state.order.length - 1]);
  const hasOlder = () => (state.order.length ? firstHeld().position > 0 : false);
  const hasNewer = () => (state.order.length ? lastHeld().position < state.total - 1 : false);
  const isLastReply = (m) => m.position === state.total - 1 && m.role === "assistant";
  const atBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight < 48;

  // Message ids as the inspector's ledger shows them: "#3 Ann".
  function labels() {
    return Object.fromEntries(held().map((m) => [m.id, `#${m.position} ${m.name || m.role}`]));
  }

  /**
   * The one way a server answer reaches the page: merge it into `state`, then bring the list
   * in line by key (message id → its <li>). `answer` is a chat: its own facts, and a run of
   * consecutive messages from `window.start`. `joins` says where the run goes:
   *   "change"  the path may differ from the run's start on: the held messages from there
   *             are replaced (a write's answer: `window.changed_from`)
   *   "window"  the run is shown instead of what was held (opening, a reload, a write that
   *             reached further back than one window)
   *   "older" / "newer"  a page read by cursor, just before / after the held messages
   * A held message keeps its <li> unless the answer replaced it or its place changed what it
   * shows (the last reply has more buttons): a change at one message redraws that message
   * and those after it, nothing else. An answer without messages only moves the revision on.
   */
  function apply(answer, joins = answer.window?.changed_from == null ? "window" : "change") {
    if (!answer.messages) {
      state.chat.revision = answer.revision;
      return;
    }
    const stick = joins === "window" || (joins === "change" && atBottom());
    const before = held();
    const kept = new Set(before);
    takeFacts(answer);
    const now = merged(before, answer.messages, answer.window.start, joins);
    // The first message that stays keeps its place on the screen while others come and go.
    const anchor = drawn.get(now.find((m) => kept.has(m))?.id);
    const anchorTop = anchor?.getBoundingClientRect().top;
    state.order = now.map((m) => m.id);
    state.byId = new Map(now.map((m) => [m.id, m]));
    drawHeld(kept);
    placeForkNotes();
    if (joins === "window" && state.task) placeStreamItem();
    placeContextLine();
    updateControls();
    // Keep in sight what the person was looking at: the end, or the first message kept.
    if (stick) list.scrollTop = list.scrollHeight;
    else if (anchor?.isConnected) list.scrollTop += anchor.getBoundingClientRect().top - anchorTop;
    rearm();
  }

  /** The messages held after an answer (see `apply`), from those held before and its run. */
  function merged(before, run, start, joins) {
    if (joins === "window") return run;
    if (joins === "older") {
      const now = [...run, ...before];
      // The far end goes (read again by cursor when scrolled back to).
      return state.task ? now : now.slice(0, HELD);
    }
    if (joins === "newer") return [...before, ...run].slice(-HELD);
    const kept = before.filter((m) => m.position < start);
    // Held messages that stop short of `start` (the far end was dropped): the change is out
    // of sight and is read again when the person scrolls there.
    const last = kept[kept.length - 1];
    return !last || last.position === start - 1 ? [...kept, ...run] : kept;
  }

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
    for (const m of held()) {
      let li = drawn.get(m.id);
      if (li && li.dataset.last !== (isLastReply(m) ? "1" : "0")) li = redraw(m);
      li ??= draw(m);
      if (previous.nextElementSibling !== li) previous.after(li);
      previous = li;
    }
  }

  /** Take the chat's own facts from a server answer (its messages are merged apart). */
  function takeFacts(chat) {
    const { messages: _messages, window, ...facts } = chat;
    state.chat = facts;
    state.total = window.total;
    for (const button of chatActions) button.disabled = false;
    updateControls();
    titleText.textContent = facts.title;
    turn.soon(); // the path or the persona changed: so did the next prompt's total
    loadBranches();
    if (facts.group_id && state.group?.id !== facts.group_id) loadGroup();
  }

  // ---------------------------------------------------------------- the group

  async function loadGroup() {
    if (!state.chat?.group_id) return;
    try {
      state.group = await api.get(`/groups/${state.chat.group_id}`);
      if (!state.modelChoices) {
        const [connections, presets] = await Promise.all([api.get("/connections"), api.get("/presets?kind=chat")]);
        state.modelChoices = { connections, presets };
      }
    } catch (error) {
      state.group = null;
      if (error.status !== 404) reportError(error);
    }
    drawMembers();
  }

  function nextSpeakers() {
    const round = state.round;
    if (!round) return [];
    return round.speakers.slice(round.tasks.length);
  }

  function drawMembers() {
    const group = state.group;
    members.hidden = !group;
    if (!group) return;
    const speaking = state.task?.speaker;
    const next = nextSpeakers();
    // On a narrow screen the members fold away (one line says who speaks next).
    state.membersOpen ??= !window.matchMedia("(max-width: 720px)").matches;
    const fold = h("details", { class: "member-fold", open: state.membersOpen ? "open" : null },
      h("summary", {}, t("groups.members_count", { n: group.members.length, names: "" }), h("span", { translate: "no", text: group.members.map((m) => m.name).join(", ") })),
      h("ul", { class: "member-list" }, group.members.map((m) => {
        const mute = h("input", { type: "checkbox", checked: m.muted ? "checked" : null, "aria-label": t("groups.mute_who", { name: m.name }) });
        mute.addEventListener("change", () => setMuted(m.name, mute.checked));
        const speak = h("button", { type: "button", class: "small speak", text: t("groups.speak"), "aria-label": t("groups.speak_who", { name: m.name }), onClick: () => speakNow(m.name) });
        speak.disabled = !!state.task || !state.chat;
        // A new candidate for the last reply, written by this member instead.
        const rewrite = h("button", { type: "button", class: "small rewrite", text: "↻", title: t("groups.rewrite_as", { name: m.name }), "aria-label": t("groups.rewrite_as", { name: m.name }), onClick: () => rewriteAs(m.name) });
        rewrite.dataset.off = canRewrite() ? "0" : "1";
        rewrite.disabled = !!state.task || !state.chat || rewrite.dataset.off === "1";
        return h("li", { class: `member${m.muted ? " muted" : ""}${speaking === m.name ? " speaking" : ""}`, "data-name": m.name },
          avatarFor({ role: "assistant", name: m.name, avatar_url: m.avatar_url }, state.chat),
          h("span", { translate: "no", class: "name", text: m.name }),
          h("label", { class: "mute" }, mute, h("span", { text: t("groups.muted") })),
          speak, rewrite);
      })),
      groupSettings(group),
      memberModels(group));
    fold.addEventListener("toggle", () => {
      state.membersOpen = fold.open;
    });
    mount(members, fold,
      h("p", { class: "next-speakers muted", id: "next-speakers", text: speaking
        ? t("groups.speaking", { name: speaking, next: next.join(", ") || "—" })
        : t(`groups.strategy_note.${group.activation_strategy}`) }));
  }

  /** The group's turn order, how cards go into the prompt, and auto mode. */
  function groupSettings(group) {
    const strategy = h("select", { id: "chat-group-strategy", "aria-label": t("groups.strategy") },
      ["natural", "list", "pooled", "manual"].map((s) => h("option", { value: s, selected: s === group.activation_strategy ? "selected" : null, text: t(`groups.strategy.${s}`) })));
    const mode = h("select", { id: "chat-group-mode", "aria-label": t("groups.mode") },
      ["swap", "join", "join_with_muted"].map((m) => h("option", { value: m, selected: m === group.generation_mode ? "selected" : null, text: t(`groups.mode.${m}`) })));
    strategy.addEventListener("change", () => changeGroup({ activation_strategy: strategy.value }));
    mode.addEventListener("change", () => changeGroup({ generation_mode: mode.value }));
    const auto = h("input", { type: "checkbox", id: "group-auto", checked: state.auto ? "checked" : null });
    auto.addEventListener("change", () => {
      state.auto = auto.checked;
      state.idleSince = Date.now();
    });
    return h("div", { class: "group-settings" }, strategy, mode,
      h("label", { class: "mute", title: t("groups.auto_note", { seconds: group.auto_mode_delay }) }, auto, h("span", { text: t("groups.auto") })));
  }

  /** Each member's own connection and preset (empty: the chat's), folded away. */
  function memberModels(group) {
    const choices = state.modelChoices;
    if (!choices) return null;
    const open = !!state.modelsOpen;
    const rows = group.members.map((m) => {
      const connection = h("select", { "aria-label": t("groups.connection_of", { name: m.name }) },
        h("option", { value: "", text: t("groups.the_chats") }),
        choices.connections.map((c) => h("option", { translate: "no", value: c.name, selected: c.name === m.connection ? "selected" : null, text: c.name })));
      const preset = h("select", { "aria-label": t("groups.preset_of", { name: m.name }) },
        h("option", { value: "", text: t("groups.the_chats") }),
        choices.presets.map((p) => h("option", { translate: "no", value: p.id, selected: p.id === m.preset ? "selected" : null, text: p.name })));
      connection.addEventListener("change", () => changeGroup({ connections: { [m.name]: connection.value || null } }));
      preset.addEventListener("change", () => changeGroup({ presets: { [m.name]: preset.value || null } }));
      return h("li", {}, h("span", { translate: "no", class: "name", text: m.name }), connection, preset);
    });
    const fold = h("details", { class: "member-models", open: open ? "open" : null },
      h("summary", { text: t("groups.models") }), h("ul", { class: "member-model-list" }, rows));
    fold.addEventListener("toggle", () => {
      state.modelsOpen = fold.open;
    });
    return fold;
  }

  async function changeGroup(changes) {
    try {
      state.group = await api.patch(`/groups/${state.group.id}`, { ...changes, revision: state.group.revision });
    } catch (error) {
      reportError(error, t("kept.page"));
      await loadGroup();
      return;
    }
    drawMembers();
  }

  /** Whether the path ends in a reply another member may write again (not the greeting alone). */
  function canRewrite() {
    const last = lastHeld();
    return !!last && last.role === "assistant" && last.position === state.total - 1 && state.total > 1 && !hasNewer();
  }

  async function rewriteAs(name) {
    if (state.task || !state.chat || !canRewrite()) return;
    const result = await send(() => api.post(`${chatUrl}/generate`, { kind: "swipe", member: name, revision: state.chat.revision }));
    if (!result) return;
    apply(result.chat);
    attach(result.task, name);
  }

  // Auto mode: when nothing runs for the group's delay, the group takes a turn by itself.
  const autoTimer = setInterval(() => {
    const delay = (state.group?.auto_mode_delay ?? 5) * 1000;
    if (!state.auto || closed || state.task || state.round || !state.chat || reloading) return;
    if (Date.now() - (state.idleSince || 0) < delay) return;
    state.idleSince = Date.now();
    startRound({ auto: true, revision: state.chat.revision }, t("kept.page"));
  }, 500);

  async function setMuted(name, muted) {
    const group = state.group;
    const names = group.members.filter((m) => (m.name === name ? muted : m.muted)).map((m) => m.name);
    try {
      state.group = await api.patch(`/groups/${group.id}`, { muted: names, revision: group.revision });
    } catch (error) {
      reportError(error, t("kept.page"));
      await loadGroup();
      return;
    }
    drawMembers();
  }

  /** A group's round: the person's message (if any) and the members who answer it. */
  async function startRound(body, kept) {
    const result = await send(() => api.post(`${chatUrl}/round`, body), kept, kept);
    if (!result) return false;
    apply(result.chat);
    state.round = result.round;
    if (result.task) attach(result.task, result.round.speakers[0]);
    else drawMembers();
    return true;
  }

  async function speakNow(name) {
    if (state.task || !state.chat) return;
    if (hasNewer()) await load();
    await startRound({ member: name, revision: state.chat.revision }, t("kept.page"));
  }

  /** After one speaker of a round: follow the next one's generation once it starts. */
  async function followRound() {
    const round = state.round;
    if (!round) return false;
    const seen = round.tasks.length;
    for (let attempt = 0; attempt < 600 && !closed && state.round === round; attempt += 1) {
      let found;
      try {
        found = await api.get(`/rounds/${round.id}`);
      } catch {
        break;
      }
      if (found.tasks.length > seen) {
        state.round = found;
        attach(found.tasks[found.tasks.length - 1], found.speakers[found.tasks.length - 1]);
        return true;
      }
      if (found.done) break;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    if (state.round === round) state.round = null;
    drawMembers();
    return false;
  }

  function redraw(m) {
    const old = drawn.get(m.id);
    const fresh = draw(m);
    if (old) old.replaceWith(fresh);
    return fresh;
  }

  function draw(m) {
    const li = messageItem(m, isLastReply(m), !!state.task);
    drawn.set(m.id, li);
    return li;
  }

  // ------------------------------------------------------------ paging by cursor

  const edges = new IntersectionObserver((seen) => {
    for (const entry of seen) {
      if (!entry.isIntersecting) continue;
      loadPage(entry.target === olderEdge ? "older" : "newer");
    }
  }, { root: list, rootMargin: "400px 0px" });
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
    const page = await api.get(`${chatUrl}?limit=${PAGE}&${query}`);
    if (page.revision !== state.chat.revision) {
      await changedElsewhere();
      return null;
    }
    return page;
  }

  /** Read the page just before ("older") or after ("newer") the held messages. */
  async function loadPage(side) {
    const older = side === "older";
    if (state.paging || closed || !(older ? hasOlder() : hasNewer())) return;
    state.paging = true;
    const edge = () => (older ? firstHeld() : lastHeld());
    try {
      const from = edge();
      const page = await readPage(`${older ? "before" : "after"}=${encodeURIComponent(from.id)}`);
      if (page && edge() === from) apply(page, side);
    } finally {
      state.paging = false;
      rearm();
    }
  }

  // ---------------------------------------------------------------- reading

  async function load() {
    apply(await api.get(chatUrl), "window");
    if (state.chat.task && (!state.task || state.task.id !== state.chat.task.id)) attach(state.chat.task);
    loadContextLine();
    loadDrafts();
  }

  /** A write or a page met a newer revision: show the chat as it is now, and say so
   * (once: a page read and a write can meet the same change together). */
  let reloading = null;
  let toldAt = 0;
  function changedElsewhere(kept = "") {
    reloading ??= (async () => {
      try {
        await load();
        if (Date.now() - toldAt > 3000) toast(`${t("chat.changed_elsewhere")} ${kept}`.trim(), "error");
        toldAt = Date.now();
      } finally {
        reloading = null;
      }
    })();
    return reloading;
  }

  /** Send a write: its answer, or null when it failed. A stale revision shows the chat as it
   * is now instead; any failure is told with what was kept (`kept`, or `keptOnReload` when
   * the chat was read again, which redraws its messages). */
  async function send(request, kept = t("kept.page"), keptOnReload = "") {
    try {
      return await request();
    } catch (error) {
      if (error.status === 409) await changedElsewhere(keptOnReload);
      else reportError(error, kept);
      return null;
    }
  }

  /** Send a write and apply its answer (null when it failed, as `send` tells). */
  async function write(request, kept = t("kept.page"), keptOnReload = "") {
    const chat = await send(request, kept, keptOnReload);
    if (chat) {
      apply(chat);
      loadContextLine();
    }
    return chat;
  }

  /** Go to message `hit` (a search hit): onto its path first when it is on another
   * branch, then read the page that starts with it and bring it into sight, marked. */
  async function showHit(hit) {
    if (!hit.on_path) {
      const chat = await write(() => api.post(`${chatUrl}/messages/${hit.node_id}/show`, { revision: state.chat.revision }));
      if (!chat) return;
    }
    if (!drawn.get(hit.node_id)) {
      state.paging = true;
      try {
        if (hit.parent_id) {
          const page = await readPage(`after=${encodeURIComponent(hit.parent_id)}`);
          if (!page) return;
          apply(page, "window");
        }
        // The first message of a long chat: read back page by page until it is there.
        while (!drawn.get(hit.node_id) && hasOlder()) {
          const page = await readPage(`before=${encodeURIComponent(firstHeld().id)}`);
          if (!page) return;
          apply(page, "older");
        }
      } finally {
        state.paging = false;
        rearm();
      }
    }
    const item = drawn.get(hit.node_id);
    if (!item) return toast(t("search.not_found"), "error");
    item.scrollIntoView({ block: "center" });
    item.classList.add("found");
    setTimeout(() => item.classList.remove("found"), 3000);
  }

  async function askRegexConsent() {
    for (const character of state.chat.characters) {
      const asked = `taverna.regex-asked.${character.id}`;
      if (!character.id || localStorage.getItem(asked)) continue;
      let layer;
      try {
        layer = await api.get(`/regex/character?target=${encodeURIComponent(character.id)}`);
      } catch {
        continue; // the card is gone or unreadable: nothing to ask
      }
      if (!layer.scripts.length || layer.allowed) continue;
      const answered = () => {
        localStorage.setItem(asked, "1");
        regexNotice.hidden = true;
      };
      mount(regexNotice,
        h("p", { text: t("regex.consent", { name: character.name, n: layer.scripts.length }) }),
        h("div", { class: "row" },
          h("button", { type: "button", class: "primary", id: "regex-consent-allow", text: t("regex.consent_allow"), onClick: async () => {
            try {
              await api.put(`/regex/character/allowed?target=${encodeURIComponent(character.id)}`, { allowed: true });
              answered();
              await load();
            } catch (error) {
              reportError(error);
            }
          } }),
          h("button", { type: "button", id: "regex-consent-no", text: t("regex.consent_no"), onClick: answered })));
      regexNotice.hidden = false;
      return;
    }
  }

  // A finished reply the server could not store yet waits on its disk ("saving…"): the
  // drafts are read again every few seconds until it is stored, then the chat.
  let savingTimer = null;
  async function loadDrafts() {
    let found = [];
    try {
      found = (await api.get(`${chatUrl}/drafts`)).filter((d) => d.kind !== "impersonate" || d.saving);
    } catch {
      found = [];
    }
    const saving = found.filter((d) => d.saving);
    clearTimeout(savingTimer);
    savingTimer = null;
    if (saving.length && !closed) {
      savingTimer = setTimeout(async () => {
        const before = drafts.querySelectorAll(".draft.saving").length;
        await loadDrafts();
        if (drafts.querySelectorAll(".draft.saving").length < before) await recover();
      }, 3000);
    }
    mount(drafts, saving.map((d) => h("div", { class: "draft saving", "data-id": d.id, "aria-busy": "true" },
      h("div", { class: "draft-head" }, h("span", { class: "strong", text: t("chat.saving") }),
        h("span", { class: "muted", text: t("chat.saving_note") })),
      h("div", { class: "draft-text", translate: "no", text: d.text }))),
    found.filter((d) => !d.saving).map((d) => h("div", { class: "draft", "data-id": d.id },
      h("div", { class: "draft-head" }, h("span", { class: "strong", text: t("chat.draft_title") }), draftReason(d)),
      h("div", { class: "draft-text", text: d.text }),
      h("div", { class: "row" },
        h("button", { type: "button", class: "small primary", text: t("chat.draft_keep"), onClick: async () => {
          const endBefore = state.total ? `${state.total}:${lastHeld()?.id}` : "";
          try {
            await api.post(`/drafts/${d.id}/keep`, { revision: state.chat.revision });
          } catch (error) {
            if (error.status === 409) return changedElsewhere();
            throw error;
          }
          await load();
          // A draft written for an earlier point of the chat is kept where it belongs, off
          // the path the person is on now: said, with where to find it.
          const endAfter = state.total ? `${state.total}:${lastHeld()?.id}` : "";
          toast(endAfter === endBefore ? t("chat.draft_kept_aside") : t("chat.draft_kept"), endAfter === endBefore ? "warning" : "info");
        } }),
        h("button", { type: "button", class: "small", text: t("chat.draft_drop"), onClick: async () => {
          await api.del(`/drafts/${d.id}`);
          loadDrafts();
        } })))));
  }

  function loadBranches() {
    const branches = state.chat.branches || [];
    // After a checkpoint was opened no branch is active: the picker says so and offers
    // every branch, which still ends where it did.
    const detached = branches.length > 0 && !branches.some((b) => b.active);
    mount(branchSelect,
      detached ? h("option", { value: "", selected: "selected", disabled: "disabled", text: t("chat.no_branch") }) : null,
      branches.map((b) =>
        h("option", { value: b.id, selected: b.active ? "selected" : null, translate: b.name === "main" ? null : "no", text: `${branchLabel(b.name)} (${b.length})` }),
      ));
    branchSelect.hidden = branches.length < 2 && !detached;
  }

  // Forks in the middle: at a message with other candidates that messages follow, a note
  // says how many and offers to go there (a switch there is not a loss). Read in one
  // request for the held messages, kept until the chat's next revision.
  const forks = { revision: null, byId: new Map(), asked: new Set() };

  function placeForkNotes() {
    if (!state.chat) return;
    if (forks.revision !== state.chat.revision) {
      forks.revision = state.chat.revision;
      forks.byId.clear();
      forks.asked.clear();
    }
    const missing = [];
    for (const m of held()) {
      if (m.candidate_count < 2) continue;
      if (forks.byId.has(m.id)) forkNote(m);
      else if (!forks.asked.has(m.id)) missing.push(m.id);
    }
    if (!missing.length) return;
    for (const id of missing) forks.asked.add(id);
    const revision = state.chat.revision;
    api.get(`${chatUrl}/forks?ids=${missing.map(encodeURIComponent).join(",")}`).then((found) => {
      if (closed || forks.revision !== revision) return;
      for (const [id, candidates] of Object.entries(found)) forks.byId.set(id, candidates);
      for (const id of missing) {
        const m = state.byId.get(id);
        if (m) forkNote(m);
      }
    }).catch(() => {});
  }

  function forkNote(m) {
    const li = drawn.get(m.id);
    if (!li) return;
    li.querySelector(".fork-note")?.remove();
    const others = (forks.byId.get(m.id) || []).filter((c) => !c.on_path && c.follow > 0);
    if (!others.length) return;
    li.querySelector(".bubble").append(h("div", { class: "fork-note", role: "note" },
      others.slice(0, 3).map((c) => h("p", {},
        h("span", { text: t(c.follow === 1 ? "chat.fork_follow_one" : "chat.fork_follow", { n: c.follow, k: c.index }) }), " ",
        h("button", {
          type: "button",
          class: "small fork-go",
          text: t("chat.fork_go", { k: c.index }),
          disabled: state.task ? "disabled" : null,
          onClick: () => write(() => api.post(`${chatUrl}/messages/${m.id}/select`, { index: c.index, revision: state.chat.revision })),
        })))));
  }

  // The "context cut" line: where the last reply's prompt began, as recorded when it was
  // sent (no prompt is built for it).
  async function loadContextLine() {
    try {
      const found = await api.get(`${chatUrl}/context`);
      state.contextCut = found.first_message_in_context;
    } catch {
      state.contextCut = null;
    }
    placeContextLine();
    loadSummaryMarks();
  }

  // The summaries' marks: the message each belongs to, the messages one keeps out of the prompt.
  async function loadSummaryMarks() {
    try {
      state.summaries = await api.get(`${chatUrl}/summary`);
    } catch {
      state.summaries = null;
    }
    markSummaries(list, state.summaries);
  }

  function placeContextLine() {
    list.querySelectorAll(".context-line").forEach((el) => el.remove());
    const cut = state.contextCut && state.byId.get(state.contextCut);
    if (!cut || cut.position === 0) return;
    drawn.get(cut.id)?.before(h("li", { class: "context-line", role: "separator", "aria-label": t("chat.context_cut") },
      h("span", { text: t("chat.context_cut") })));
  }

  function updateControls() {
    const running = !!state.task;
    const busy = running || !state.chat;
    for (const button of quickBar.querySelectorAll("button")) button.disabled = busy;
    for (const button of members.querySelectorAll("button.speak")) button.disabled = busy;
    const rewritable = state.chat ? canRewrite() : false;
    for (const button of members.querySelectorAll("button.rewrite")) button.disabled = busy || !rewritable;
    sendButton.hidden = running;
    sendButton.disabled = !state.chat;
    stopButton.hidden = !running;
    impersonateButton.disabled = busy;
    continueButton.disabled = busy || state.total === 0;
    for (const button of list.querySelectorAll("li.message:not(#streaming) button")) {
      button.disabled = busy || button.dataset.off === "1";
    }
  }

  /** Why a draft was kept: the model API's failure in words, a known sentence in the
   * person's language, else the server's own words (marked as not translated). */
  function draftReason(d) {
    if (d.cause) return h("span", { class: "muted", text: failureCause(d.cause, d.reason) });
    return reasonNode(d.reason, "span", { class: "muted" });
  }

  // ---------------------------------------------------------------- streaming

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
    list.querySelector("#streaming")?.remove();
    if (state.task && !["impersonate", "continue"].includes(state.task.kind)) newerEdge.before(streamItem());
    updateStream();
  }

  function streamTarget() {
    if (state.task.kind === "continue") {
      const last = lastHeld() && drawn.get(lastHeld().id);
      const content = last?.querySelector(".content");
      if (content) {
        last.classList.add("streaming");
        content.setAttribute("aria-busy", "true");
      }
      return content;
    }
    return list.querySelector("#streaming .content");
  }

  function updateStream() {
    if (!state.task) return;
    if (state.task.kind === "impersonate") {
      input.value = state.streamText;
      return;
    }
    const target = streamTarget();
    if (!target) return;
    const text = state.task.kind === "continue" ? state.task.base + state.streamText : state.streamText;
    renderRich(target, text || "…");
    list.scrollTop = list.scrollHeight;
  }

  // ---------------------------------------------------------------- one message

  function candidateNav(m, isLast, busy) {
    if (m.candidate_count < 2 && !(isLast && m.role === "assistant")) return null;
    const prev = iconButton(t("chat.prev_candidate"), "prev", () => select(m, -1), { class: "swipe-prev" });
    prev.dataset.off = m.candidate_index <= 1 ? "1" : "0";
    prev.disabled = busy || prev.dataset.off === "1";
    // On the last reply, "next" past the last candidate asks the model for a new one (a swipe).
    const canGenerate = isLast && m.role === "assistant" && m.candidate_index >= m.candidate_count;
    const next = iconButton(t("chat.next_candidate"), "next", () => (canGenerate ? generate("swipe") : select(m, 1)), { class: "swipe-next" });
    next.dataset.off = !canGenerate && m.candidate_index >= m.candidate_count ? "1" : "0";
    next.disabled = busy || next.dataset.off === "1";
    return h("span", { class: "swipes" }, prev,
      h("span", { class: "counter", title: t("chat.candidate_counter", { n: m.candidate_index, total: m.candidate_count }), text: `${m.candidate_index}/${m.candidate_count}` }),
      next);
  }

  /** A tool step: what the model said, then each call it made and the tool's answer
   * (plain text, never markup). */
  function toolCalls(m) {
    const first = m.tool_calls[0];
    const shown = `${first.name}(${first.arguments}) → ${first.result}`;
    const said = m.content.endsWith(shown) ? m.content.slice(0, -shown.length).trim() : "";
    return h("div", { class: "tool-calls" },
      said ? h("p", { class: "tool-said", text: said }) : null,
      m.tool_calls.map((call) => h("div", { class: "tool-call", "data-tool": call.name },
        h("span", { class: "badge", text: t("chat.tool_call") }), " ",
        h("code", { class: "tool-name", text: `${call.name}(${call.arguments})` }),
        h("div", { class: "tool-result" }, h("span", { class: "muted", text: t("chat.tool_result") }), " ",
          h("code", { text: call.result })))));
  }

  /** Each code block gets a head: its language (from the fence) and a copy button. */
  function decorateCode(content) {
    for (const pre of content.querySelectorAll("pre")) {
      const code = pre.querySelector("code");
      const lang = [...(code?.classList || [])].find((c) => c.startsWith("lang-"))?.slice(5);
      pre.before(h("div", { class: "code-head" },
        h("span", { class: "code-lang", text: lang || t("chat.code") }),
        iconButton(t("chat.copy_code"), "copy", async () => toast((await copyText(code?.textContent || "")) ? t("chat.copied") : t("error.copy")), { class: "code-copy" })));
    }
  }

  function messageItem(m, isLastAssistant, busy) {
    const content = h("div", { class: "content markdown", translate: "no" });
    if (m.tool_calls) content.replaceChildren(toolCalls(m));
    else {
      // What display-only regex scripts make of the message, if they change it; edits use the stored text.
      renderRich(content, m.shown ?? m.content);
      decorateCode(content);
    }
    // The reasoning as display-only regex scripts of the reasoning placement show it.
    const reasoning = reasoningBlock(m.shown_reasoning ?? m.generation?.extras?.reasoning);
    const actions = h("div", { class: "actions" });
    const isUser = m.role === "user";
    const add = (label, glyph, fn, cls) => {
      const b = iconButton(label, glyph, fn, { class: cls });
      b.disabled = busy;
      actions.append(b);
    };
    add(t("chat.copy"), "copy", async () => toast((await copyText(m.content)) ? t("chat.copied") : t("error.copy")), "copy");
    add(t("chat.edit"), "edit", () => startEdit(m, content, false), "edit");
    if (isUser) add(t("chat.edit_resend"), "resend", () => startEdit(m, content, true), "edit-resend");
    add(m.hidden ? t("chat.unhide") : t("chat.hide"), m.hidden ? "eyeOff" : "eye", () => setHidden(m, !m.hidden), m.hidden ? "unhide" : "hide");
    if (m.image_url) add(t("chat.picture_remove"), "picture", () => setPicture(m, null), "picture-remove");
    else add(t("chat.picture_attach"), "picture", () => choosePicture((p) => setPicture(m, p.url)), "picture-attach");
    add(t("chat.branch"), "branch", () => branchFrom(m), "branch");
    add(t("chat.checkpoint"), "flag", () => checkpointAt(m), "checkpoint");
    add(t("chat.prompt_of"), "inspect", () => openInspector(params.id, m.role === "assistant" && m.generated ? m.id : null, labels()), "inspect");
    if (isLastAssistant) {
      add(t("chat.regenerate"), "regenerate", () => generate("regenerate"), "regenerate");
    }
    add(t("chat.delete"), "trash", () => remove(m), "delete danger");
    const name = m.name || (isUser ? state.chat.persona?.name : state.chat.characters?.[0]?.name) || "";
    return h(
      "li",
      {
        class: `message ${m.role}${m.hidden ? " hidden-msg" : ""}${m.tool_calls ? " tool-step" : ""}`,
        "data-id": m.id,
        "data-index": m.position,
        "data-last": isLastAssistant ? "1" : "0",
        "aria-label": t("chat.message_label", { name, n: m.position + 1 }),
      },
      avatarFor(m, state.chat),
      h("div", { class: "bubble" },
        h("div", { class: "meta" },
          h("span", { class: "name", translate: "no", text: isUser ? personaLabel(name) : name }),
          m.hidden ? h("span", { class: "badge", text: t("chat.hidden_badge") }) : null,
          h("span", { class: "index", text: `#${m.position}` }),
          candidateNav(m, isLastAssistant, busy)),
        reasoning,
        m.image_url ? h("img", { class: "attached-picture", src: m.image_url, alt: t("chat.picture"), loading: "lazy" }) : null,
        content,
        actions),
    );
  }

  // ---------------------------------------------------------------- actions

  function startEdit(m, content, resend) {
    const area = h("textarea", { class: "edit-area", value: m.content, "aria-label": t("chat.edit_text"), rows: Math.min(12, m.content.split("\n").length + 2) });
    const save = h("button", { type: "button", class: "primary", text: resend ? t("chat.save_resend") : t("chat.save") });
    const cancel = h("button", { type: "button", text: t("chat.cancel") });
    const box = h("div", { class: "edit-box" }, area, h("div", { class: "row" }, save, cancel));
    content.replaceWith(box);
    area.focus();
    cancel.addEventListener("click", () => {
      const shown = state.byId.get(m.id);
      if (shown) redraw(shown);
    });
    save.addEventListener("click", async () => {
      const text = area.value;
      if (resend) {
        await start(() => api.post(`${chatUrl}/messages/${m.id}/resend`, { content: text, revision: state.chat.revision }), t("kept.edit"));
      } else {
        await write(() => api.patch(`${chatUrl}/messages/${m.id}`, { content: text, revision: state.chat.revision }), t("kept.edit"));
      }
    });
    // As editors go: Escape puts the message back as it was, Ctrl+Enter (⌘+Enter) saves.
    area.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        cancel.click();
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        save.click();
      }
    });
  }

  const select = (m, step) =>
    write(() => api.post(`${chatUrl}/messages/${m.id}/select`, { index: m.candidate_index + step, revision: state.chat.revision }));

  const setHidden = (m, hidden) =>
    write(() => api.post(`${chatUrl}/messages/${m.id}/hidden`, { hidden, revision: state.chat.revision }));

  async function remove(m) {
    if (!confirm(deleteQuestion(m))) return;
    await write(() => api.del(`${chatUrl}/messages/${m.id}?revision=${state.chat.revision}`));
  }

  async function branchFrom(m) {
    const name = prompt(t("chat.branch_name"), t("chat.branch_default", { n: (state.chat.branches || []).length + 1 }));
    if (name === null) return;
    if (await write(() => api.post(`${chatUrl}/branches`, { node_id: m.id, name, revision: state.chat.revision }))) {
      toast(t("chat.branched", { name }));
    }
  }

  async function checkpointAt(m) {
    const known = await api.get(`${chatUrl}/checkpoints`);
    const name = prompt(t("chat.checkpoint_name"), t("chat.checkpoint_default", { n: known.length + 1 }));
    if (name === null) return;
    if (await write(() => api.post(`${chatUrl}/checkpoints`, { node_id: m.id, name, revision: state.chat.revision }))) {
      toast(t("chat.checkpointed", { name }));
    }
  }

  async function renameChat() {
    if (!state.chat) return;
    const name = prompt(t("chat.rename_prompt"), state.chat.title);
    if (name === null || !name.trim() || name.trim() === state.chat.title) return;
    const chat = await write(() => api.patch(chatUrl, { title: name.trim(), revision: state.chat.revision }));
    if (chat) toast(t("chat.renamed", { name: chat.title }));
  }

  async function history(step) {
    if (state.task) return;
    await write(() => api.post(`${chatUrl}/${step}`, { revision: state.chat.revision }));
  }

  /** Run an STscript (a line starting with `/`) in the chat: its messages and variables are
   * written by the server; its notices show as toasts; a reply it asks for starts after it.
   * Returns the reply kind to start (or null). */
  async function runScript(text, fromInput = true) {
    const answer = await send(
      () => api.post(`${chatUrl}/script`, { text, revision: state.chat.revision, input: fromInput ? "" : input.value }),
      fromInput ? t("kept.message") : t("kept.page"),
      fromInput ? t("kept.message") : "",
    );
    if (!answer) return null;
    if (fromInput) {
      input.value = "";
      keepUnsent();
    }
    apply(answer.chat);
    loadContextLine();
    for (const notice of answer.notices) toast(notice.text, ["error", "warning"].includes(notice.severity) ? notice.severity : "info");
    return answer.follow_up || null;
  }

  let quickReplies = [];
  async function loadQuickReplies() {
    try {
      quickReplies = (await api.get(`${chatUrl}/quick-replies`)).replies;
    } catch {
      quickReplies = [];
    }
    const shown = quickReplies.filter((r) => !r.hidden);
    mount(quickBar, shown.map((r) => h("button", {
      type: "button",
      class: "small quick-reply",
      title: r.title || r.message,
      "data-set": r.set,
      text: r.label || `${r.set} #${r.id}`,
      onClick: () => runQuickReply(r.message),
    })));
    quickBar.hidden = shown.length === 0;
    updateControls();
  }

  /** Run, one after another, the Quick Replies set to run on `trigger` (chat_change, user,
   * ai); a reply one of them asks for starts after them all. */
  async function runTriggered(...triggers) {
    let next = null;
    for (const trigger of triggers) {
      for (const reply of quickReplies.filter((r) => r.triggers.includes(trigger))) {
        if (!reply.message.trim().startsWith("/")) continue;
        next = (await runScript(reply.message.trim(), false)) || next;
      }
    }
    if (next) await generate(next === "trigger" ? "normal" : next);
  }

  /** After a reply: the Quick Replies whose automation id matches a lorebook entry that
   * went into its prompt, in the entries' order. */
  async function runAutomations() {
    const wanted = quickReplies.filter((r) => r.automation_id);
    const last = lastHeld();
    if (!wanted.length || !last || last.role !== "assistant") return;
    let ids = [];
    try {
      ids = await api.get(`${chatUrl}/messages/${encodeURIComponent(last.id)}/automations`);
    } catch {
      return;
    }
    let next = null;
    for (const id of ids) {
      for (const reply of wanted.filter((r) => r.automation_id === id)) {
        if (reply.message.trim().startsWith("/")) next = (await runScript(reply.message.trim(), false)) || next;
      }
    }
    if (next) await generate(next === "trigger" ? "normal" : next);
  }

  /** Run a Quick Reply's script (or send its text when it is not a script). */
  async function runQuickReply(message) {
    if (state.task || !state.chat) return;
    if (!message.trim().startsWith("/")) {
      input.value = message;
      return generate("normal");
    }
    const next = await runScript(message.trim(), false);
    if (next) await generate(next === "trigger" ? "normal" : next);
  }

  /** Start a generation (a write that answers with the change and a task to follow);
   * false when it failed, as `send` tells. */
  async function start(request, kept = t("kept.page"), keptOnReload = "") {
    const result = await send(request, kept, keptOnReload);
    if (!result) return false;
    apply(result.chat);
    // In a group an edited message is answered by a round: its later speakers follow.
    state.round = result.round ?? null;
    attach(result.task, result.round?.speakers[0] ?? null);
    return true;
  }

  async function generate(kind) {
    if (state.task || !state.chat) return;
    // Nothing can answer yet: the first connection's form is right there, so go to it.
    if (!notice.hidden) {
      notice.scrollIntoView({ block: "nearest" });
      notice.querySelector("select, input")?.focus();
      return;
    }
    if (kind === "normal" && input.value.trim().startsWith("/")) {
      const next = await runScript(input.value.trim());
      if (next) await generate(next === "trigger" ? "normal" : next);
      return;
    }
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal") {
      body.text = input.value;
      if (pendingPicture) body.image = pendingPicture.url;
      if (!body.text.trim() && !body.image && !state.total) return;
    }
    // The reply streams at the end of the path: be there (the far end may have been dropped).
    if (hasNewer()) await load();
    const kept = kind === "normal" ? t("kept.message") : t("kept.page");
    if (kind === "normal" && state.chat.group_id) {
      if (await startRound({ text: body.text, revision: body.revision }, kept)) {
        input.value = "";
        keepUnsent();
      }
      return;
    }
    if ((await start(() => api.post(`${chatUrl}/generate`, body), kept, kind === "normal" ? kept : "")) && kind === "normal") {
      input.value = "";
      keepUnsent();
      pendingPicture = null;
      showPendingPicture();
    }
  }

  // ---------------------------------------------------------------- pictures

  /** Let the person pick a picture file, upload it, and hand the stored picture to `then`. */
  function choosePicture(then) {
    const picker = h("input", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp", hidden: true });
    picker.addEventListener("change", async () => {
      const file = picker.files?.[0];
      picker.remove();
      if (!file) return;
      try {
        await then(await api.upload("/images", formWith({ file })));
      } catch (error) {
        reportError(error);
      }
    });
    document.body.append(picker);
    picker.click();
  }

  function showPendingPicture() {
    pictureChip.replaceChildren();
    pictureChip.hidden = !pendingPicture;
    if (!pendingPicture) return;
    pictureChip.append(
      h("img", { src: pendingPicture.url, alt: t("chat.picture"), class: "thumb" }),
      h("span", { text: t("chat.picture_size", { w: pendingPicture.width, h: pendingPicture.height }) }),
      iconButton(t("chat.picture_remove"), "close", () => {
        pendingPicture = null;
        showPendingPicture();
      }, { class: "remove-picture" }),
    );
  }

  const setPicture = (m, image) =>
    write(() => api.put(`${chatUrl}/messages/${m.id}/image`, { image, revision: state.chat.revision }));

  /** A failed generation, told on the spot where its reply would have been: the cause in
   * words, the server's own message, and Retry (the same kind of generation again). */
  function showFailure(failure) {
    state.failure = failure;
    placeFailure();
  }

  function placeFailure() {
    list.querySelector("#failure")?.remove();
    const failure = state.failure;
    if (!failure || state.task) return;
    const retry = retryable(failure.cause) ? h("button", { type: "button", class: "primary small", id: "retry", text: t("chat.retry"), onClick: () => retryFailed(failure.kind) }) : null;
    const dismiss = h("button", { type: "button", class: "small", text: t("chat.dismiss"), onClick: () => {
      state.failure = null;
      placeFailure();
    } });
    const detail = failure.message ? h("p", { translate: "no", class: "muted failure-detail", text: failure.message }) : null;
    newerEdge.before(h("li", { class: "message assistant failed", id: "failure", role: "alert" },
      h("div", { class: "bubble" },
        h("p", { class: "failure-title", text: t(failure.kind === "impersonate" ? "chat.failed_impersonate" : "chat.failed_reply") }),
        h("p", { class: "failure-cause", text: failureCause(failure.cause, failure.message) }),
        detail,
        h("div", { class: "row wrap" }, retry, dismiss))));
    list.scrollTop = list.scrollHeight;
  }

  async function retryFailed(kind) {
    if (state.task || !state.chat) return;
    state.failure = null;
    placeFailure();
    // A failed send stored the person's message: the retry answers it (no new text).
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal") body.text = "";
    if (!(await start(() => api.post(`${chatUrl}/generate`, body)))) showFailure({ kind, message: "", cause: null });
  }

  function attach(task, speaker = null) {
    if (state.closeStream) state.closeStream();
    state.failure = null;
    placeFailure();
    const last = lastHeld();
    // A group reply is written by one member: a round names it, a swipe keeps the last one's.
    const author = speaker ?? (state.chat.group_id && task.kind !== "impersonate" && last?.role === "assistant" ? last.name : null);
    state.task = { ...task, speaker: author, base: task.kind === "continue" && last ? last.content : "" };
    drawMembers();
    state.streamText = "";
    state.reasoningText = "";
    placeStreamItem();
    updateControls();
    list.scrollTop = list.scrollHeight;
    state.closeStream = followTask(task.id, async (kind, data) => {
      if (kind === "delta") {
        state.streamText += data.text || "";
        updateStream();
      } else if (kind === "reasoning") {
        const first = !state.reasoningText;
        state.reasoningText += data.text || "";
        const shown = list.querySelector("#streaming .reasoning-text");
        if (shown) shown.textContent = state.reasoningText;
        else if (first) placeStreamItem();
      } else if (["done", "error", "cancelled", "lost"].includes(kind)) {
        const impersonated = state.task?.kind === "impersonate" ? state.streamText : null;
        const failedKind = state.task?.kind || "normal";
        const finished = { normal: ["user", "ai"], regenerate: ["ai"], swipe: ["ai"], continue: ["ai"] }[state.task?.kind];
        state.task = null;
        state.closeStream = null;
        list.querySelector("#streaming")?.remove();
        updateControls();
        if (kind === "error") showFailure({ kind: failedKind, message: data.message || "", cause: data.cause || null });
        if (kind === "cancelled") toast(t("chat.stopped"));
        if (kind === "done" && data.outcome === "saving") toast(t("chat.saving_note"), "warning");
        if (impersonated !== null) {
          input.value = data.text ?? impersonated;
          keepUnsent();
          // The text is in the input box now; its stored draft is not needed.
          if (data.draft_id) await api.del(`/drafts/${data.draft_id}`).catch(() => {});
        }
        if (kind === "lost") toast(t("chat.reconnecting"));
        // The server may be going away as the stream ends (a restart): keep trying.
        if (kind === "lost" || !(await refreshEnd())) await recover();
        placeFailure();
        // Quick Replies on the person's message and on the reply run once the turn is saved.
        // a reply still being saved (the server keeps it until its database answers) has
        // no message yet for Quick Replies to run on
        const stored = kind === "done" && data.outcome !== "saving";
        if (stored && finished) await runTriggered(...finished);
        if (stored && finished) await runAutomations();
        // A round goes on with its next speaker; a stop or a failure has ended it.
        if (state.round && kind === "done") await followRound();
        else {
          state.round = null;
          // a stop or a failure turns auto mode off: the person takes over
          if (kind !== "done") state.auto = false;
          drawMembers();
        }
        state.idleSince = Date.now();
      }
    });
  }

  /** After a generation: read the end of the path again from the message before the last
   * one (a reply was added, swapped or grown there), and the drafts. False if it failed. */
  async function refreshEnd() {
    try {
      const shown = held();
      if (hasNewer() || shown.length < 2) {
        await load();
        return true;
      }
      const anchor = shown[shown.length - 2];
      const page = await api.get(`${chatUrl}?limit=${PAGE}&after=${encodeURIComponent(anchor.id)}`);
      if (page.window.has_newer) await load();
      else {
        apply(page, "change");
        loadContextLine();
        loadDrafts();
      }
      return true;
    } catch {
      return false;
    }
  }

  // Read the chat again, waiting for the server to answer if it is restarting.
  async function recover() {
    for (let attempt = 0; attempt < 120 && !closed; attempt += 1) {
      try {
        await load();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  // Unsent text is kept per chat in this browser, so a reload or a crash does not lose it.
  const unsentKey = `taverna.unsent.${params.id}`;
  function keepUnsent() {
    try {
      if (input.value) localStorage.setItem(unsentKey, input.value);
      else localStorage.removeItem(unsentKey);
    } catch {
      // storage full or off: the text stays in the box all the same
    }
  }
  input.addEventListener("input", keepUnsent);
  input.value = localStorage.getItem(unsentKey) || "";

  sendButton.addEventListener("click", () => generate("normal"));
  stopButton.addEventListener("click", async () => {
    const round = state.round;
    state.round = null; // Stop ends the round: nobody follows the one stopped
    if (round) await api.post(`/rounds/${round.id}/stop`).catch(() => {});
    if (state.task) await api.post(`/tasks/${state.task.id}/stop`);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && finePointer.matches) {
      event.preventDefault();
      generate("normal");
    }
  });
  branchSelect.addEventListener("change", () =>
    write(() => api.post(`${chatUrl}/branches/${branchSelect.value}/switch`, { revision: state.chat.revision })));

  updateControls();
  await load();
  const jump = takeJump(params.id);
  if (jump) await showHit(jump);
  await loadQuickReplies();
  turn.load();
  askRegexConsent();
  // SillyTavern's order: the app starting, a new chat, then the chat being opened.
  runTriggered(...(firstStart() ? ["startup"] : []), ...(takeNewChat(params.id) ? ["new_chat"] : []), "chat_change");
  api.get("/connections").then((found) => {
    // The notice takes room from the list: keep its end in sight.
    const stick = atBottom();
    notice.hidden = found.length > 0;
    const chosen = found.find((c) => c.default) || found[0];
    localNotice.hidden = chosen?.api !== "local";
    if (stick) list.scrollTop = list.scrollHeight;
  }).catch(() => {});
  return () => {
    closed = true;
    // The chat's drawers belong to it: leaving the chat closes them.
    for (const id of ["tree", "inspector", "chat-settings", "chat-search"]) document.getElementById(id)?.remove();
    clearInterval(autoTimer);
    edges.disconnect();
    if (state.closeStream) state.closeStream();
  };
}
