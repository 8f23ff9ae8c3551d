// A card with regex scripts of its own: asked once in this browser whether they may run, as
// SillyTavern asks.

import { api } from "../../api.js";
import { h, mount } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";

/** The question's box and `ask()`, which asks about the first card not asked yet. */
export function regexConsent(store, chat) {
  const { state } = store;
  const box = h("div", { class: "notice regex-consent", hidden: true, id: "regex-consent", role: "region", "aria-label": t("nav.regex") });

  async function ask() {
    for (const character of state.chat.characters) {
      const asked = `taverna.regex-asked.${character.id}`;
      if (!character.id || localStorage.getItem(asked)) continue;
      let layer;
      try {
        layer = await api.get(`/regex/character?target=${encodeURIComponent(character.id)}`);
      } catch {
        continue; // the card is gone or unreadable: nothing to ask
      }
      if (!layer.scripts.length || layer.allowed) continue;
      const answered = () => {
        localStorage.setItem(asked, "1");
        box.hidden = true;
      };
      mount(box,
        h("p", { text: t("regex.consent", { name: character.name, n: layer.scripts.length }) }),
        h("div", { class: "row" },
          h("button", { type: "button", class: "primary", id: "regex-consent-allow", text: t("regex.consent_allow"), onClick: async () => {
            try {
              await api.put(`/regex/character/allowed?target=${encodeURIComponent(character.id)}`, { allowed: true });
              answered();
              await chat.load();
            } catch (error) {
              reportError(error);
            }
          } }),
          h("button", { type: "button", id: "regex-consent-no", text: t("regex.consent_no"), onClick: answered })));
      box.hidden = false;
      return;
    }
  }

  return { element: box, ask };
}
