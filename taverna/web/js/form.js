// A form built from a field list: [name, kind, options]; read() gives the values back.

import { h } from "./dom.js";
import { t } from "./i18n.js";

export function fieldForm(fields, values, prefix = "f") {
  const controls = {};
  const body = h("div", { class: "fields" });
  for (const [name, kind, options] of fields) {
    const id = `${prefix}-${name}`;
    const value = values?.[name];
    const label = t(`field.${name}`);
    let control;
    if (kind === "bool") {
      control = h("input", { id, type: "checkbox", checked: !!value });
      body.append(h("label", { class: "check", for: id }, control, h("span", { text: label })));
    } else {
      if (kind === "text") control = h("textarea", { id, rows: options?.rows || 4, value: value ?? "" });
      else if (kind === "number") control = h("input", { id, type: "number", step: "any", value: value ?? "" });
      else if (kind === "list") control = h("input", { id, type: "text", value: (value || []).join(", ") });
      else if (kind === "choice") {
        control = h("select", { id }, options.map((o) => {
          const [v, text] = Array.isArray(o) ? o : [o, o];
          return h("option", { value: v, selected: String(value) === String(v) ? "selected" : null, text });
        }));
      } else control = h("input", { id, type: "text", value: value ?? "" });
      body.append(h("label", { class: `field ${kind}`, for: id }, h("span", { text: label }), control));
    }
    controls[name] = [kind, control];
  }
  body.read = () => {
    const out = {};
    for (const [name, [kind, control]] of Object.entries(controls)) {
      if (kind === "bool") out[name] = control.checked;
      else if (kind === "number") out[name] = control.value === "" ? null : Number(control.value);
      else if (kind === "list") out[name] = control.value.split(/[,，]/).map((s) => s.trim()).filter(Boolean);
      else out[name] = control.value;
    }
    return out;
  };
  return body;
}
