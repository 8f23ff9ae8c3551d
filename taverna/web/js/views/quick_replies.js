// Quick Replies: sets of buttons that run a script (or send a text) above the chat input.
// A set is active in every chat, or in the chats that choose it (in the chat's settings).

import { api } from "../api.js";
import { formWith, h, mount, toast } from "../dom.js";
import { explain, reportError } from "../errors.js";
import { t } from "../i18n.js";

const TRIGGERS = ["startup", "new_chat", "chat_change", "user", "ai", "group_member_draft"];
// Events the server runs a reply on by itself (in the chat where they happen).
const EVENTS = ["message_sent", "message_received", "message_edited", "message_deleted", "message_swiped",
  "generation_started", "generation_ended", "generation_stopped", "chat_id_changed"];

/** The reply's tool for the model: a name, what it does, a JSON schema of its arguments. */
function toolFields(tool) {
  const name = h("input", { type: "text", class: "qr-tool-name", value: tool?.name || "", placeholder: "get_weather", "aria-label": t("qr.tool_name") });
  const description = h("input", { type: "text", class: "qr-tool-description", value: tool?.description || "", "aria-label": t("qr.tool_description") });
  const schema = h("textarea", { class: "qr-tool-schema", rows: 3, "aria-label": t("qr.tool_schema"), placeholder: '{"type": "object", "properties": {"city": {"type": "string"}}}' });
  schema.value = tool && Object.keys(tool.parameters || {}).length ? JSON.stringify(tool.parameters, null, 1) : "";
  const box = h("details", { class: "qr-tool", open: tool ? "open" : null },
    h("summary", { text: t("qr.tool") }),
    h("p", { class: "muted", text: t("qr.tool_help") }),
    h("label", {}, t("qr.tool_name"), name),
    h("label", {}, t("qr.tool_description"), description),
    h("label", {}, t("qr.tool_schema"), schema));
  box.read = () => {
    if (!name.value.trim()) return null;
    let parameters = {};
    if (schema.value.trim()) {
      try {
        parameters = JSON.parse(schema.value);
      } catch {
        throw new Error(t("qr.tool_schema_invalid", { name: name.value.trim() }));
      }
    }
    return { name: name.value.trim(), description: description.value, parameters };
  };
  return box;
}

function replyRow(reply = { label: "", message: "", title: "", hidden: false, triggers: [], automation_id: "", events: [], tool: null }) {
  const label = h("input", { type: "text", class: "qr-label", value: reply.label, "aria-label": t("qr.label") });
  const message = h("textarea", { class: "qr-message", rows: 2, "aria-label": t("qr.message") });
  message.value = reply.message;
  const hidden = h("input", { type: "checkbox", class: "qr-hidden", checked: reply.hidden ? "checked" : null });
  const automation = h("input", { type: "text", class: "qr-automation", value: reply.automation_id || "", placeholder: t("qr.automation_id"), "aria-label": t("qr.automation_id") });
  const triggers = TRIGGERS.map((name) => h("label", { class: "inline" },
    h("input", { type: "checkbox", "data-trigger": name, checked: reply.triggers.includes(name) ? "checked" : null }),
    " ", t(`qr.on_${name}`)));
  const events = h("details", { class: "qr-events", open: reply.events?.length ? "open" : null },
    h("summary", { text: t("qr.events") }),
    h("div", { class: "row muted wrap" }, EVENTS.map((name) => h("label", { class: "inline" },
      h("input", { type: "checkbox", "data-event": name, checked: reply.events?.includes(name) ? "checked" : null }),
      " ", t(`qr.event.${name}`)))));
  const tool = toolFields(reply.tool);
  const row = h("li", { class: "qr-row" },
    h("div", { class: "row" }, label,
      h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: () => row.remove() })),
    message,
    h("div", { class: "row muted wrap" }, h("label", { class: "inline" }, hidden, " ", t("qr.hidden")), ...triggers, automation),
    events, tool);
  row.read = () => ({
    label: label.value,
    message: message.value,
    title: reply.title || "",
    hidden: hidden.checked,
    triggers: TRIGGERS.filter((name) => row.querySelector(`[data-trigger=${name}]`).checked),
    automation_id: automation.value.trim(),
    events: EVENTS.filter((name) => row.querySelector(`[data-event=${name}]`).checked),
    tool: tool.read(),
  });
  return row;
}

