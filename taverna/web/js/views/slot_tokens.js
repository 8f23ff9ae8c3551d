// The prompt manager's token counts: what each slot cost in the prompt of a chat chosen
// here (its next prompt, as the inspector builds it), beside the slot.

import { api } from "../api.js";
import { h, mount } from "../dom.js";
import { t } from "../i18n.js";

const LAST = "taverna.slot-tokens-chat";

/** A chat picker above the prompt manager; `onCounts(map | null)` gets each slot's tokens
 * (by identifier) in the picked chat's next prompt, null when there is nothing to count. */
export function slotTokenBar(preset, onCounts) {
  const bar = h("div", { class: "slot-tokens-bar row", id: "slot-tokens-bar" });
  const note = h("span", { class: "muted", id: "slot-tokens-note", "aria-live": "polite" });

  async function count(chatId) {
    localStorage.setItem(LAST, chatId);
    note.textContent = t("presets.counting");
    try {
      const ledger = (await api.get(`/chats/${encodeURIComponent(chatId)}/prompt`)).prompt.ledger || {};
      const counts = ledger.slot_tokens || {};
      onCounts(counts);
      note.textContent = Object.keys(counts).length ? t("presets.tokens_total", { n: ledger.total_tokens ?? 0 }) : t("presets.tokens_none");
    } catch {
      onCounts(null);
      note.textContent = t("presets.tokens_none");
    }
  }

  (async () => {
    const [chats, presets] = await Promise.all([api.get("/chats"), api.get("/presets?kind=chat")]);
    const active = presets.some((p) => p.id === preset.id && p.active);
    if (!active) return mount(bar, h("span", { class: "muted", id: "slot-tokens-note", text: t("presets.tokens_when_active") }));
    if (!chats.length) return mount(bar, h("span", { class: "muted", id: "slot-tokens-note", text: t("presets.tokens_no_chat") }));
    chats.sort((a, b) => String(b.updated || "").localeCompare(String(a.updated || "")));
    const saved = localStorage.getItem(LAST);
    const chosen = chats.some((c) => c.id === saved) ? saved : chats[0].id;
    const select = h("select", { id: "slot-tokens-chat" }, chats.map((c) =>
      h("option", { value: c.id, translate: "no", selected: c.id === chosen ? "selected" : null, text: c.title })));
    select.addEventListener("change", () => count(select.value));
    mount(bar, h("label", { for: "slot-tokens-chat", text: t("presets.tokens_in_chat") }), select, note);
    await count(chosen);
  })().catch(() => mount(bar));
  return bar;
}
