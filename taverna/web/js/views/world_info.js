// The World Info settings, on the lorebooks page: the books active for every chat and how
// every chat's lorebook scan runs (depth, budget, recursion, matching, the insertion
// strategy, the overflow alert). They are the person's, under SillyTavern's names.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { fieldForm } from "../form.js";
import { reportError } from "../errors.js";

const ENDPOINT = "/world-info-settings";
const count = (min, max) => ({ empty: min, attrs: { min: String(min), max: String(max), step: "1" } });
const strategies = () => [[0, t("wi.strategy_evenly")], [1, t("wi.strategy_character")], [2, t("wi.strategy_global")]];

/** The World Info settings panel; `books` are the lorebooks, `onSaved(settings)` runs after a save. */
export async function worldInfoPanel(books, onSaved = () => {}) {
  const settings = await api.get(ENDPOINT);
  const globalBox = h("div", { class: "wi-global", id: "wi-global" });
  const drawGlobal = (chosen) => mount(globalBox, books.length
    ? books.map((book, index) => h("label", { class: "check", for: `wi-global-${index}` },
      h("input", { type: "checkbox", id: `wi-global-${index}`, value: book.name, checked: chosen.includes(book.name) }),
      h("span", { translate: "no", text: book.name })))
    : h("p", { class: "muted", text: t("wi.global_none") }));
  drawGlobal(settings.world_info.globalSelect);
  const form = fieldForm([
    ["world_info_depth", "number", { ...count(0, 1000), label: t("wi.depth") }],
    ["world_info_budget", "number", { ...count(1, 100), label: t("wi.budget") }],
    ["world_info_budget_cap", "number", { ...count(0, 65536), label: t("wi.budget_cap") }],
    ["world_info_min_activations", "number", { ...count(0, 100), label: t("wi.min_activations") }],
    ["world_info_min_activations_depth_max", "number", { ...count(0, 100), label: t("wi.min_activations_depth_max") }],
    ["world_info_max_recursion_steps", "number", { ...count(0, 10), label: t("wi.max_recursion_steps") }],
    ["world_info_character_strategy", "choice", { label: t("wi.strategy"), choices: strategies() }],
    ["world_info_recursive", "bool", { label: t("wi.recursive") }],
    ["world_info_case_sensitive", "bool", { label: t("wi.case_sensitive") }],
    ["world_info_match_whole_words", "bool", { label: t("wi.match_whole_words") }],
    ["world_info_include_names", "bool", { label: t("wi.include_names") }],
    ["world_info_use_group_scoring", "bool", { label: t("wi.use_group_scoring") }],
    ["world_info_overflow_alert", "bool", { label: t("wi.overflow_alert") }],
  ], settings, { prefix: "wi", shownOnly: true });
  const save = async () => {
    const changes = form.read();
    const chosen = [...globalBox.querySelectorAll("input:checked")].map((box) => box.value);
    // Books of the selection not in the library (deleted since) are left out on save.
    changes.world_info = { globalSelect: chosen };
    try {
      const saved = await api.put(ENDPOINT, changes);
      drawGlobal(saved.world_info.globalSelect);
      toast(t("common.saved"));
      onSaved(saved);
    } catch (error) {
      reportError(error, t("wi.kept"));
    }
  };
  return h("details", { class: "world-info-settings", id: "world-info-settings" },
    h("summary", { text: t("wi.title") }),
    h("p", { class: "muted", text: t("wi.help") }),
    h("fieldset", {}, h("legend", { text: t("wi.global") }), globalBox),
    form,
    h("button", { type: "button", class: "primary", id: "wi-settings-save", text: t("common.save"), onClick: save }));
}

/** Whether the person asked to be told when the lorebook budget overflows (false when unknown). */
export async function overflowAlertOn() {
  try {
    return (await api.get(ENDPOINT)).world_info_overflow_alert === true;
  } catch {
    return false;
  }
}
