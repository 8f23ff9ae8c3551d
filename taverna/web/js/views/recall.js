// Recall by meaning's settings, beside the summary in the chat settings panel: whether old
// messages of the branch are recalled, how many and how alike, where the block goes and
// its own token budget, and which model embeds the messages (the bundled one, offline, or
// an OpenAI-compatible /v1/embeddings API).

import { api } from "../api.js";
import { h, toast } from "../dom.js";
import { t } from "../i18n.js";
import { fieldForm } from "../form.js";
import { reportError } from "../errors.js";

const ROLES = [[0, "system"], [1, "user"], [2, "assistant"]];
const roleChoices = () => ROLES.map(([value, role]) => [value, t(`role.${role}`)]);
const count = { empty: 0, attrs: { min: "0", step: "1" } };

/** The recall part of the chat settings panel (its settings are the person's, every chat's). */
export async function recallSection() {
  const settings = await api.get("/recall-settings");
  const form = fieldForm([
    ["enabled_chats", "bool", { label: t("recall.enabled") }],
    ["query", "number", { empty: 1, attrs: { min: "1", step: "1" }, label: t("recall.query") }],
    ["insert", "number", { ...count, label: t("recall.insert") }],
    ["score_threshold", "number", { empty: 0, attrs: { min: "0", max: "1", step: "0.05" }, label: t("recall.threshold") }],
    ["budget", "number", { ...count, label: t("recall.budget") }],
    ["template", "text", { rows: 2, wide: true, label: t("recall.template") }],
    ["position", "choice", { label: t("recall.position"), choices: [[0, t("settings.after_main")], [2, t("settings.before_main")], [1, t("settings.in_chat")], [-1, t("summary.nowhere")]] }],
    ["depth", "number", { ...count, label: t("recall.depth") }],
    ["depth_role", "choice", { label: t("recall.role"), choices: roleChoices() }],
    ["source", "choice", { label: t("recall.source"), choices: [["transformers", t("recall.bundled")], ["openai", t("recall.api")]] }],
    ["alt_endpoint_url", "line", { label: t("recall.endpoint"), placeholder: "http://127.0.0.1:8080/v1" }],
    ["openai_model", "line", { label: t("recall.model") }],
    // Written, never read back: the server shows only the key's last characters.
    ["api_key", "line", { label: t("recall.key"), placeholder: settings.api_key_hint ? t("recall.key_kept", { hint: settings.api_key_hint }) : "", attrs: { type: "password", autocomplete: "off" } }],
    ["enabled_world_info", "bool", { label: t("recall.lorebook") }],
    ["max_entries", "number", { ...count, label: t("recall.max_entries") }],
  ], settings, { prefix: "recall", shownOnly: true });
  const apiHelp = h("p", { class: "muted", id: "recall-api-help", text: t("recall.api_help") });
  // The API's address and model matter only for the API: shown when it is chosen.
  const source = form.fields.source.control;
  const showApi = () => {
    const api = source.value === "openai";
    for (const name of ["alt_endpoint_url", "openai_model", "api_key"]) form.fields[name].label.hidden = !api;
    apiHelp.hidden = !api;
  };
  source.addEventListener("change", showApi);
  form.fields.api_key.label.after(apiHelp);
  showApi();
  return [
    h("h3", { text: t("recall.title") }),
    h("p", { class: "muted", text: t("recall.help") }),
    h("details", { class: "recall-settings" },
      h("summary", { text: t("recall.settings") }),
      form,
      h("button", { type: "button", id: "recall-key-forget", text: t("recall.key_forget"), onClick: async () => {
        try {
          await api.put("/recall-settings", { api_key: "" });
          form.fields.api_key.control.value = "";
          form.fields.api_key.control.placeholder = "";
          toast(t("recall.key_forgotten"));
        } catch (error) {
          reportError(error, t("recall.kept"));
        }
      } }),
      h("button", { type: "button", class: "primary", id: "recall-settings-save", text: t("common.save"), onClick: async () => {
        try {
          const changes = form.read();
          delete changes.api_key_hint;
          // An empty key field keeps the key stored; "Forget my key" removes it.
          if (!changes.api_key) delete changes.api_key;
          const saved = await api.put("/recall-settings", changes);
          form.fields.api_key.control.value = "";
          form.fields.api_key.control.placeholder = saved.api_key_hint ? t("recall.key_kept", { hint: saved.api_key_hint }) : "";
          toast(t("common.saved"));
        } catch (error) {
          reportError(error, t("recall.kept"));
        }
      } })),
  ];
}
