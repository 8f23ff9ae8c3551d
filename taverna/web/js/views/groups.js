// Groups: several characters in one chat. Make a group (members in speaking order, how
// they take turns, Swap or Join), open its newest chat or start one.

import { api, markNewChat } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { reportError } from "../errors.js";
import { t } from "../i18n.js";

const STRATEGIES = ["natural", "list", "pooled", "manual"];
const MODES = ["swap", "join", "join_with_muted"];

function avatar(m) {
  return m.avatar_url
    ? h("img", { class: "avatar", src: m.avatar_url, alt: "", loading: "lazy" })
    : h("span", { class: "avatar letter", "aria-hidden": "true", text: [...(m.name || "?")][0] });
}

/** Open the group's newest chat, or start one. */
export async function openGroupChat(groupId) {
  const chats = (await api.get("/chats")).filter((c) => c.group_id === groupId);
  const chat = chats.length ? chats[0] : await api.post(`/groups/${groupId}/chats`, {});
  if (!chats.length) markNewChat(chat.id);
  location.hash = `#/chat/${chat.id}`;
}

function groupItem(g) {
  return h("li", { class: "card group-card", "data-id": g.id },
    h("div", { class: "group-avatars" }, g.members.map(avatar)),
    h("span", { translate: "no", class: "card-name", text: g.name }),
    h("span", { translate: "no", class: "card-sub", text: g.members.map((m) => m.name).join(", ") }),
    h("button", { type: "button", class: "small", text: t("groups.chat"), "aria-label": t("groups.chat_with", { name: g.name }), onClick: () => openGroupChat(g.id) }));
}

function newGroupForm(characters, done) {
  const chosen = []; // character ids in the order they were ticked: the speaking order
  const order = h("ol", { class: "group-order", "aria-label": t("groups.order") });
  const drawOrder = () => mount(order, chosen.map((id) => h("li", { translate: "no", text: characters.find((c) => c.id === id)?.name || id })));
  const name = h("input", { type: "text", id: "group-name", required: true, "aria-label": t("groups.name") });
  const strategy = h("select", { id: "group-strategy", "aria-label": t("groups.strategy") },
    STRATEGIES.map((s) => h("option", { value: s, text: t(`groups.strategy.${s}`) })));
  const mode = h("select", { id: "group-mode", "aria-label": t("groups.mode") },
    MODES.map((m) => h("option", { value: m, text: t(`groups.mode.${m}`) })));
  const picks = h("ul", { class: "group-picks" }, characters.map((c) => {
    const box = h("input", { type: "checkbox", value: c.id, "data-name": c.name });
    box.addEventListener("change", () => {
      const at = chosen.indexOf(c.id);
      if (box.checked && at < 0) chosen.push(c.id);
      if (!box.checked && at >= 0) chosen.splice(at, 1);
      drawOrder();
    });
    return h("li", {}, h("label", {}, box, " ", h("span", { translate: "no", text: c.name })));
  }));
  const create = h("button", { type: "submit", class: "primary", id: "create-group", text: t("groups.create") });
  const form = h("form", { class: "group-form", "aria-label": t("groups.new") },
    h("label", {}, h("span", { text: t("groups.name") }), name),
    h("fieldset", {}, h("legend", { text: t("groups.members") }), picks),
    h("div", {}, h("span", { class: "muted", text: t("groups.order") }), order),
    h("label", {}, h("span", { text: t("groups.strategy") }), strategy),
    h("label", {}, h("span", { text: t("groups.mode") }), mode),
    h("div", { class: "row" }, create));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!name.value.trim() || !chosen.length) {
      toast(t("groups.need_members"), "error");
      return;
    }
    try {
      const made = await api.post("/groups", {
        name: name.value.trim(),
        character_ids: chosen,
        activation_strategy: strategy.value,
        generation_mode: mode.value,
      });
      toast(t("groups.created", { name: made.name }));
      done(made);
    } catch (error) {
      reportError(error, t("kept.nothing_stored"));
    }
  });
  return form;
}

export async function render(root) {
  const list = h("ul", { class: "cards groups" });
  const formBox = h("div", { class: "group-form-box" });
  mount(root,
    h("div", { class: "page-head" },
      h("h1", { text: t("nav.groups") }),
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", id: "new-group", text: t("groups.new"), onClick: async () => {
          const characters = await api.get("/characters");
          mount(formBox, newGroupForm(characters, async (made) => {
            mount(formBox);
            await reload();
            openGroupChat(made.id);
          }));
        } }))),
    formBox, list);
  const reload = async () => {
    const groups = await api.get("/groups");
    mount(list, groups.length ? groups.map(groupItem) : h("li", { class: "empty", text: t("groups.none") }));
  };
  await reload();
}
