// An editor for a flat object whose field types are read from its values.

import { h } from "./dom.js";
import { t } from "./i18n.js";

const label = (prefix, field) => {
  const text = t(`${prefix}.${field}`);
  return text === `${prefix}.${field}` ? field : text;
};

/** Controls for each string, number, boolean or string-list field of `values`; read() returns a copy with edits. */
export function valuesEditor(values, prefix = "field", idPrefix = "g") {
  const controls = {};
  const box = h("div", { class: "fields" });
  for (const [field, value] of Object.entries(values || {})) {
    const id = `${idPrefix}-${field}`;
    let control;
    if (typeof value === "boolean") {
      control = h("input", { id, type: "checkbox", checked: value });
      box.append(h("label", { class: "check", for: id }, control, h("span", { text: label(prefix, field) })));
    } else if (typeof value === "number") {
      control = h("input", { id, type: "number", step: "any", value });
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(prefix, field) }), control));
    } else if (typeof value === "string") {
      control = value.length > 60 || value.includes("\n")
        ? h("textarea", { id, rows: 4, value })
        : h("input", { id, type: "text", value });
      box.append(h("label", { class: "field", for: id }, h("span", { text: label(prefix, field) }), control));
    } else if (Array.isArray(value) && value.every((v) => typeof v === "string")) {
      control = h("textarea", { id, rows: 2, value: value.join("\n"), "data-list": "1" });
      box.append(h("label", { class: "field", for: id }, h("span", { text: `${label(prefix, field)} (${t("common.one_per_line")})` }), control));
    } else continue;
    controls[field] = [value, control];
  }
  box.read = () => {
    const out = { ...values };
    for (const [field, [orig, control]] of Object.entries(controls)) {
      if (typeof orig === "boolean") out[field] = control.checked;
      else if (typeof orig === "number") out[field] = control.value === "" ? orig : Number(control.value);
      else if (Array.isArray(orig)) out[field] = control.value.split("\n").filter((s) => s !== "");
      else out[field] = control.value;
    }
    return out;
  };
  return box;
}
