// Regex scripts in their three layers: global ones, a preset's and a character's (the last
// two run only once allowed). A script is edited (regex_editor.js) beside a test box whose
// result the server computes with the engine the chat uses, as you type.

import { api } from "../api.js";
import { formWith, h, mount, toast } from "../dom.js";
import { explain, reportError } from "../errors.js";
import { t } from "../i18n.js";
import { unreadable } from "./regex_check.js";
import { showScriptEditor } from "./regex_editor.js";

function newScript() {
  return {
    scriptName: t("regex.new_name"), findRegex: "", replaceString: "", trimStrings: [],
    placement: [2], disabled: false, markdownOnly: false, promptOnly: false, runOnEdit: true,
    substituteRegex: 0, minDepth: null, maxDepth: null,
  };
}

export async function render(root) {
  const state = { layer: "global", target: "", scripts: [], allowed: true, selected: -1, dirty: false };
  const layerSelect = h("select", { id: "regex-layer", "aria-label": t("regex.layer") },
    h("option", { value: "global", text: t("regex.layer_global") }),
    h("option", { value: "preset", text: t("regex.layer_preset") }),
    h("option", { value: "character", text: t("regex.layer_character") }));
  const targetSelect = h("select", { id: "regex-target", "aria-label": t("regex.target"), hidden: true });
  const list = h("ol", { class: "list regex-list", id: "regex-list" });
  const editor = h("div", { class: "editor", id: "regex-editor" });
  const picker = h("input", { type: "file", accept: ".json,application/json", multiple: true, hidden: true, id: "regex-file" });
  const save = h("button", { type: "button", class: "primary", id: "regex-save", text: t("common.save") });
  const query = () => (state.target ? `?target=${encodeURIComponent(state.target)}` : "");
  const allowed = allowedSwitch(state, query);

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
    h("div", { class: "row wrap" }, layerSelect, targetSelect, allowed.label),
    picker,
    h("div", { class: "split regex-split" }, list, editor));

  const changed = () => {
    state.dirty = true;
    save.disabled = false;
    drawList();
  };

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
    allowed.show();
    save.disabled = true;
    drawList();
    mount(editor, h("p", { class: "muted", text: t("regex.pick") }));
  }

  const drawList = () => drawScripts(list, state, { changed, select, query, unpick: () => mount(editor, h("p", { class: "muted", text: t("regex.pick") })) });

  function select(index) {
    state.selected = index;
    drawList();
    showScriptEditor(editor, state.scripts[index], (script) => {
      state.scripts[index] = script;
      changed();
    });
  }

  save.addEventListener("click", async () => {
    try {
      await saveScripts(state, query);
      const keep = state.selected;
      save.disabled = true;
      drawList();
      if (keep >= 0 && keep < state.scripts.length) select(keep);
    } catch (error) {
      reportError(error, t("kept.page"));
    }
  });
  picker.addEventListener("change", async () => {
    await importFiles(state, picker, query);
    drawList();
  });
  followPickers(state, { layerSelect, targetSelect, allowedLabel: allowed.label, loadLayer });
  await loadLayer();
}

/** Fill `targetSelect` with the layer's presets or characters, keeping the chosen one. */
async function loadTargets(state, targetSelect, allowedLabel) {
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

/** The layer's scripts in `list`, in their order: on/off, move up or down, export, delete.
 * `changed()` marks the layer edited, `select(i)` opens one, `unpick()` empties the editor. */
function drawScripts(list, state, { changed, select, query, unpick }) {
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
        unpick();
        changed();
      } }));
  }));
}

/** The switch that lets a preset's or a character's scripts run, worded for the layer;
 * `show()` sets it as the layer read says. */
function allowedSwitch(state, query) {
  const allowed = h("input", { type: "checkbox", id: "regex-allowed" });
  const text = h("span", { id: "regex-allowed-text" });
  const label = h("label", { class: "inline", hidden: true }, allowed, " ", text);
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
  const show = () => {
    allowed.checked = state.allowed;
    text.textContent = state.layer === "preset" ? t("regex.allow_preset") : t("regex.allow_character");
  };
  return { label, show };
}

/** Write the layer's scripts and take the server's copy back. */
async function saveScripts(state, query) {
  const found = await api.put(`/regex/${state.layer}${query()}`, { scripts: state.scripts });
  Object.assign(state, { scripts: found.scripts, dirty: false });
  // Saved either way (nothing is lost), but a Find that cannot be read is said, not "Saved".
  const bad = unreadable(state.scripts);
  if (bad.length) toast(t("regex.saved_invalid", { name: bad.map((b) => b.scriptName || t("regex.unnamed")).join(", ") }), "warning");
  else toast(t("common.saved"));
}

/** Import the files chosen in `picker` into the layer, one by one (a bad one is told). */
async function importFiles(state, picker, query) {
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
}

/** The layer and target pickers: a change asks first when edits would be lost, then loads
 * the layer chosen. */
function followPickers(state, { layerSelect, targetSelect, allowedLabel, loadLayer }) {
  const leaving = () => !state.dirty || confirm(t("regex.discard"));
  layerSelect.addEventListener("change", async () => {
    if (!leaving()) {
      layerSelect.value = state.layer;
      return;
    }
    state.layer = layerSelect.value;
    await loadTargets(state, targetSelect, allowedLabel);
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
}
