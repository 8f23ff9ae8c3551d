// Regex scripts in their three layers: global ones, a preset's and a character's (the last
// two run only once allowed). A script is edited beside a test box whose result the server
// computes with the engine the chat uses, as you type.

import { api } from "../api.js";
import { formWith, h, mount, toast, withMacros } from "../dom.js";
import { explain, reportError } from "../errors.js";
import { t } from "../i18n.js";
import { ledgerReason } from "../labels.js";
import { regexProblem, startingUse, unreadable } from "./regex_check.js";

const PLACEMENTS = [
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

function newScript() {
  return {
    scriptName: t("regex.new_name"), findRegex: "", replaceString: "", trimStrings: [],
    placement: [2], disabled: false, markdownOnly: false, promptOnly: false, runOnEdit: true,
    substituteRegex: 0, minDepth: null, maxDepth: null,
  };
}

function depthValue(input) {
  const text = input.value.trim();
  if (text === "") return null;
  const n = Number(text);
  return Number.isInteger(n) ? n : null;
}

export async function render(root) {
  const state = { layer: "global", target: "", scripts: [], allowed: true, selected: -1, dirty: false };
  const layerSelect = h("select", { id: "regex-layer", "aria-label": t("regex.layer") },
    h("option", { value: "global", text: t("regex.layer_global") }),
    h("option", { value: "preset", text: t("regex.layer_preset") }),
    h("option", { value: "character", text: t("regex.layer_character") }));
  const targetSelect = h("select", { id: "regex-target", "aria-label": t("regex.target"), hidden: true });
  const allowed = h("input", { type: "checkbox", id: "regex-allowed" });
  const allowedLabel = h("label", { class: "inline", hidden: true }, allowed, " ", h("span", { id: "regex-allowed-text" }));
  const list = h("ol", { class: "list regex-list", id: "regex-list" });
  const editor = h("div", { class: "editor", id: "regex-editor" });
  const picker = h("input", { type: "file", accept: ".json,application/json", multiple: true, hidden: true, id: "regex-file" });
  const save = h("button", { type: "button", class: "primary", id: "regex-save", text: t("common.save") });

  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.regex") }),
      h("div", { class: "row" },
        h("button", { type: "button", id: "regex-import", text: t("common.import"), onClick: () => picker.click() }),
        h("button", { type: "button", id: "regex-new", text: t("regex.new"), onClick: () => {
          state.scripts.push(newScript());
          changed();
          select(state.scripts.length - 1);
        } }),
        save)),
    h("p", { class: "muted", text: t("regex.about") }),
    h("div", { class: "row wrap" }, layerSelect, targetSelect, allowedLabel),
    picker,
    h("div", { class: "split regex-split" }, list, editor));

  const query = () => (state.target ? `?target=${encodeURIComponent(state.target)}` : "");
  const changed = () => {
    state.dirty = true;
    save.disabled = false;
    drawList();
  };

  async function loadTargets() {
    targetSelect.hidden = state.layer === "global";
    allowedLabel.hidden = state.layer === "global";
    if (state.layer === "global") {
      state.target = "";
      return;
    }
    // A preset's scripts run with the API they are for: Chat Completion presets' on a
    // Chat Completion connection, Text Completion presets' on a Text Completion one.
    const groups = state.layer === "preset"
      ? [[t("regex.chat_presets"), await api.get("/presets?kind=chat")], [t("regex.text_presets"), await api.get("/presets?kind=text")]]
      : [[null, await api.get("/characters")]];
    const items = groups.flatMap(([, found]) => found);
    const options = (found) => found.map((item) => h("option", { value: item.id, translate: "no", text: item.name }));
    mount(targetSelect, items.length
      ? groups.filter(([, found]) => found.length).map(([label, found]) => label ? h("optgroup", { label }, options(found)) : options(found)).flat()
      : h("option", { value: "", text: t("regex.no_targets") }));
    state.target = items.length ? (items.find((i) => i.id === state.target) || items[0]).id : "";
  }

  // Only the latest choice's answer is drawn: a layer's first target may answer after the
  // target the person chose meanwhile.
  let loading = 0;
  async function loadLayer() {
    const ticket = ++loading;
    if (state.layer !== "global" && !state.target) {
      Object.assign(state, { scripts: [], allowed: false, selected: -1, dirty: false });
    } else {
      const found = await api.get(`/regex/${state.layer}${query()}`);
      if (ticket !== loading) return;
      Object.assign(state, { scripts: found.scripts, allowed: found.allowed, selected: -1, dirty: false });
    }
    allowed.checked = state.allowed;
    document.getElementById("regex-allowed-text").textContent =
      state.layer === "preset" ? t("regex.allow_preset") : t("regex.allow_character");
    save.disabled = true;
    drawList();
    mount(editor, h("p", { class: "muted", text: t("regex.pick") }));
  }

  function drawList() {
    if (!state.scripts.length) {
      mount(list, h("li", { class: "muted", text: t("regex.none") }));
      return;
    }
    mount(list, state.scripts.map((script, index) => {
      const enabled = h("input", { type: "checkbox", class: "regex-enabled", checked: !script.disabled, "aria-label": t("regex.enabled") });
      enabled.addEventListener("change", () => {
        script.disabled = !enabled.checked;
        changed();
      });
      const move = (step) => {
        const to = index + step;
        if (to < 0 || to >= state.scripts.length) return;
        [state.scripts[index], state.scripts[to]] = [state.scripts[to], state.scripts[index]];
        if (state.selected === index) state.selected = to;
        else if (state.selected === to) state.selected = index;
        changed();
      };
      return h("li", { class: `regex-item${index === state.selected ? " selected" : ""}` },
        h("label", { class: "regex-check" }, enabled),
        h("button", { type: "button", class: "link regex-name", text: script.scriptName || t("regex.unnamed"), onClick: () => select(index) }),
        h("button", { type: "button", class: "small", text: "↑", title: t("regex.up"), "aria-label": t("regex.up"), disabled: index === 0, onClick: () => move(-1) }),
        h("button", { type: "button", class: "small", text: "↓", title: t("regex.down"), "aria-label": t("regex.down"), disabled: index === state.scripts.length - 1, onClick: () => move(1) }),
        script.id && !state.dirty
          ? h("a", { class: "button small", href: `/api/regex/${state.layer}/${encodeURIComponent(script.id)}/export${query()}`, download: "", text: t("common.export") })
          : null,
        h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: () => {
          if (!confirm(t("regex.confirm_delete", { name: script.scriptName }))) return;
          state.scripts.splice(index, 1);
          state.selected = -1;
          mount(editor, h("p", { class: "muted", text: t("regex.pick") }));
          changed();
        } }));
    }));
  }

  function select(index) {
    state.selected = index;
    drawList();
    const script = state.scripts[index];
    const field = (label, control) => h("label", { class: "field" }, h("span", {}, withMacros(label)), control);
    const name = h("input", { type: "text", id: "regex-name", value: script.scriptName });
    const find = h("input", { type: "text", id: "regex-find", value: script.findRegex, placeholder: "/pattern/flags", spellcheck: "false" });
    const replace = h("textarea", { id: "regex-replace", rows: 2, spellcheck: "false" });
    replace.value = script.replaceString;
    const trims = h("textarea", { id: "regex-trim", rows: 2, spellcheck: "false" });
    trims.value = (script.trimStrings || []).join("\n");
    const places = PLACEMENTS.map(([value, key]) => h("label", { class: "inline" },
      h("input", { type: "checkbox", "data-placement": value, checked: script.placement.includes(value) }), " ", t(key)));
    const flag = (id, key, on) => h("label", { class: "inline" }, h("input", { type: "checkbox", id, checked: !!on }), " ", t(key));
    const macros = h("select", { id: "regex-macros" },
      h("option", { value: "0", text: t("regex.macros_none") }),
      h("option", { value: "1", text: t("regex.macros_raw") }),
      h("option", { value: "2", text: t("regex.macros_escaped") }));
    macros.value = String(Number(script.substituteRegex === true ? 1 : script.substituteRegex || 0));
    const minDepth = h("input", { type: "number", id: "regex-min-depth", min: -1, value: script.minDepth ?? "" });
    const maxDepth = h("input", { type: "number", id: "regex-max-depth", min: -1, value: script.maxDepth ?? "" });
    const sample = h("textarea", { id: "regex-test-input", rows: 3, placeholder: t("regex.test_placeholder"), "aria-label": t("regex.test") });
    const use = h("select", { id: "regex-test-use", "aria-label": t("regex.test_use") },
      USES.map(([value, key]) => h("option", { value, text: t(key) })));
    use.value = startingUse(script);
    const result = h("output", { id: "regex-test-result", class: "regex-result", "aria-live": "polite" });
    const problem = h("p", { id: "regex-find-problem", class: "error", role: "alert", hidden: true });
    const checkFind = () => {
      const why = regexProblem(find.value);
      problem.hidden = !why;
      problem.textContent = why ? t("regex.invalid", { message: why }) : "";
      find.setAttribute("aria-invalid", why ? "true" : "false");
      return why;
    };
    // why the text was left as it was: the script ran to its time limit
    const stopped = h("p", { id: "regex-test-stopped", class: "muted", hidden: true });

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

    let asked = 0;
    const test = async () => {
      const current = read();
      const mine = ++asked;
      stopped.hidden = true;
      if (checkFind()) {
        result.classList.add("error");
        result.textContent = problem.textContent;
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
    const edited = () => {
      state.scripts[index] = read();
      changed();
      clearTimeout(timer);
      timer = setTimeout(test, 150);
    };

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
      h("fieldset", { class: "regex-test" }, h("legend", { text: t("regex.test") }),
        h("div", { class: "row wrap" }, use),
        sample,
        h("div", { class: "muted", text: t("regex.test_result") }),
        result, stopped));
    mount(editor, form);
    test();
    form.addEventListener("input", (event) => {
      if (event.target === sample) {
        clearTimeout(timer);
        timer = setTimeout(test, 150);
      } else edited();
    });
    form.addEventListener("change", (event) => {
      if (event.target === use) test();
      else if (event.target !== sample) edited();
    });
  }

  save.addEventListener("click", async () => {
    try {
      const found = await api.put(`/regex/${state.layer}${query()}`, { scripts: state.scripts });
      const keep = state.selected;
      Object.assign(state, { scripts: found.scripts, dirty: false });
      save.disabled = true;
      // Saved either way (nothing is lost), but a Find that cannot be read is said, not "Saved".
      const bad = unreadable(state.scripts);
      if (bad.length) toast(t("regex.saved_invalid", { name: bad.map((b) => b.scriptName || t("regex.unnamed")).join(", ") }), "warning");
      else toast(t("common.saved"));
      drawList();
      if (keep >= 0 && keep < state.scripts.length) select(keep);
    } catch (error) {
      reportError(error, t("kept.page"));
    }
  });
  allowed.addEventListener("change", async () => {
    try {
      const found = await api.put(`/regex/${state.layer}/allowed${query()}`, { allowed: allowed.checked });
      state.allowed = found.allowed;
      toast(found.allowed ? t("regex.allowed_now") : t("regex.stopped_now"));
    } catch (error) {
      allowed.checked = state.allowed;
      reportError(error);
    }
  });
  picker.addEventListener("change", async () => {
    for (const file of picker.files) {
      try {
        const found = await api.upload(`/regex/${state.layer}/import${query()}`, formWith({ file }));
        toast(t("regex.imported", { name: file.name }));
        Object.assign(state, { scripts: found.scripts, dirty: false });
      } catch (error) {
        toast(`${file.name}: ${explain(error)} ${t("kept.nothing_stored")}`, "error");
      }
    }
    picker.value = "";
    drawList();
  });
  const leaving = () => !state.dirty || confirm(t("regex.discard"));
  layerSelect.addEventListener("change", async () => {
    if (!leaving()) {
      layerSelect.value = state.layer;
      return;
    }
    state.layer = layerSelect.value;
    await loadTargets();
    await loadLayer();
  });
  targetSelect.addEventListener("change", async () => {
    if (!leaving()) {
      targetSelect.value = state.target;
      return;
    }
    state.target = targetSelect.value;
    await loadLayer();
  });
  await loadLayer();
}
