// What the typed text costs in tokens, by the chat's input: counted by the server with the
// tokenizer the chat's prompt is counted with, beside the next prompt's total.

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { t } from "../../i18n.js";

// Quiet typing this long (ms) before the server counts: one request a pause, not a key.
const COUNT_DELAY = 400;

/** The count of `input`'s text for the chat at `chatUrl`: `recount()` now, `soon()` after a pause. */
export function tokenCount({ chatUrl, input }) {
  const count = h("span", { id: "token-count", class: "token-count", "aria-live": "polite" });
  let timer = null;
  let asked = 0; // the latest count asked for: an older answer arriving late is dropped

  async function recount() {
    clearTimeout(timer);
    timer = null;
    const mine = ++asked;
    try {
      const found = await api.post(`${chatUrl}/tokens`, { text: input.value });
      if (mine !== asked) return;
      count.textContent = t("chat.tokens", { n: found.tokens, total: found.prompt_tokens });
      count.title = t("chat.tokenizer", { name: found.tokenizer });
    } catch {
      if (mine === asked) count.textContent = ""; // a count is a hint: none rather than a wrong one
    }
  }

  function soon() {
    clearTimeout(timer);
    timer = setTimeout(recount, COUNT_DELAY);
  }

  input.addEventListener("input", soon);

  return { element: count, recount, soon };
}