export async function render(root) {
  const list = h("ul", { class: "list" });
  const editor = h("div", { class: "editor" });
  const picker = h("input", { type: "file", accept: ".json,application/json", multiple: true, hidden: true, id: "qr-file" });
  mount(root, h("div", { class: "page-head" }, h("h1", { text: t("nav.quick_replies") }),
    h("div", { class: "row" },
      h("button", { type: "button", text: t("common.import"), onClick: () => picker.click() }),
      h("button", { type: "button", class: "primary", id: "qr-new", text: t("qr.new"), onClick: () => {
        const name = prompt(t("qr.set_name"));
        if (name) edit({ name, active: true, replies: [] });
      } }))),
  picker,
  h("div", { class: "split" }, list, editor));
  picker.addEventListener("change", async () => {
    for (const file of picker.files) {
      try {
        const set = await api.upload("/quick-replies/import", formWith({ file }));
        toast(t("qr.imported", { name: set.name, n: set.replies.length }));
      } catch (error) {
        toast(`${file.name}: ${explain(error)} ${t("kept.nothing_stored")}`, "error");
      }
    }
    picker.value = "";
    reload();
  });

  const edit = (set) => {
    const rows = h("ol", { class: "qr-rows" }, set.replies.map((r) => replyRow(r)));
    const active = h("input", { type: "checkbox", id: "qr-active", checked: set.active ? "checked" : null });
    // A set active but not shown keeps its replies running on their triggers and by name.
    const visible = h("input", { type: "checkbox", id: "qr-visible", checked: set.visible !== false ? "checked" : null });
    mount(editor,
      h("h2", { translate: "no", text: set.name }),
      h("div", { class: "row wrap" },
        h("label", { class: "inline" }, active, " ", t("qr.active_everywhere")),
        h("label", { class: "inline" }, visible, " ", t("qr.show_buttons"))),
      rows,
      h("div", { class: "row" },
        h("button", { type: "button", id: "qr-add", text: t("qr.add"), onClick: () => rows.append(replyRow()) }),
        h("button", { type: "button", class: "primary", id: "qr-save", text: t("common.save"), onClick: async () => {
          try {
            const saved = await api.put("/quick-replies", {
              name: set.name,
              active: active.checked,
              visible: visible.checked,
              replies: [...rows.children].map((row) => row.read()),
            });
            toast(t("common.saved"));
            await reload();
            edit(saved);
          } catch (error) {
            reportError(error, t("kept.page"));
          }
        } }),
        set.id ? h("a", { class: "button", href: `/api/quick-replies/${set.id}/export`, download: "", text: t("common.export") }) : null,
        set.id ? h("button", { type: "button", class: "danger", text: t("common.delete"), onClick: async () => {
          if (!confirm(t("qr.confirm_delete", { name: set.name }))) return;
          await api.del(`/quick-replies/${set.id}`);
          mount(editor);
          reload();
        } }) : null));
  };
  const reload = async () => {
    const sets = await api.get("/quick-replies");
    mount(list, sets.length ? sets.map((s) => h("li", {},
      h("button", { translate: "no", type: "button", class: "link", text: s.name, onClick: () => edit(s) }),
      h("span", { class: "muted", text: `${t("qr.count", { n: s.replies.length })}${s.active ? ` · ${t("qr.active")}` : ""}${s.active && s.visible === false ? ` · ${t("qr.buttons_hidden")}` : ""}` }))) : h("li", { class: "muted", text: t("qr.none") }));
  };
  await reload();
}
