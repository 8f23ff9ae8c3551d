// One regex script's form, beside a test box whose result the server computes with the
// engine the chat uses, as you type.

import { api } from "../api.js";
import { h, mount, withMacros } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";
import { ledgerReason } from "../labels.js";
import { regexProblem, startingUse } from "./regex_check.js";

export const PLACEMENTS = [
  [1, "regex.place_user"],
  [2, "regex.place_ai"],
  [3, "regex.place_slash"],
  [5, "regex.place_world"],
  [6, "regex.place_reasoning"],
];
const USES = [
  ["store", "regex.use_store"],
  ["display", "regex.use_display"],
  ["prompt", "regex.use_prompt"],
];

function depthValue(input) {
  const text = input.value.trim();
  if (text === "") return null;
  const n = Number(text);
  return Number.isInteger(n) ? n : null;
}

const field = (label, control) => h("label", { class: "field" }, h("span", {}, withMacros(label)), control);
const flag = (id, key, on) => h("label", { class: "inline" }, h("input", { type: "checkbox", id, checked: !!on }), " ", t(key));

/** Show `script` in `editor`; `edited(script)` gets the script as the form says after each edit. */
export function showScriptEditor(editor, script, edited) {
  const name = h("input", { type: "text", id: "regex-name", value: script.scriptName });
  const find = h("input", { type: "text", id: "regex-find", value: script.findRegex, placeholder: "/pattern/flags", spellcheck: "false" });
  const replace = h("textarea", { id: "regex-replace", rows: 2, spellcheck: "false" });
  replace.value = script.replaceString;
  const trims = h("textarea", { id: "regex-trim", rows: 2, spellcheck: "false" });
  trims.value = (script.trimStrings || []).join("\n");
  const places = PLACEMENTS.map(([value, key]) => h("label", { class: "inline" },
    h("input", { type: "checkbox", "data-placement": value, checked: script.placement.includes(value) }), " ", t(key)));
  const macros = h("select", { id: "regex-macros" },
    h("option", { value: "0", text: t("regex.macros_none") }),
    h("option", { value: "1", text: t("regex.macros_raw") }),
    h("option", { value: "2", text: t("regex.macros_escaped") }));
  macros.value = String(Number(script.substituteRegex === true ? 1 : script.substituteRegex || 0));
  const minDepth = h("input", { type: "number", id: "regex-min-depth", min: -1, value: script.minDepth ?? "" });
  const maxDepth = h("input", { type: "number", id: "regex-max-depth", min: -1, value: script.maxDepth ?? "" });
  const problem = h("p", { id: "regex-find-problem", class: "error", role: "alert", hidden: true });
  const checkFind = () => {
    const why = regexProblem(find.value);
    problem.hidden = !why;
    problem.textContent = why ? t("regex.invalid", { message: why }) : "";
    find.setAttribute("aria-invalid", why ? "true" : "false");
    return why;
  };

  const read = () => ({
    ...script,
    scriptName: name.value,
    findRegex: find.value,
    replaceString: replace.value,
    trimStrings: trims.value.split("\n").filter((line) => line !== ""),
    placement: PLACEMENTS.map(([value]) => value).filter((value) => form.querySelector(`[data-placement="${value}"]`).checked),
    markdownOnly: form.querySelector("#regex-markdown-only").checked,
    promptOnly: form.querySelector("#regex-prompt-only").checked,
    runOnEdit: form.querySelector("#regex-run-on-edit").checked,
    substituteRegex: Number(macros.value),
    minDepth: depthValue(minDepth),
    maxDepth: depthValue(maxDepth),
  });
  const tester = scriptTester(script, read, () => (checkFind() ? problem.textContent : null));

  const form = h("div", { class: "regex-form" },
    h("h2", { text: script.scriptName || t("regex.unnamed") }),
    field(t("regex.name"), name),
    field(t("regex.find"), find), problem,
    field(t("regex.replace"), replace),
    field(t("regex.trim"), trims),
    h("fieldset", {}, h("legend", { text: t("regex.placement") }), h("div", { class: "row wrap" }, places)),
    h("fieldset", {}, h("legend", { text: t("regex.when") }),
      h("div", { class: "row wrap" },
        flag("regex-markdown-only", "regex.markdown_only", script.markdownOnly),
        flag("regex-prompt-only", "regex.prompt_only", script.promptOnly),
        flag("regex-run-on-edit", "regex.run_on_edit", script.runOnEdit)),
      h("p", { class: "muted", text: t("regex.when_help") })),
    h("div", { class: "row wrap" },
      field(t("regex.macros"), macros), field(t("regex.min_depth"), minDepth), field(t("regex.max_depth"), maxDepth)),
    tester.element);
  mount(editor, form);
  tester.test();
  form.addEventListener("input", (event) => {
    if (event.target === tester.sample) tester.soon();
    else {
      edited(read());
      tester.soon();
    }
  });
  form.addEventListener("change", (event) => {
    if (event.target === tester.use) tester.test();
    else if (event.target !== tester.sample) {
      edited(read());
      tester.soon();
    }
  });
}

/** The test box: a sample text, the use it is tried for, and what the script makes of it.
 * `read()` gives the script as the form says; `findProblem()` says why its Find cannot be
 * read (or null). */
function scriptTester(script, read, findProblem) {
  const sample = h("textarea", { id: "regex-test-input", rows: 3, placeholder: t("regex.test_placeholder"), "aria-label": t("regex.test") });
  const use = h("select", { id: "regex-test-use", "aria-label": t("regex.test_use") },
    USES.map(([value, key]) => h("option", { value, text: t(key) })));
  use.value = startingUse(script);
  const result = h("output", { id: "regex-test-result", class: "regex-result", "aria-live": "polite" });
  // why the text was left as it was: the script ran to its time limit
  const stopped = h("p", { id: "regex-test-stopped", class: "muted", hidden: true });

  let asked = 0;
  const test = async () => {
    const current = read();
    const mine = ++asked;
    stopped.hidden = true;
    const problem = findProblem();
    if (problem) {
      result.classList.add("error");
      result.textContent = problem;
      return;
    }
    result.classList.remove("error");
    if (!sample.value) {
      result.textContent = "";
      return;
    }
    try {
      const placement = current.placement[0] || 2;
      const answer = await api.post("/regex/try", { scripts: [{ ...current, disabled: false }], text: sample.value, use: use.value, placement });
      if (mine === asked) {
        result.classList.remove("error");
        result.textContent = answer.result;
        const skipped = answer.skipped || [];
        stopped.textContent = skipped.map((item) => ledgerReason(item) || item.reason).join(" ");
        stopped.hidden = !skipped.length;
      }
    } catch (error) {
      if (mine === asked) {
        result.classList.add("error");
        result.textContent = explain(error);
      }
    }
  };
  let timer = null;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(test, 150);
  };

  const element = h("fieldset", { class: "regex-test" }, h("legend", { text: t("regex.test") }),
    h("div", { class: "row wrap" }, use),
    sample,
    h("div", { class: "muted", text: t("regex.test_result") }),
    result, stopped);
  return { element, sample, use, test, soon };
}
