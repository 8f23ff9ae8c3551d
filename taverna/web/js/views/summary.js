// A chat's summary: the one in force where the branch being read ends (read, change,
// remove, make one now), the Summarize settings, and the marks in the chat (the message a
// summary belongs to, the messages it keeps out of the prompt).

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { roleLabel } from "../labels.js";
import { fieldForm } from "../form.js";

const ROLES = () => [[0, roleLabel("system")], [1, roleLabel("user")], [2, roleLabel("assistant")]];
const count = { empty: 0, attrs: { min: "0", step: "1" } };

/** Mark the drawn messages: "summary #k" on the message each summary belongs to, and
 * "covered by summary #k" on those the summary in force keeps out of the prompt. */
export function markSummaries(list, found) {
  list.querySelectorAll(".summary-badge").forEach((el) => el.remove());
  if (!found) return;
  const badge = (li, text) => li.querySelector(".meta .name")?.after(h("span", { class: "badge summary-badge", text }));
  for (const s of found.along) {
    const li = list.querySelector(`li.message[data-id="${CSS.escape(s.node_id || "")}"]`);
    if (li) badge(li, t("summary.badge", { n: s.number }));
  }
  if (found.hides > 0 && found.current) {
    for (const li of list.querySelectorAll("li.message[data-index]")) {
      if (Number(li.dataset.index) < found.hides) badge(li, t("summary.covered", { n: found.current.number }));
    }
  }
}

/** The summary part of the chat settings panel. `revision()` is the chat's revision as
 * read; `changed(answer)` gets the summaries after a change (their `revision` too). */
export async function summarySection(chatId, panel, revision, changed) {
  const url = `/chats/${chatId}/summary`;
  const [found, settings] = await Promise.all([api.get(url), api.get("/summary-settings")]);
  const where = h("p", { class: "muted", id: "summary-where" });
  const area = h("textarea", { id: "summary-text", rows: 6, "aria-label": t("summary.text") });
  const list = h("ol", { class: "summary-list", id: "summary-list" });
  const show = (answer) => {
    const current = answer.current;
    area.value = current ? current.text : "";
    where.textContent = current
      ? t("summary.where", { n: current.number, message: current.covers - 1 })
      : t("summary.none");
    mount(list, answer.along.map((s) => h("li", { text: `#${s.number} (${t("summary.on_message", { message: s.covers - 1 })}): ${s.text}` })));
  };
  show(found);
  const after = (answer) => {
    if (!answer) return null;
    show(answer);
    changed(answer);
    return answer;
  };
  const options = fieldForm([
    ["position", "choice", { label: t("summary.position"), choices: [[0, t("settings.after_main")], [2, t("settings.before_main")], [1, t("settings.in_chat")], [-1, t("summary.nowhere")]] }],
    ["depth", "number", count],
    ["role", "choice", { choices: ROLES() }],
    ["template", "line", { label: t("summary.template"), wide: true }],
    ["prompt", "text", { label: t("summary.prompt"), rows: 4, wide: true }],
    ["promptWords", "number", { ...count, label: t("summary.words") }],
    ["promptInterval", "number", { ...count, label: t("summary.interval") }],
    ["promptForceWords", "number", { ...count, label: t("summary.force_words") }],
    ["overrideResponseLength", "number", { ...count, label: t("summary.length") }],
    ["prompt_builder", "choice", { label: t("summary.builder"), choices: [[0, t("summary.classic")], [1, t("summary.raw")]] }],
    ["maxMessagesPerRequest", "number", { ...count, label: t("summary.max_messages") }],
    ["connection", "line", { label: t("summary.connection") }],
    ["hideCovered", "bool", { label: t("summary.hide") }],
    ["hideKeep", "number", { ...count, label: t("summary.keep") }],
  ], { ...settings, prompt_builder: settings.prompt_builder ? 1 : 0 }, { prefix: "summary" });
  return [
    h("h3", { text: t("summary.title") }),
    h("p", { class: "muted", text: t("summary.help") }),
    where,
    area,
    h("div", { class: "row wrap" },
      h("button", { type: "button", class: "primary", id: "summary-save", text: t("summary.save"), onClick: async () => {
        if (!area.value.trim()) return toast(t("summary.empty"), "error");
        if (after(await panel.write(() => api.put(url, { text: area.value, revision: revision() })))) toast(t("common.saved"));
      } }),
      h("button", { type: "button", id: "summary-make", text: t("summary.make"), onClick: async (event) => {
        event.target.disabled = true;
        try {
          const made = after(await panel.write(() => api.post(`${url}/generate`)));
          if (made) toast(made.cut ? t("summary.cut") : t("summary.made"), made.cut ? "error" : "info");
        } finally {
          event.target.disabled = false;
        }
      } }),
      h("button", { type: "button", class: "danger", id: "summary-remove", text: t("summary.remove"), onClick: async () => {
        if (after(await panel.write(() => api.del(`${url}?revision=${revision()}`)))) toast(t("summary.removed"));
      } })),
    list,
    h("details", { class: "summary-settings" },
      h("summary", { text: t("summary.settings") }),
      options,
      h("button", { type: "button", id: "summary-settings-save", text: t("common.save"), onClick: async () => {
        await api.put("/summary-settings", options.read());
        toast(t("common.saved"));
        changed(await api.get(url));
      } })),
  ];
}
