// The chat's turn bar, by the input: who the person speaks as, which connection and model
// the chat talks to (its own choice, kept with the chat on the server: other chats and the
// default stay as they are), and what the typed text costs in tokens (counted by the server
// with the tokenizer the chat's prompt is counted with), beside the next prompt's total.

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";
import { personaLabel } from "../../labels.js";

// Quiet typing this long (ms) before the server counts: one request a pause, not a key.
const COUNT_DELAY = 400;

const connectionUrl = (name) => `/connections/${encodeURIComponent(name)}`;

/**
 * The bar and its hooks. `chat()` gives the chat's facts as last read (persona, revision,
 * group, connection); `applyChat(answer)` takes a chat answer the server gave to a persona
 * or connection change. `load()` reads the choices (again, after a connection was made);
 * `soon()` counts again.
 */
export function turnBar({ chatUrl, input, chat, applyChat }) {
  const persona = h("select", { id: "persona-picker", class: "turn-persona", translate: "no", "aria-label": t("chat.persona"), title: t("chat.persona") });
  const connection = h("select", { id: "connection-picker", class: "turn-connection", translate: "no", "aria-label": t("chat.connection"), title: t("chat.connection") });
  const model = h("select", { id: "model-picker", class: "turn-model", translate: "no", "aria-label": t("chat.model"), title: t("chat.model") });
  const count = h("span", { id: "token-count", class: "token-count", "aria-live": "polite" });
  const bar = h("div", { class: "turn-bar", id: "turn-bar" }, persona, connection, model, count);
  let connections = [];
  let timer = null;
  let asked = 0; // the latest count asked for: an older answer arriving late is dropped

  function option(value, text, selected) {
    return h("option", { value, text, selected: selected ? "selected" : null });
  }

  /** The personas, with the chat's own chosen; a chat user with no persona shows by name. */
  async function loadPersonas() {
    const found = await api.get("/personas");
    const current = chat().persona || {};
    const options = found.map((p) => option(p.id, personaLabel(p.name), p.id === current.id));
    if (!found.some((p) => p.id === current.id)) {
      options.unshift(h("option", { value: "", disabled: "disabled", selected: "selected", text: personaLabel(current.name || "User") }));
    }
    persona.replaceChildren(...options);
    persona.disabled = found.length === 0;
  }

  const chosen = () => connections.find((c) => c.name === connection.value);

  /** The chat's own choice for the connection `name`, if it chose that one. */
  const ownChoice = (name) => (chat().connection && chat().connection.name === name ? chat().connection : null);

  /** The connections, the one this chat chose (else the default, as the server takes it). */
  async function loadConnections() {
    connections = await api.get("/connections");
    const kept = chat().connection?.name;
    const pick = connections.find((c) => c.name === kept) || connections.find((c) => c.default) || connections[0];
    connection.replaceChildren(...connections.map((c) => option(c.name, c.name, c === pick)));
    // In a group chat a member the group gives a connection of its own keeps it.
    connection.hidden = model.hidden = !connections.length;
    await loadModels();
  }

  /** The chosen connection's models, where its API lists them; else its model alone. */
  async function loadModels() {
    const current = chosen();
    if (!current) return model.replaceChildren();
    const wanted = ownChoice(current.name)?.model || current.model;
    let names = [];
    try {
      names = await api.get(`${connectionUrl(current.name)}/models`);
    } catch {
      names = []; // an API that lists nothing (or is not reachable now): the model it has
    }
    if (chosen() !== current) return; // another connection was chosen meanwhile
    if (wanted && !names.includes(wanted)) names = [wanted, ...names];
    model.replaceChildren(...names.map((name) => option(name, name, name === wanted)));
    model.disabled = names.length < 2;
  }

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

  persona.addEventListener("change", async () => {
    try {
      applyChat(await api.put(`${chatUrl}/persona`, { persona_id: persona.value, revision: chat().revision }));
      recount();
    } catch (error) {
      reportError(error);
      loadPersonas().catch(() => {});
    }
  });

  /** Keep the chat's choice on the server (one undoable change of the chat); on a
   * refusal the bar shows the chat's choice as it stands. */
  async function keep(name, modelName) {
    try {
      applyChat(await api.put(`${chatUrl}/connection`, { connection: name, model: modelName, revision: chat().revision }));
      return true;
    } catch (error) {
      reportError(error);
      await loadConnections().catch(() => {});
      return false;
    }
  }

  connection.addEventListener("change", async () => {
    if (!(await keep(connection.value, null))) return;
    await loadModels();
    recount();
  });

  model.addEventListener("change", async () => {
    const current = chosen();
    if (!current) return;
    // the connection's own model is asked for as "": the chat then follows its changes
    const picked = model.value === current.model ? null : model.value;
    if (await keep(current.name, picked)) recount();
  });

  return {
    bar,
    async load() {
      await Promise.all([loadPersonas(), loadConnections()]).catch(() => {});
      recount();
    },
    /** Count again once things settle (the path or the input changed). */
    soon,
  };
}
