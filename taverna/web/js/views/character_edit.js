// One character: every card field, its lorebook, its chats, export.

import { api, markNewChat } from "../api.js";
import { formWith, h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { roleLabel } from "../labels.js";
import { fieldForm } from "../form.js";
import { importCardLorebook, startChat } from "./characters.js";

// Every card field a person edits, in the order shown, and the character's lorebook.
const fields = (lorebooks) => [
  ["name", "line"],
  ["nickname", "line"],
  ["description", "text", { rows: 8 }],
  ["personality", "text"],
  ["scenario", "text"],
  ["first_mes", "text"],
  ["alternate_greetings", "custom", { control: greetingsEditor }],
  ["group_only_greetings", "custom", { control: greetingsEditor }],
  ["mes_example", "text", { rows: 8 }],
  ["system_prompt", "text"],
  ["post_history_instructions", "text"],
  ["depth_prompt", "text"],
  ["depth_prompt_depth", "number"],
  ["depth_prompt_role", "choice", { choices: ["system", "user", "assistant"].map((r) => [r, roleLabel(r)]) }],
  ["talkativeness", "number"],
  ["creator_notes", "text"],
  ["creator", "line"],
  ["character_version", "line"],
  ["tags", "list", { placeholder: t("character.tags_hint") }],
  ["favorite", "bool", { label: t("character.favorite") }],
  ["lorebook_id", "choice", {
    id: "f-lorebook",
    label: t("character.lorebook"),
    choices: [["", t("character.no_lorebook")], ...lorebooks.map((b) => [b.id, b.name, true])],
  }],
];

function greetingsEditor(values, label) {
  const box = h("div", { class: "greetings", role: "group", "aria-label": label });
  const addOne = (value) => {
    const area = h("textarea", { rows: 3, value, "aria-label": label });
    const item = h("div", { class: "greeting" }, area,
      h("button", { type: "button", class: "small danger", text: t("common.remove"), onClick: () => item.remove() }));
    box.insertBefore(item, addButton);
  };
  const addButton = h("button", { type: "button", class: "small", text: t("character.add_greeting"), onClick: () => addOne("") });
  box.append(addButton);
  (values || []).forEach(addOne);
  box.read = () => [...box.querySelectorAll("textarea")].map((a) => a.value);
  return box;
}

export async function render(root, params) {
  // A redraw after a save may finish after the person has gone elsewhere: it then draws nothing.
  const shown = location.hash;
  const isNew = !params.id;
  const character = isNew ? { name: "" } : await api.get(`/characters/${params.id}`);
  const lorebooks = await api.get("/lorebooks");
  const form = fieldForm(fields(lorebooks), character, { box: h("form", { class: "editor", id: "character-form" }), shownOnly: true });
  const save = h("button", { type: "submit", class: "primary", text: t("common.save") });
  form.append(h("div", { class: "row sticky-actions" }, save));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = form.read();
    if (isNew) {
      const created = await api.post("/characters", body);
      toast(t("common.saved"));
      location.hash = `#/characters/${created.id}`;
    } else {
      await api.put(`/characters/${params.id}`, { ...body, revision: character.revision });
      toast(t("common.saved"));
      render(root, params);
    }
  });

  // The character's lorebook: the one linked, or the card's own book waiting to be imported.
  const lorebookPanel = () => h("section", { class: "character-lorebook", id: "character-lorebook" },
    h("h2", { text: t("character.lorebook") }),
    character.lorebook_id
      ? h("p", {}, h("a", { href: `#/lorebooks/${character.lorebook_id}`, id: "open-lorebook", translate: character.lorebook_name ? "no" : null, text: character.lorebook_name || t("character.lorebook") }))
      : character.has_embedded_lorebook
        ? h("div", {},
          h("p", { class: "muted", text: t("character.embedded_book", { n: character.embedded_lorebook_entries }) }),
          h("button", { type: "button", id: "import-card-lorebook", text: t("character.import_book"), onClick: async () => {
            await importCardLorebook(character);
            render(root, params);
          } }))
        : h("p", { class: "muted", text: t("character.no_lorebook") }));
  const side = h("div", { class: "side" });
  if (!isNew) {
    const avatarInput = h("input", { type: "file", accept: "image/png,image/jpeg,image/webp", hidden: true });
    avatarInput.addEventListener("change", async () => {
      if (!avatarInput.files[0]) return;
      await api.upload(`/characters/${params.id}/avatar`, formWith({ file: avatarInput.files[0] }));
      render(root, params);
    });
    const chats = await api.get(`/chats?character_id=${encodeURIComponent(params.id)}`);
    side.append(
      character.avatar_url ? h("img", { class: "portrait", src: `${character.avatar_url}?r=${character.revision ?? ""}`, alt: t("character.avatar_of", { name: character.name }) }) : null,
      h("div", { class: "row wrap" },
        h("button", { type: "button", class: "primary", text: t("characters.chat"), onClick: () => startChat(params.id) }),
        h("button", { type: "button", text: t("character.change_avatar"), onClick: () => avatarInput.click() }), avatarInput,
        h("a", { class: "button", href: `/api/characters/${params.id}/export?format=png`, download: "", text: t("character.export_png") }),
        h("a", { class: "button", href: `/api/characters/${params.id}/export?format=json`, download: "", text: t("character.export_json") }),
        h("button", { type: "button", class: "danger", text: t("common.delete"), onClick: async () => {
          if (!confirm(t("character.confirm_delete", { name: character.name }))) return;
          await api.del(`/characters/${params.id}`);
          location.hash = "#/characters";
        } })),
      lorebookPanel(),
      h("h2", { text: t("character.chats") }),
      h("ul", { class: "list" }, chats.length ? chats.map((c) => h("li", {}, h("a", { translate: "no", href: `#/chat/${c.id}`, text: c.title }),
        h("span", { class: "muted", text: t("chats.summary", { messages: c.message_count, branches: c.branch_count }) }))) : h("li", { class: "muted", text: t("chats.none") })),
      h("button", { type: "button", text: t("chats.new"), onClick: async () => {
        const chat = await api.post("/chats", { character_id: params.id });
        markNewChat(chat.id);
        location.hash = `#/chat/${chat.id}`;
      } }),
    );
  }
  if (location.hash !== shown) return;
  mount(root,
    h("div", { class: "page-head" }, h("a", { href: "#/characters", class: "back", text: "‹", "aria-label": t("chat.back") }),
      h("h1", { translate: isNew ? null : "no", text: isNew ? t("characters.new") : character.name })),
    h("div", { class: "split character-split" }, form, side));
}
