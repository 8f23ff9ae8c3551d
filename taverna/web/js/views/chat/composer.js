// What the person writes with: the input (its unsent text kept per chat in this browser), the
// turn bar, a picture to send, Send / Stop / Impersonate / Continue; and, when no model is
// connected yet, the first connection's form, made right here.

import { api } from "../../api.js";
import { h, iconButton } from "../../dom.js";
import { icon } from "../../icons.js";
import { t } from "../../i18n.js";
import { connectionForm } from "../connections.js";
import { pictureChip } from "./picture_chip.js";
import { scriptCompletion } from "./script_complete.js";
import { turnBar } from "./turn_bar.js";

/** The composer; `quickBar` is the Quick Replies' bar, shown above the turn bar. */
export function composer(store, chat, quickBar) {
  const { state } = store;
  // Enter sends where there is a keyboard and a mouse; on a touch screen Enter adds a line
  // (as phone keyboards expect) and the hint says to use the Send button.
  const finePointer = window.matchMedia("(pointer: fine)");
  const input = h("textarea", {
    id: "chat-input",
    rows: 2,
    placeholder: t(finePointer.matches ? "chat.placeholder" : "chat.placeholder_touch"),
    "aria-label": t("chat.input"),
  });
  // Persona, connection and model of the next turn, and the typed text's tokens.
  const turn = turnBar({ chatUrl: chat.url, input, chat: () => state.chat, applyChat: (answer) => chat.apply(answer) });
  const sendButton = h("button", { type: "button", class: "primary", id: "send", text: t("chat.send") });
  const stopButton = h("button", { type: "button", class: "danger", id: "stop", text: t("chat.stop"), hidden: true });
  const impersonateButton = iconButton(t("chat.impersonate"), "impersonate", () => chat.generate("impersonate"));
  const continueButton = iconButton(t("chat.continue"), "continue", () => chat.generate("continue"));
  const picture = pictureChip();
  const tools = toolsToggle();
  const element = h(
    "div",
    { class: "composer" },
    quickBar,
    turn.bar,
    picture.element,
    input,
    h("div", { class: "composer-actions" }, tools.button, picture.button, impersonateButton, continueButton, sendButton, stopButton),
  );
  tools.follow(element);
  // Completion of commands, their arguments and variable names, above the input.
  input.before(scriptCompletion({ input, variables: () => api.get(`${chat.url}/variables`) }));
  const notices = connectionNotices(() => {
    turn.load();
    input.focus();
  });

  // Unsent text is kept per chat in this browser, so a reload or a crash does not lose it.
  const unsentKey = `taverna.unsent.${chat.id}`;
  function keepUnsent() {
    try {
      if (input.value) localStorage.setItem(unsentKey, input.value);
      else localStorage.removeItem(unsentKey);
    } catch {
      // storage full or off: the text stays in the box all the same
    }
  }
  input.addEventListener("input", keepUnsent);
  input.value = localStorage.getItem(unsentKey) || "";

  sendButton.addEventListener("click", () => chat.generate("normal"));
  stopButton.addEventListener("click", async () => {
    const round = state.round;
    state.round = null; // Stop ends the round: nobody follows the one stopped
    if (round) await api.post(`/rounds/${round.id}/stop`).catch(() => {});
    if (state.task) await api.post(`/tasks/${state.task.id}/stop`);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && finePointer.matches) {
      event.preventDefault();
      chat.generate("normal");
    }
  });

  // The buttons follow the run: Stop while a reply is written, the others when none is.
  store.subscribe(() => {
    const running = !!state.task;
    const busy = running || !state.chat;
    sendButton.hidden = running;
    sendButton.disabled = !state.chat;
    stopButton.hidden = !running;
    impersonateButton.disabled = busy;
    continueButton.disabled = busy || state.total === 0;
  });

  return { element, input, turn, picture, keepUnsent, ...notices };
}

// Whether the Quick Reply bar and the pickers row are folded away (kept in this browser).
const TOOLS_KEY = "taverna.composer_tools";

/** The button that folds the Quick Reply bar and the pickers row away and back, giving a
 * small screen's height to the story; `follow(composer)` shows the state kept. */
function toolsToggle() {
  let composer = null;
  const button = iconButton("", "down", () => show(composer.classList.contains("tools-folded")), { attrs: { id: "composer-tools" } });
  function show(open) {
    composer.classList.toggle("tools-folded", !open);
    const label = t(open ? "chat.hide_tools" : "chat.show_tools");
    button.setAttribute("aria-label", label);
    button.title = label;
    button.setAttribute("aria-expanded", String(open));
    button.replaceChildren(icon(open ? "down" : "up"));
    try {
      localStorage.setItem(TOOLS_KEY, open ? "open" : "folded");
    } catch {
      // storage off: the bars stay as they are for this visit
    }
  }
  return {
    button,
    follow(element) {
      composer = element;
      show(localStorage.getItem(TOOLS_KEY) !== "folded");
    },
  };
}

// The small model's notice, once closed, stays closed in this browser.
const LOCAL_NOTICE_KEY = "taverna.local_notice";

/** The notices about the model: none connected yet (with the first connection's form; `made`
 * runs once it is saved), or the small one in the box. */
function connectionNotices(made) {
  const notice = h("div", { class: "notice first-run", hidden: true, id: "first-connection" },
    h("p", {}, h("span", { text: t("chat.no_connection") }), " ", h("a", { href: "#/connections", text: t("chat.all_connections") })),
    connectionForm({
      id: "first-connection-form",
      title: t("chat.first_connection"),
      first: true,
      onSaved: async (saved) => {
        notice.hidden = true;
        localNotice.hidden = saved.api !== "local" || closed();
        made();
      },
    }));
  // Said plainly: the model in the box is small; a better one is one connection away.
  const closed = () => localStorage.getItem(LOCAL_NOTICE_KEY) === "closed";
  const localNotice = h("div", { class: "notice local-model", hidden: true, id: "local-model-notice" },
    h("p", {}, h("span", { text: t("chat.local_model") }), " ", h("a", { href: "#/connections", text: t("chat.connect_better") })),
    iconButton(t("chat.close_notice"), "close", () => {
      localNotice.hidden = true;
      try {
        localStorage.setItem(LOCAL_NOTICE_KEY, "closed");
      } catch {
        // storage off: closed for this visit
      }
    }, { attrs: { id: "close-local-notice" } }));
  return {
    notice,
    localNotice,
    /** Show the notices that fit the connections `found`. */
    showConnections(found) {
      notice.hidden = found.length > 0;
      const chosen = found.find((c) => c.default) || found[0];
      localNotice.hidden = chosen?.api !== "local" || closed();
    },
    /** Nothing can answer yet: bring the first connection's form into sight; true if so. */
    offerConnection() {
      if (notice.hidden) return false;
      notice.scrollIntoView({ block: "nearest" });
      notice.querySelector("select, input")?.focus();
      return true;
    },
  };
}
