// One preset: the prompt manager (order, switch, edit slots) and sampling; or a template's fields.

import { api } from "../api.js";
import { h, iconButton, mount, toast } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";
import { roleLabel, slotLabel, slotNamed } from "../labels.js";
import { fieldForm, inferFields } from "../form.js";
import { slotTokenBar } from "./slot_tokens.js";

function promptManager(prompts, onEdit, onDelete) {
  const list = h("ol", { class: "prompt-order" });
  let counts = null; // each slot's tokens in the chosen chat, by identifier
  // A slot's count, written into its place (the list is not drawn again for it).
  const fill = (span, p) => {
    const shown = counts && !(p.marker && !(p.identifier in counts));
    const n = shown ? counts[p.identifier] ?? 0 : 0;
    span.hidden = !shown;
    span.classList.toggle("muted", !n);
    span.textContent = shown ? t("presets.slot_tokens", { n }) : "";
  };
  const tokens = (p) => {
    const span = h("span", { class: "slot-tokens", title: t("presets.slot_tokens_title") });
    span.forSlot = p; // (not `slot`: an element has that attribute)
    fill(span, p);
    return span;
  };
  const draw = () => {
    mount(list, prompts.map((p, i) => {
      const label = slotLabel(p);
      const toggle = h("input", { type: "checkbox", checked: p.enabled, "aria-label": t("presets.enable_slot", { name: label }) });
      toggle.addEventListener("change", () => { p.enabled = toggle.checked; });
      const up = iconButton(t("presets.move_up"), "up", () => { [prompts[i - 1], prompts[i]] = [prompts[i], prompts[i - 1]]; draw(); });
      const down = iconButton(t("presets.move_down"), "down", () => { [prompts[i + 1], prompts[i]] = [prompts[i], prompts[i + 1]]; draw(); });
      up.disabled = i === 0;
      down.disabled = i === prompts.length - 1;
      const remove = p.deletable
        ? iconButton(t("presets.delete_slot", { name: label }), "trash", () => onDelete(p), { class: "danger" })
        : null;
      return h("li", { class: `slot${p.marker ? " marker" : ""}`, "data-identifier": p.identifier },
        h("label", { class: "slot-toggle" }, toggle),
        h("button", { type: "button", class: "link grow", translate: slotNamed(p) ? null : "no", text: label, disabled: p.marker ? true : null, onClick: () => onEdit(p) }),
        h("span", { class: "muted", text: p.marker ? t("presets.marker") : roleLabel(p.role || "system") }),
        tokens(p), up, down, remove);
    }));
  };
  draw();
  list.redraw = draw;
  list.showCounts = (map) => {
    counts = map;
    list.querySelectorAll(".slot-tokens").forEach((span) => fill(span, span.forSlot));
  };
  return list;
}

// A slot's fields; its depth and order count only for a slot placed in the chat.
const slotFields = (withEnabled) => [
  ["name", "line"],
  ["role", "choice", { choices: ["system", "user", "assistant"].map((r) => [r, roleLabel(r)]) }],
  ["injection_position", "choice", { id: "slot-position", label: t("presets.position"), choices: [[0, t("presets.relative")], [1, t("presets.in_chat")]] }],
  ["injection_depth", "number", { id: "slot-depth", label: t("field.depth"), empty: 0, attrs: { min: 0, step: null } }],
  ["injection_order", "number", { id: "slot-order", label: t("presets.order"), empty: 0, attrs: { step: null } }],
  ...(withEnabled ? [["enabled", "bool", { label: t("presets.slot_enabled") }]] : []),
  ["content", "text", { rows: 10, wide: true }],
];

const SLOT_DEFAULTS = { name: "", role: "system", injection_position: 0, injection_depth: 4, injection_order: 100, enabled: true, content: "" };

/** The fields of one slot; `onDone(values)` gets them when the button is pressed. */
function slotEditor(p, box, { title, button, withEnabled }, onDone) {
  mount(box, h("h3", { translate: p.identifier && !slotNamed(p) ? "no" : null, text: title }));
  const values = { ...p };
  for (const [name, value] of Object.entries(SLOT_DEFAULTS)) values[name] ??= value;
  const form = fieldForm(slotFields(withEnabled), values, { prefix: "slot", box, shownOnly: true });
  const position = form.fields.injection_position.control;
  const syncPosition = () => {
    for (const name of ["injection_depth", "injection_order"]) form.fields[name].label.hidden = position.value !== "1";
  };
  position.addEventListener("change", syncPosition);
  syncPosition();
  box.append(h("button", { type: "button", text: button, onClick: () => onDone(form.read()) }));
}

