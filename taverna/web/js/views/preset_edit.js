// One preset: the prompt manager (order, switch, edit slots) and sampling; or a template's fields.

import { api } from "../api.js";
import { h, iconButton, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { valuesEditor } from "../generic.js";

function promptManager(prompts, onEdit) {
  const list = h("ol", { class: "prompt-order" });
  const draw = () => {
    mount(list, prompts.map((p, i) => {
      const toggle = h("input", { type: "checkbox", checked: p.enabled, "aria-label": t("presets.enable_slot", { name: p.name || p.identifier }) });
      toggle.addEventListener("change", () => { p.enabled = toggle.checked; });
      const up = iconButton(t("presets.move_up"), "up", () => { [prompts[i - 1], prompts[i]] = [prompts[i], prompts[i - 1]]; draw(); });
      const down = iconButton(t("presets.move_down"), "down", () => { [prompts[i + 1], prompts[i]] = [prompts[i], prompts[i + 1]]; draw(); });
      up.disabled = i === 0;
      down.disabled = i === prompts.length - 1;
      return h("li", { class: `slot${p.marker ? " marker" : ""}`, "data-identifier": p.identifier },
        toggle,
        h("button", { type: "button", class: "link grow", text: p.name || p.identifier, disabled: p.marker ? true : null, onClick: () => onEdit(p) }),
        h("span", { class: "muted", text: p.marker ? t("presets.marker") : p.role || "system" }),
        up, down);
    }));
  };
  draw();
  return list;
}

function slotEditor(p, box) {
  const role = h("select", { id: "slot-role" }, ["system", "user", "assistant"].map((r) => h("option", { value: r, selected: (p.role || "system") === r ? "selected" : null, text: r })));
  const name = h("input", { id: "slot-name", type: "text", value: p.name || "" });
  const content = h("textarea", { id: "slot-content", rows: 10, value: p.content || "" });
  const position = h("select", { id: "slot-position" }, [[0, t("presets.relative")], [1, t("presets.in_chat")]].map(([v, text]) => h("option", { value: v, selected: Number(p.injection_position || 0) === v ? "selected" : null, text })));
  const depth = h("input", { id: "slot-depth", type: "number", value: p.injection_depth ?? 4 });
  mount(box, h("h3", { text: p.name || p.identifier }),
    h("label", { class: "field", for: "slot-name" }, h("span", { text: t("field.name") }), name),
    h("label", { class: "field", for: "slot-role" }, h("span", { text: t("field.role") }), role),
    h("label", { class: "field", for: "slot-position" }, h("span", { text: t("presets.position") }), position),
    h("label", { class: "field", for: "slot-depth" }, h("span", { text: t("field.depth") }), depth),
    h("label", { class: "field wide", for: "slot-content" }, h("span", { text: t("field.content") }), content),
    h("button", { type: "button", text: t("presets.apply_slot"), onClick: () => {
      Object.assign(p, { name: name.value, role: role.value, content: content.value, injection_position: Number(position.value), injection_depth: Number(depth.value) });
      toast(t("presets.slot_applied"));
    } }));
}

export async function render(root, params) {
  const preset = await api.get(`/presets/${params.id}`);
  const back = preset.kind === "chat" ? "#/presets" : "#/templates";
  const head = h("div", { class: "page-head" }, h("a", { href: back, class: "back", text: "‹", "aria-label": t("chat.back") }), h("h1", { text: preset.name }));
  const save = h("button", { type: "button", class: "primary", text: t("common.save") });
  if (preset.kind === "chat") {
    const slotBox = h("div", { class: "slot-editor" });
    const manager = promptManager(preset.prompts, (p) => slotEditor(p, slotBox));
    const sampling = valuesEditor(preset.sampling, "sampling", "s");
    mount(root, head,
      h("div", { class: "split" },
        h("section", {}, h("h2", { text: t("presets.prompt_manager") }), manager, slotBox),
        h("section", {}, h("h2", { text: t("presets.sampling") }), sampling)),
      h("div", { class: "row sticky-actions" }, save));
    save.addEventListener("click", async () => {
      await api.put(`/presets/${params.id}`, { name: preset.name, prompts: preset.prompts, sampling: sampling.read() });
      toast(t("common.saved"));
    });
  } else {
    const fields = valuesEditor(preset.data, "template", "tp");
    mount(root, head, fields, h("div", { class: "row sticky-actions" }, save));
    save.addEventListener("click", async () => {
      await api.put(`/presets/${params.id}`, { name: preset.name, data: fields.read() });
      toast(t("common.saved"));
    });
  }
}
