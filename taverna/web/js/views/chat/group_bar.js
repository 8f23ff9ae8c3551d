// A group chat's members: who they are, who is muted, who speaks next, with their buttons to
// speak now and to write the last reply again as them. The group's own settings are drawn by
// group_settings.js, the rounds the members answer in are followed by rounds.js.

import { api } from "../../api.js";
import { h, mount } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";
import { groupSettings, memberModels } from "./group_settings.js";
import { avatarFor } from "./message_parts.js";
import { groupRounds } from "./rounds.js";

/** The members' bar and its verbs (`load`, `draw`, `startRound`, `followRound`, `stop`). */
export function groupBar(store, chat) {
  const { state } = store;
  const members = h("aside", { class: "group-members", id: "group-members", hidden: true, "aria-label": t("groups.members") });
  const rounds = groupRounds(store, chat);

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
      h("ul", { class: "member-list" }, group.members.map((m) => memberItem(store, m, speaking, { setMuted, rounds }))),
      groupSettings(state, group, changeGroup),
      memberModels(state, group, changeGroup));
    fold.addEventListener("toggle", () => {
      state.membersOpen = fold.open;
    });
    mount(members, fold,
      h("p", { class: "next-speakers muted", id: "next-speakers", text: speaking
        ? t("groups.speaking", { name: speaking, next: next.join(", ") || "—" })
        : t(`groups.strategy_note.${group.activation_strategy}`) }));
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
    startRound: rounds.startRound,
    followRound: rounds.followRound,
    stop: rounds.stop,
  };
}

/** One member: avatar, name, muted, speak now, and write the last reply again as them;
 * `setMuted(name, muted)` writes the muted ones, `rounds` speaks. */
function memberItem(store, m, speaking, { setMuted, rounds }) {
  const { state } = store;
  const mute = h("input", { type: "checkbox", checked: m.muted ? "checked" : null, "aria-label": t("groups.mute_who", { name: m.name }) });
  mute.addEventListener("change", () => setMuted(m.name, mute.checked));
  const speak = h("button", { type: "button", class: "small speak", text: t("groups.speak"), "aria-label": t("groups.speak_who", { name: m.name }), onClick: () => rounds.speakNow(m.name) });
  speak.disabled = !!state.task || !state.chat;
  // A new candidate for the last reply, written by this member instead.
  const rewrite = h("button", { type: "button", class: "small rewrite", text: "↻", title: t("groups.rewrite_as", { name: m.name }), "aria-label": t("groups.rewrite_as", { name: m.name }), onClick: () => rounds.rewriteAs(m.name) });
  rewrite.dataset.off = store.canRewrite() ? "0" : "1";
  rewrite.disabled = !!state.task || !state.chat || rewrite.dataset.off === "1";
  return h("li", { class: `member${m.muted ? " muted" : ""}${speaking === m.name ? " speaking" : ""}`, "data-name": m.name },
    avatarFor({ role: "assistant", name: m.name, avatar_url: m.avatar_url }, state.chat),
    h("span", { translate: "no", class: "name", text: m.name }),
    h("label", { class: "mute" }, mute, h("span", { text: t("groups.muted") })),
    speak, rewrite);
}