function editSlot(p, box) {
  slotEditor(p, box, { title: slotLabel(p), button: t("presets.apply_slot"), withEnabled: false }, (values) => {
    Object.assign(p, values);
    toast(t("presets.slot_applied"));
  });
}

/** "Save as": the preset as open (with its unsaved edits) stored under a new name, then opened. */
function saveAs(params, body) {
  const name = h("input", { type: "text", id: "save-as-name", maxlength: 200, placeholder: t("presets.new_name"), "aria-label": t("presets.new_name") });
  const form = h("form", { class: "name-form save-as" }, name, h("button", { type: "submit", text: t("presets.save_as") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const wanted = name.value.trim();
    if (!wanted) { toast(t("presets.needs_name"), "error"); name.focus(); return; }
    try {
      const copy = await api.post(`/presets/${params.id}/copy`, { name: wanted });
      const edits = body();
      // A template carries its name inside too: the copy's is the new one.
      if (edits.data && "name" in edits.data) edits.data.name = copy.name;
      await api.put(`/presets/${copy.id}`, { ...edits, name: copy.name });
      toast(t("presets.saved_as", { name: copy.name }));
      location.hash = `#/presets/${copy.id}`;
    } catch (error) {
      toast(explain(error), "error");
    }
  });
  return form;
}

export async function render(root, params) {
  const preset = await api.get(`/presets/${params.id}`);
  const back = preset.kind === "chat" ? "#/presets" : "#/templates";
  const head = h("div", { class: "page-head" }, h("a", { href: back, class: "back", text: "‹", "aria-label": t("chat.back") }), h("h1", { translate: "no", text: preset.name }));
  const save = h("button", { type: "button", class: "primary", text: t("common.save") });
  if (preset.kind === "chat") {
    const slotBox = h("div", { class: "slot-editor" });
    const manager = promptManager(preset.prompts, (p) => editSlot(p, slotBox), async (p) => {
      const label = p.name || p.identifier;
      if (!confirm(t("presets.confirm_delete_slot", { name: label }))) return;
      await api.del(`/presets/${params.id}/prompts/${encodeURIComponent(p.identifier)}`);
      // Other unsaved changes on the page (order, switches) stay as they are.
      preset.prompts.splice(preset.prompts.indexOf(p), 1);
      manager.redraw();
      mount(slotBox);
      toast(t("presets.slot_deleted", { name: label }));
    });
    const newSlot = h("button", { type: "button", text: t("presets.new_slot"), onClick: () => {
      slotEditor({ enabled: true }, slotBox, { title: t("presets.new_slot"), button: t("presets.add_slot"), withEnabled: true }, async (values) => {
        if (!values.name.trim()) { toast(t("presets.slot_needs_name"), "error"); return; }
        const saved = await api.post(`/presets/${params.id}/prompts`, values);
        preset.prompts.push(saved.prompts[saved.prompts.length - 1]);
        manager.redraw();
        mount(slotBox);
        toast(t("presets.slot_added", { name: values.name }));
      });
      slotBox.querySelector("#slot-name").focus();
    } });
    const sampling = fieldForm(inferFields(preset.sampling), preset.sampling, { prefix: "s", labels: "sampling" });
    mount(root, head,
      h("div", { class: "split" },
        h("section", {}, h("h2", { text: t("presets.prompt_manager") }), slotTokenBar(preset, manager.showCounts), manager, h("div", { class: "row" }, newSlot), slotBox),
        h("section", {}, h("h2", { text: t("presets.sampling") }), sampling)),
      h("div", { class: "row sticky-actions" }, save, saveAs(params, () => ({ prompts: preset.prompts, sampling: sampling.read() }))));
    save.addEventListener("click", async () => {
      await api.put(`/presets/${params.id}`, { name: preset.name, prompts: preset.prompts, sampling: sampling.read() });
      toast(t("common.saved"));
    });
  } else {
    const fields = fieldForm(inferFields(preset.data), preset.data, { prefix: "tp", labels: "template" });
    mount(root, head, fields, h("div", { class: "row sticky-actions" }, save, saveAs(params, () => ({ data: fields.read() }))));
    save.addEventListener("click", async () => {
      await api.put(`/presets/${params.id}`, { name: preset.name, data: fields.read() });
      toast(t("common.saved"));
    });
  }
}
