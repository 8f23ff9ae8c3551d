// A failed generation, told on the spot where its reply would have been: the cause in words,
// the server's own message, and Retry (the same kind of generation again).

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { failureCause, retryable } from "../../errors.js";
import { t } from "../../i18n.js";

/** The failure's verbs; `list` is the message list it is told in, `chat.start` retries. */
export function failureNotice(store, chat, list) {
  const { state } = store;
  const listEl = list.element;

  /** Tell `failure` ({kind, message, cause}) at the end of the list. */
  function showFailure(failure) {
    state.failure = failure;
    placeFailure();
  }

  function placeFailure() {
    listEl.querySelector("#failure")?.remove();
    const failure = state.failure;
    if (!failure || state.task) return;
    const retry = retryable(failure.cause) ? h("button", { type: "button", class: "primary small", id: "retry", text: t("chat.retry"), onClick: () => retryFailed(failure) }) : null;
    const dismiss = h("button", { type: "button", class: "small", text: t("chat.dismiss"), onClick: () => {
      state.failure = null;
      placeFailure();
    } });
    const detail = failure.message ? h("p", { translate: "no", class: "muted failure-detail", text: failure.message }) : null;
    list.placeAtEnd(h("li", { class: "message assistant failed", id: "failure", role: "alert" },
      h("div", { class: "bubble" },
        h("p", { class: "failure-title", text: t(failure.kind === "impersonate" ? "chat.failed_impersonate" : "chat.failed_reply") }),
        h("p", { class: "failure-cause", text: failureCause(failure.cause, failure.message) }),
        detail,
        h("div", { class: "row wrap" }, retry, dismiss))));
    list.scrollToEnd();
  }

  async function retryFailed({ kind, unsent }) {
    if (state.task || !state.chat) return;
    state.failure = null;
    placeFailure();
    // A send that never started gave its text back to the input box: the retry sends it.
    if (unsent) {
      await chat.generate("normal");
      return;
    }
    // A failed send stored the person's message: the retry answers it (no new text).
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal") body.text = "";
    if (!(await chat.start(() => api.post(`${chat.url}/generate`, body)))) showFailure({ kind, message: "", cause: null });
  }


  return { show: showFailure, place: placeFailure };
}
