// The chat's turn bar, by the input: who the person speaks as (persona_picker.js), which
// connection and model the chat talks to (its own choice, kept with the chat on the server:
// other chats and the default stay as they are), or a connection profile switching both and
// the settings with them (profile_picker.js), and what the typed text costs in tokens
// (token_count.js).

import { api } from "../../api.js";
import { h } from "../../dom.js";
import { reportError } from "../../errors.js";
import { t } from "../../i18n.js";
import { personaPicker } from "./persona_picker.js";
import { profilePicker } from "./profile_picker.js";
import { tokenCount } from "./token_count.js";

const connectionUrl = (name) => `/connections/${encodeURIComponent(name)}`;

/**
 * The bar and its hooks. `chat()` gives the chat's facts as last read (persona, revision,
 * group, connection); `applyChat(answer)` takes a chat answer the server gave to a persona
 * or connection change. `load()` reads the choices (again, after a connection was made);
 * `soon()` counts again.
 */
export function turnBar({ chatUrl, input, chat, applyChat }) {
  const count = tokenCount({ chatUrl, input });
  const { recount } = count;
  const persona = personaPicker({ chatUrl, chat, applyChat, changed: recount });
  const connection = h("select", { id: "connection-picker", class: "turn-connection", translate: "no", "aria-label": t("chat.connection"), title: t("chat.connection") });
  const model = h("select", { id: "model-picker", class: "turn-model", translate: "no", "aria-label": t("chat.model"), title: t("chat.model") });
  const profile = profilePicker({ chatUrl, chat, applyChat, switched: async () => { await loadConnections(); recount(); } });
  const bar = h("div", { class: "turn-bar", id: "turn-bar" }, persona.element, profile.element, connection, model, profile.note, count.element);
  let connections = [];

  function option(value, text, selected) {
    return h("option", { value, text, selected: selected ? "selected" : null });
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
      await Promise.all([persona.load(), profile.load(), loadConnections()]).catch(() => {});
      recount();
    },
    /** Count again once things settle (the path or the input changed). */
    soon: count.soon,
  };
}
