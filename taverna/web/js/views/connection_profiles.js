// Connection profiles on the Connections page: each one listed with what it sets, removed
// in one click, and a new one kept from a connection and what goes with it (as
// SillyTavern's connection manager keeps them). The chat's bar switches to one.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { reportError } from "../errors.js";
import { t } from "../i18n.js";

// SillyTavern's tokenizer names a profile may set ("" leaves the tokenizer as it is)
const TOKENIZERS = ["", "best_match", "api_current", "api_textgenerationwebui", "api_kobold", "llama3", "mistral", "nemo", "claude", "gemma", "qwen2", "command_r", "llama", "yi", "none"];

function labelled(id, text, control) {
  control.id = id;
  return h("label", { for: id, class: "field" }, h("span", { text }), control);
}

/** What a profile sets, as one line. */
function summary(p) {
  const parts = [p.connection, p.model, p.preset, p.instruct, p.context, p.tokenizer].filter(Boolean);
  if (p.stop_strings) parts.push(t("profiles.stops", { count: p.stop_strings.length }));
  return parts.join(" · ");
}

/** The section: `connections()` gives the connections as last listed. */
export function profilesSection(connections) {
  const list = h("ul", { class: "list profile-list", id: "profile-list" });
  const name = h("input", { type: "text", required: true, maxlength: "200" });
  const connection = h("select", { translate: "no" });
  const text = () => h("input", { type: "text", maxlength: "200" });
  const model = text(), preset = text(), instruct = text(), context = text();
  const tokenizer = h("select", {}, TOKENIZERS.map((n) => h("option", n ? { value: n, translate: "no", text: n } : { value: n, text: t("profiles.keep") })));
  const stops = h("textarea", { rows: "2", placeholder: t("profiles.stops_hint") });
  const form = h("form", { class: "editor profile-form", id: "profile-form", "aria-label": t("profiles.add") },
    h("h2", { text: t("profiles.add") }),
    labelled("p-name", t("profiles.name"), name),
    labelled("p-connection", t("profiles.connection"), connection),
    labelled("p-model", t("profiles.model"), model),
    labelled("p-preset", t("profiles.preset"), preset),
    labelled("p-instruct", t("profiles.instruct"), instruct),
    labelled("p-context", t("profiles.context"), context),
    labelled("p-tokenizer", t("profiles.tokenizer"), tokenizer),
    labelled("p-stops", t("profiles.stop_strings"), stops),
    h("button", { type: "submit", class: "primary small", text: t("common.save") }));

  async function reload() {
    const profiles = await api.get("/connection-profiles").catch(() => []);
    mount(list, profiles.length ? profiles.map((p) => h("li", { class: "profile", "data-name": p.name },
      h("div", { class: "grow" }, h("div", { class: "strong", translate: "no", text: p.name }), h("div", { class: "muted clip", translate: "no", text: summary(p) })),
      h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: async () => {
        await api.del(`/connection-profiles/${encodeURIComponent(p.name)}`);
        reload();
      } }))) : h("li", { class: "muted", text: t("profiles.none") }));
    mount(connection, connections().map((c) => h("option", { value: c.name, text: c.name })));
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const lines = stops.value.split("\n").filter((s) => s.length);
    const body = {
      connection: connection.value,
      model: model.value.trim(),
      preset: preset.value.trim(),
      instruct: instruct.value.trim(),
      context: context.value.trim(),
      tokenizer: tokenizer.value,
      stop_strings: lines.length ? lines.map((s) => s.replace(/\\n/g, "\n")) : null,
    };
    try {
      await api.put(`/connection-profiles/${encodeURIComponent(name.value.trim())}`, body);
    } catch (error) {
      reportError(error, t("kept.form"));
      return;
    }
    toast(t("common.saved"));
    name.value = "";
    reload();
  });

  return { element: h("section", { class: "profiles", "aria-label": t("profiles.title") }, h("h2", { text: t("profiles.title") }), h("div", { class: "split" }, list, form)), reload };
}
