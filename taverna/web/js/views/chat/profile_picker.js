// The connection profile picker of the turn bar: one choice switches the chat to a
// profile's connection and model, and puts its preset, templates, tokenizer and stop
// strings in use (as SillyTavern's connection manager does). Hidden without profiles.

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";

/** The picker and its hooks. `chat()` gives the chat as last read; `applyChat(answer)`
 * takes the chat the server answered with; `switched()` runs once a profile is in use
 * (the bar reads its connection and model again). */
export function profilePicker({ chatUrl, chat, applyChat, switched }) {
  const element = h("select", { id: "profile-picker", class: "turn-profile", translate: "no", "aria-label": t("chat.profile"), title: t("chat.profile"), hidden: true });
  const note = h("span", { class: "muted turn-profile-note", id: "profile-note", role: "status" });

  function fill(profiles, chosen) {
    const none = h("option", { value: "", text: t("chat.profile_none") });
    element.replaceChildren(none, ...profiles.map((p) => h("option", { value: p.name, text: p.name, selected: p.name === chosen ? "selected" : null })));
    element.hidden = !profiles.length;
  }

  element.addEventListener("change", async () => {
    const name = element.value;
    if (!name) return;
    note.textContent = "";
    try {
      const answer = await api.post(`${chatUrl}/profile`, { profile: name, revision: chat().revision });
      applyChat(answer.chat);
      if (answer.missing.length) note.textContent = t("chat.profile_missing", { parts: answer.missing.join(", ") });
      await switched();
    } catch (error) {
      element.value = "";
      reportError(error);
    }
  });

  return {
    element,
    note,
    async load() {
      fill(await api.get("/connection-profiles").catch(() => []), element.value);
    },
  };
}
