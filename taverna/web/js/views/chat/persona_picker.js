// Who the person speaks as in a chat, by the input: the personas, with the chat's own chosen
// (kept with the chat on the server).

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";
import { personaLabel } from "../../labels.js";

/** The persona picker; `chat()`, `applyChat` as the turn bar's, `changed()` after a change. */
export function personaPicker({ chatUrl, chat, applyChat, changed }) {
  const persona = h("select", { id: "persona-picker", class: "turn-persona", translate: "no", "aria-label": t("chat.persona"), title: t("chat.persona") });

  /** The personas, with the chat's own chosen; a chat user with no persona shows by name. */
  async function loadPersonas() {
    const found = await api.get("/personas");
    const current = chat().persona || {};
    const options = found.map((p) => h("option", { value: p.id, text: personaLabel(p.name), selected: p.id === current.id ? "selected" : null }));
    if (!found.some((p) => p.id === current.id)) {
      options.unshift(h("option", { value: "", disabled: "disabled", selected: "selected", text: personaLabel(current.name || "User") }));
    }
    persona.replaceChildren(...options);
    persona.disabled = found.length === 0;
  }

  persona.addEventListener("change", async () => {
    try {
      applyChat(await api.put(`${chatUrl}/persona`, { persona_id: persona.value, revision: chat().revision }));
      changed();
    } catch (error) {
      reportError(error);
      loadPersonas().catch(() => {});
    }
  });

  return { element: persona, load: loadPersonas };
}
