// The chat's drafts: the partial text a failed or stopped generation kept (keep it on the
// path, or drop it), and a finished reply the server could not store yet, shown as "saving…"
// and read again until it is stored, then the chat with it.

import { api } from "../../api.js";
import { h, mount, toast } from "../../dom.js";
import { failureCause } from "../../errors.js";
import { t } from "../../i18n.js";
import { reasonNode } from "../../labels.js";

// How often (ms) a reply still being saved is looked for again.
const SAVING_POLL = 3000;

/** The drafts' box and `load()`, which reads them again. */
export function draftBox(store, chat) {
  const { state } = store;
  const drafts = h("div", { class: "drafts", "aria-live": "polite" });
  let savingTimer = null;

  async function loadDrafts() {
    let found = [];
    try {
      found = (await api.get(`${chat.url}/drafts`)).filter((d) => d.kind !== "impersonate" || d.saving);
    } catch {
      found = [];
    }
    const saving = found.filter((d) => d.saving);
    clearTimeout(savingTimer);
    savingTimer = null;
    if (saving.length && !state.closed) {
      savingTimer = setTimeout(async () => {
        const before = drafts.querySelectorAll(".draft.saving").length;
        await loadDrafts();
        if (drafts.querySelectorAll(".draft.saving").length < before) await chat.recover();
      }, SAVING_POLL);
    }
    mount(drafts, saving.map(savingItem), found.filter((d) => !d.saving).map(draftItem));
  }

  function savingItem(d) {
    return h("div", { class: "draft saving", "data-id": d.id, "aria-busy": "true" },
      h("div", { class: "draft-head" }, h("span", { class: "strong", text: t("chat.saving") }),
        h("span", { class: "muted", text: t("chat.saving_note") })),
      h("div", { class: "draft-text", translate: "no", text: d.text }));
  }

  function draftItem(d) {
    return h("div", { class: "draft", "data-id": d.id },
      h("div", { class: "draft-head" }, h("span", { class: "strong", text: t("chat.draft_title") }), draftReason(d)),
      h("div", { class: "draft-text", text: d.text }),
      h("div", { class: "row" },
        h("button", { type: "button", class: "small primary", text: t("chat.draft_keep"), onClick: () => keepDraft(d) }),
        h("button", { type: "button", class: "small", text: t("chat.draft_drop"), onClick: async () => {
          await api.del(`/drafts/${d.id}`);
          loadDrafts();
        } })));
  }

  async function keepDraft(d) {
    const endBefore = state.total ? `${state.total}:${store.lastHeld()?.id}` : "";
    try {
      await api.post(`/drafts/${d.id}/keep`, { revision: state.chat.revision });
    } catch (error) {
      if (error.status === 409) return chat.changedElsewhere();
      throw error;
    }
    await chat.load();
    // A draft written for an earlier point of the chat is kept where it belongs, off
    // the path the person is on now: said, with where to find it.
    const endAfter = state.total ? `${state.total}:${store.lastHeld()?.id}` : "";
    toast(endAfter === endBefore ? t("chat.draft_kept_aside") : t("chat.draft_kept"), endAfter === endBefore ? "warning" : "info");
  }

  /** Why a draft was kept: the model API's failure in words, a known sentence in the
   * person's language, else the server's own words (marked as not translated). */
  function draftReason(d) {
    if (d.cause) return h("span", { class: "muted", text: failureCause(d.cause, d.reason) });
    return reasonNode(d.reason, "span", { class: "muted" });
  }

  return { element: drafts, load: loadDrafts };
}
