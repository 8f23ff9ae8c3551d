// Chat-completion presets, or instruct and context templates: list, new, import, open, delete.
// Text Completion presets are listed with the chat ones: imported, chosen (their own regex
// scripts run on a Text Completion connection), exported and deleted, not edited here.

import { api } from "../api.js";
import { formWith, h, mount, toast, toastWarnings } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";

export async function render(root, params) {
  const kinds = params.kind === "templates" ? ["instruct", "context", "sysprompt"] : ["chat", "text"];
  const editable = (kind) => kind !== "text";
  const picker = h("input", { type: "file", accept: ".json,application/json", multiple: true, hidden: true });
  const kindSelect = h("select", { "aria-label": t("presets.kind") }, kinds.map((k) => h("option", { value: k, text: t(`presets.kind_${k}`) })));
  const lists = h("div", {});
  // New: a preset (or template) holding the product's own defaults, under the name typed.
  const newName = h("input", { type: "text", id: "new-preset-name", maxlength: 200, placeholder: t("presets.new_name"), "aria-label": t("presets.new_name") });
  const newForm = h("form", { class: "name-form new-preset" }, newName,
    h("button", { type: "submit", text: t("presets.new") }));
  // A Text Completion preset is imported, not made here.
  kindSelect.addEventListener("change", () => { newForm.hidden = !editable(kindSelect.value); });
  newForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = newName.value.trim();
    if (!name) { toast(t("presets.needs_name"), "error"); newName.focus(); return; }
    try {
      const made = await api.post("/presets", { kind: kindSelect.value, name });
      toast(t("presets.created", { name: made.name }));
      location.hash = `#/presets/${made.id}`;
    } catch (error) {
      toast(explain(error), "error");
    }
  });
  mount(root, h("div", { class: "page-head" },
    h("h1", { text: params.kind === "templates" ? t("nav.templates") : t("nav.presets") }),
    h("div", { class: "row" }, kinds.length > 1 ? kindSelect : null,
      h("button", { type: "button", class: "primary", text: t("common.import"), onClick: () => picker.click() }))),
  newForm, picker, lists);
  picker.addEventListener("change", async () => {
    for (const file of picker.files) {
      try {
        const preset = await api.upload(`/presets/import?kind=${kindSelect.value}`, formWith({ file }));
        toast(t("presets.imported", { name: preset.name }));
        toastWarnings(file.name, preset.warnings);
      } catch (error) {
        toast(`${file.name}: ${explain(error)} ${t("kept.nothing_stored")}`, "error");
      }
    }
    picker.value = "";
    reload();
  });
  const reload = async () => {
    mount(lists);
    for (const kind of kinds) {
      const presets = await api.get(`/presets?kind=${kind}`);
      lists.append(h("h2", { text: t(`presets.kind_${kind}`) }),
        h("ul", { class: "list" }, presets.length ? presets.map((p) => h("li", {},
          editable(kind)
            ? h("a", { translate: "no", href: `#/presets/${p.id}`, class: "grow", text: p.name })
            : h("span", { translate: "no", class: "grow", text: p.name }),
          p.active ? h("span", { class: "badge", text: t("presets.active") }) : kind === "sysprompt" ? null : h("button", { type: "button", class: "small", text: t("presets.use"), onClick: async () => {
            await api.post(`/presets/${p.id}/activate`);
            reload();
          } }),
          h("a", { class: "button small", href: `/api/presets/${p.id}/export`, download: "", text: t("common.export") }),
          h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: async () => {
            if (!confirm(t("presets.confirm_delete", { name: p.name }))) return;
            await api.del(`/presets/${p.id}`);
            reload();
          } }))) : h("li", { class: "muted", text: t("presets.none") })));
    }
  };
  await reload();
}
