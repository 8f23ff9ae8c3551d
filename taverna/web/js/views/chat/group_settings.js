// A group's own settings in its chat's members bar: the turn order, how cards go into the
// prompt, auto mode, and each member's own connection and preset.

import { h } from "../../dom.js";
import { t } from "../../i18n.js";

/** The group's turn order, how cards go into the prompt, and auto mode (`changeGroup` writes). */
export function groupSettings(state, group, changeGroup) {
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
export function memberModels(state, group, changeGroup) {
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

