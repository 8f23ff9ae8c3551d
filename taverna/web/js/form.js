// The page's one form builder: a field list [name, kind, options] in, controls out; read()
// gives the values back.
//
// A choice given as [value, text, true] is a name (a book's, a preset's): marked so, it is
// never taken for a word to translate.
//
// Kinds:
//   line      one line of text
//   text      several lines (options.rows, default 4)
//   number    left empty: options.empty ("keep": the original value; default null)
//   list      words split on commas (the full-width comma too)
//   lines     one item a line
//   choice    a select over options.choices ([value, text] pairs or plain values); numeric
//             values read back as numbers, the empty value as null; options.blank adds an
//             empty choice with that text when the field has no value
//   tristate  on / off / unset (null: "use the global setting")
//   bool      a checkbox
//   custom    options.control(value, label) builds an element with its own read(), shown
//             in a fieldset under the label (e.g. a list of greetings, one textarea each)
// Other options: label (its text; else `${labels}.${name}` from the catalog, else the name),
// id (else `${prefix}-${name}`), placeholder, attrs (more attributes for the control),
// wide (the field spans the whole row).

import { h, withMacros } from "./dom.js";
import { t } from "./i18n.js";

const labelOf = (labels, name) => {
  const key = `${labels}.${name}`;
  const text = t(key);
  return text === key ? name : text;
};

const pairs = (choices) => choices.map((c) => (Array.isArray(c) ? c : [c, c]));

function control(kind, id, value, options) {
  const attrs = { id, placeholder: options.placeholder, ...options.attrs };
  switch (kind) {
    case "bool":
      return h("input", { ...attrs, type: "checkbox", checked: !!value });
    case "text":
      return h("textarea", { ...attrs, rows: options.rows || 4, value: value ?? "" });
    case "number":
      return h("input", { type: "number", step: "any", ...attrs, value: value ?? "" });
    case "list":
      return h("input", { ...attrs, type: "text", value: (value || []).join(", ") });
    case "lines":
      return h("textarea", { ...attrs, rows: options.rows || 2, value: (value || []).join("\n") });
    case "tristate": {
      const pick = value === true ? "true" : value === false ? "false" : "";
      return h("select", attrs, [["", t("form.use_global")], ["true", t("form.yes")], ["false", t("form.no")]].map(([v, text]) =>
        h("option", { value: v, selected: v === pick ? "selected" : null, text })));
    }
    case "choice": {
      const unset = value === null || value === undefined;
      const select = h("select", attrs, pairs(options.choices).map(([v, text, name]) =>
        h("option", { value: v, selected: !unset && String(value) === String(v) ? "selected" : null, text, translate: name ? "no" : null })));
      if (unset && options.blank) select.prepend(h("option", { value: "", selected: "selected", text: options.blank }));
      return select;
    }
    default:
      return h("input", { type: "text", ...attrs, value: value ?? "" });
  }
}

function readOne(kind, el, original, options) {
  switch (kind) {
    case "bool":
      return el.checked;
    case "number":
      if (el.value === "") return options.empty === "keep" ? original : options.empty ?? null;
      return Number(el.value);
    case "list":
      return el.value.split(/[,，]/).map((s) => s.trim()).filter(Boolean);
    case "lines":
      return el.value.split("\n").filter((s) => s !== "");
    case "tristate":
      return el.value === "" ? null : el.value === "true";
    case "choice": {
      if (el.value === "") return null;
      const numeric = pairs(options.choices).some(([v]) => typeof v === "number");
      return numeric ? Number(el.value) : el.value;
    }
    case "custom":
      return el.read();
    default:
      // A field that had no value keeps none when nothing was typed into it.
      return original === null && el.value === "" ? null : el.value;
  }
}

/**
 * Controls for `fields` showing `values`, appended to `box` (a new `div.fields` by default).
 * `box.read()` returns a copy of `values` with the shown fields as edited (with `shownOnly`,
 * the shown fields alone: a body for an endpoint that refuses any other field);
 * `box.fields[name]` is a shown field's label element and control.
 */
export function fieldForm(fields, values, { prefix = "f", labels = "field", box = h("div", { class: "fields" }), shownOnly = false } = {}) {
  const shown = [];
  box.fields = {};
  for (const [name, kind, options = {}] of fields) {
    const id = options.id || `${prefix}-${name}`;
    const value = values?.[name];
    let label = options.label ?? labelOf(labels, name);
    if (kind === "lines") label = `${label} (${t("common.one_per_line")})`;
    let el;
    let row;
    if (kind === "custom") {
      el = options.control(value, label);
      row = h("fieldset", {}, h("legend", { text: label }), el);
    } else {
      el = control(kind, id, value, options);
      row = kind === "bool"
        ? h("label", { class: "check", for: id }, el, h("span", {}, withMacros(label)))
        : h("label", { class: `field ${kind}${options.wide ? " wide" : ""}`, for: id }, h("span", {}, withMacros(label)), el);
    }
    box.append(row);
    box.fields[name] = { label: row, control: el };
    shown.push([name, kind, options, el]);
  }
  box.read = () => {
    const out = shownOnly ? {} : { ...values };
    for (const [name, kind, options, el] of shown) out[name] = readOne(kind, el, values?.[name], options);
    return out;
  };
  return box;
}

/**
 * The field for one value of a flat object, its kind read from the value: on/off → bool,
 * a number → number (left empty, it keeps its value), a string → line (text when long or
 * on several lines), a list of strings → lines. Any other value: null (not shown).
 */
export function inferField(name, value) {
  if (typeof value === "boolean") return [name, "bool"];
  if (typeof value === "number") return [name, "number", { empty: "keep" }];
  if (typeof value === "string") return value.length > 60 || value.includes("\n") ? [name, "text"] : [name, "line"];
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return [name, "lines"];
  return null;
}

/** The field list for every field of a flat object that `inferField` can show. */
export function inferFields(values) {
  return Object.entries(values || {}).map(([name, value]) => inferField(name, value)).filter(Boolean);
}
