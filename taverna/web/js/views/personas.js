// Personas: who the user plays; one is the default.

import { api } from "../api.js";
import { formWith, h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { personaLabel, roleLabel } from "../labels.js";
import { fieldForm } from "../form.js";

// SillyTavern's persona description positions and roles, by number.
const fields = () => [
  ["name", "line"],
  ["description", "text"],
  ["position", "choice", { choices: [[0, t("personas.pos_prompt")], [2, t("personas.pos_before_an")], [3, t("personas.pos_after_an")], [4, t("personas.pos_depth")], [9, t("personas.pos_none")]] }],
  ["depth", "number"],
  ["role", "choice", { choices: [[0, roleLabel("system")], [1, roleLabel("user")], [2, roleLabel("assistant")]] }],
  ["is_default", "bool"],
];

export async function render(root) {
  const list = h("ul", { class: "list" });
  const editor = h("div", { class: "editor" });
  mount(root, h("div", { class: "page-head" }, h("h1", { text: t("nav.personas") }),
    h("button", { type: "button", class: "primary", text: t("personas.new"), onClick: () => edit({ name: "", description: "", position: 0, depth: 2, role: 0 }) })),
  h("div", { class: "split" }, list, editor));

  const edit = (p) => {
    const form = fieldForm(fields(), p, { prefix: "persona", shownOnly: true });
    const picker = h("input", { type: "file", accept: "image/png,image/jpeg,image/webp", hidden: true });
    picker.addEventListener("change", async () => {
      if (!picker.files[0]) return;
      await api.upload(`/personas/${p.id}/avatar`, formWith({ file: picker.files[0] }));
      toast(t("common.saved"));
      edit({ ...p, avatar_url: `${p.avatar_url}?t=${Date.now()}` });
    });
    const picture = p.id
      ? h("div", { class: "row" },
        h("img", { class: "avatar big", src: p.avatar_url, alt: t("character.avatar_of", { name: p.name }) }),
        h("button", { type: "button", text: t("character.change_avatar"), onClick: () => picker.click() }), picker)
      : null;
    mount(editor, h("h2", { translate: p.id ? "no" : null, text: p.id ? personaLabel(p.name) : t("personas.new") }), picture, form,
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", text: t("common.save"), onClick: async () => {
          const body = form.read();
          body.depth = body.depth ?? 2;
          if (p.id) await api.put(`/personas/${p.id}`, body);
          else await api.post("/personas", body);
          toast(t("common.saved"));
          reload();
        } }),
        p.id ? h("button", { type: "button", class: "danger", text: t("common.delete"), onClick: async () => {
          await api.del(`/personas/${p.id}`);
          mount(editor);
          reload();
        } }) : null));
  };
  const reload = async () => {
    const personas = await api.get("/personas");
    mount(list, personas.length ? personas.map((p) => h("li", {},
      h("button", { type: "button", class: "link", onClick: () => edit(p) },
        h("span", { translate: "no", text: personaLabel(p.name) }), p.is_default ? ` (${t("personas.default")})` : ""),
      h("span", { class: "muted clip", translate: "no", text: p.description }))) : h("li", { class: "muted", text: t("personas.none") }));
  };
  await reload();
}
