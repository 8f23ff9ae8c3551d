// How this chat looks: its own background and custom CSS over the global ones while it is
// open, and its character's expression sprite beside the messages, read again whenever the
// chat changed and no reply is being written (a reply, a swipe, an `/expression`). The
// sprite can be folded away; the choice is kept in this browser, and a phone starts folded.

import { api } from "../../api.js";
import { h, iconButton, mount } from "../../dom.js";
import { has, t } from "../../i18n.js";
import { showChatLooks } from "../../looks.js";

const FOLDED = "taverna.sprite";

function startsFolded() {
  const saved = localStorage.getItem(FOLDED);
  if (saved) return saved === "folded";
  return window.matchMedia("(max-width: 720px)").matches;
}

/** An expression's name in the page's language (the label itself where none is known). */
export function expressionName(label) {
  return has(`expression.${label}`) ? t(`expression.${label}`) : label;
}

/** The sprite aside: `element`, `load()` the chat's looks, `stop()` when the chat closes. */
export function appearance(store, chat) {
  const { state } = store;
  const picture = h("img", { class: "sprite", alt: "" });
  const label = h("span", { class: "sprite-label" });
  let folded = startsFolded();
  const toggle = iconButton(t("expression.hide"), "eye", () => {
    folded = !folded;
    localStorage.setItem(FOLDED, folded ? "folded" : "open");
    draw();
  }, { class: "small sprite-toggle", attrs: { id: "sprite-toggle", "aria-pressed": "false" } });
  const element = h("aside", { class: "expression", id: "expression", "aria-label": t("expression.title"), hidden: true },
    toggle, picture, label);
  let shown = null; // the expression as last read
  let readAt = null; // the chat revision it was read at

  function draw() {
    const section = element.parentElement;
    const visible = !!shown?.url;
    element.hidden = !visible;
    element.classList.toggle("closed", folded);
    section?.classList.toggle("has-sprite", visible);
    section?.classList.toggle("sprite-open", visible && !folded);
    const words = folded ? t("expression.show") : t("expression.hide");
    toggle.setAttribute("aria-label", words);
    toggle.title = words;
    toggle.setAttribute("aria-pressed", String(!folded));
    if (!visible) return;
    const name = expressionName(shown.label);
    picture.src = shown.url;
    picture.alt = t("expression.of", { name: shown.character, expression: name });
    element.dataset.label = shown.label;
    mount(label, name);
  }

  async function readExpression() {
    const revision = state.chat?.revision;
    if (revision === undefined || revision === readAt || state.task || state.closed) return;
    readAt = revision;
    try {
      shown = await api.get(`/chats/${encodeURIComponent(chat.id)}/expression`);
    } catch {
      shown = null; // the sprite is a nicety: the chat goes on without it
    }
    if (!state.closed) draw();
  }

  store.subscribe(() => readExpression());

  return {
    element,
    async load() {
      try {
        showChatLooks(await api.get(`/chats/${encodeURIComponent(chat.id)}/looks`));
      } catch {
        showChatLooks(null);
      }
      await readExpression();
    },
    stop() {
      showChatLooks(null);
    },
  };
}
