// A group chat's members: who they are, who is muted, who speaks next; speak now, write the
// last reply again as another member; the group's turn order, how cards go into the prompt,
// each member's own connection and preset; auto mode; and the rounds the members answer in.

import { api } from "../../api.js";
import { h, mount } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";
import { avatarFor } from "./message_parts.js";

/** The members' bar and its verbs (`load`, `draw`, `startRound`, `followRound`, `stop`). */
export function groupBar(store, chat) {
  const { state } = store;
  const members = h("aside", { class: "group-members", id: "group-members", hidden: true, "aria-label": t("groups.members") });

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
      h("ul", { class: "member-list" }, group.members.map((m) => memberItem(m, speaking))),
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

  /** One member: avatar, name, muted, speak now, and write the last reply again as them. */
  function memberItem(m, speaking) {
    const mute = h("input", { type: "checkbox", checked: m.muted ? "checked" : null, "aria-label": t("groups.mute_who", { name: m.name }) });
    mute.addEventListener("change", () => setMuted(m.name, mute.checked));
    const speak = h("button", { type: "button", class: "small speak", text: t("groups.speak"), "aria-label": t("groups.speak_who", { name: m.name }), onClick: () => speakNow(m.name) });
    speak.disabled = !!state.task || !state.chat;
    // A new candidate for the last reply, written by this member instead.
    const rewrite = h("button", { type: "button", class: "small rewrite", text: "↻", title: t("groups.rewrite_as", { name: m.name }), "aria-label": t("groups.rewrite_as", { name: m.name }), onClick: () => rewriteAs(m.name) });
    rewrite.dataset.off = store.canRewrite() ? "0" : "1";
    rewrite.disabled = !!state.task || !state.chat || rewrite.dataset.off === "1";
    return h("li", { class: `member${m.muted ? " muted" : ""}${speaking === m.name ? " speaking" : ""}`, "data-name": m.name },
      avatarFor({ role: "assistant", name: m.name, avatar_url: m.avatar_url }, state.chat),
      h("span", { translate: "no", class: "name", text: m.name }),
      h("label", { class: "mute" }, mute, h("span", { text: t("groups.muted") })),
      speak, rewrite);
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

  /** Write `changes` to the group at the revision held; a failure reads the group again. */
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

  function setMuted(name, muted) {
    const names = state.group.members.filter((m) => (m.name === name ? muted : m.muted)).map((m) => m.name);
    return changeGroup({ muted: names });
  }

  async function rewriteAs(name) {
    if (state.task || !state.chat || !store.canRewrite()) return;
    const result = await chat.send(() => api.post(`${chat.url}/generate`, { kind: "swipe", member: name, revision: state.chat.revision }));
    if (!result) return;
    chat.apply(result.chat);
    chat.attach(result.task, name);
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
    else drawMembers();
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
    drawMembers();
    return false;
  }

  // Speak and rewrite follow the run: none works while a reply is written.
  store.subscribe(() => {
    const busy = !!state.task || !state.chat;
    for (const button of members.querySelectorAll("button.speak")) button.disabled = busy;
    const rewritable = state.chat ? store.canRewrite() : false;
    for (const button of members.querySelectorAll("button.rewrite")) button.disabled = busy || !rewritable;
  });

  return {
    element: members,
    load: loadGroup,
    draw: drawMembers,
    startRound,
    followRound,
    stop: () => clearInterval(autoTimer),
  };
}
