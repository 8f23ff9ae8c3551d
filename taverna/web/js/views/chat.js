// The chat view: the active path of one chat, streaming, and every per-message action.

import { api, followTask } from "../api.js";
import { copyText, h, iconButton, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { renderMarkdown } from "../markdown.js";
import { openInspector } from "./inspector.js";
import { openChatSettings } from "./chat_settings.js";
import { openTree } from "./tree.js";

function avatarFor(message, chat) {
  const isUser = message.role === "user";
  const name = message.name || (isUser ? chat.persona?.name : chat.characters?.[0]?.name) || "?";
  const url = isUser ? chat.persona?.avatar_url : message.avatar_url;
  if (url) return h("img", { class: "avatar", src: url, alt: "", loading: "lazy" });
  return h("span", { class: "avatar letter", "aria-hidden": "true", text: [...name][0] || "?" });
}

/** The model's visible reasoning, folded away (shown as plain text, never as HTML). */
function reasoningBlock(text, open = false) {
  if (!text) return null;
  return h("details", { class: "reasoning", open: open ? "open" : null },
    h("summary", { text: t("chat.reasoning") }), h("div", { class: "reasoning-text", text }));
}

/** Render the chat with id `params.id` into `root`; returns a cleanup function. */
export async function render(root, params) {
  let closed = false;
  const state = { chat: null, task: null, closeStream: null, streamText: "", contextCut: null, editing: null };
  const list = h("ol", { class: "messages", "aria-live": "off" });
  const input = h("textarea", {
    id: "chat-input",
    rows: 2,
    placeholder: t("chat.placeholder"),
    "aria-label": t("chat.input"),
  });
  const sendButton = h("button", { type: "button", class: "primary", id: "send", text: t("chat.send") });
  const stopButton = h("button", { type: "button", class: "danger", id: "stop", text: t("chat.stop"), hidden: true });
  const impersonateButton = iconButton(t("chat.impersonate"), "impersonate", () => generate("impersonate"));
  const continueButton = iconButton(t("chat.continue"), "continue", () => generate("continue"));
  const title = h("h1", { class: "chat-title" });
  const branchSelect = h("select", { "aria-label": t("chat.branches"), class: "branch-select" });
  const header = h(
    "div",
    { class: "chat-header" },
    h("a", { href: "#/chats", class: "back", "aria-label": t("chat.back"), title: t("chat.back"), text: "‹" }),
    title,
    branchSelect,
    iconButton(t("tree.open"), "branch", () => openTree(params.id, state.chat.revision, async (chat) => {
      state.chat = chat;
      await loadBranches();
      draw();
      loadContextLine();
    }), { attrs: { id: "open-tree" } }),
    iconButton(t("settings.title"), "note", () => openChatSettings(params.id, state.chat.revision, (chat) => {
      state.chat = chat;
      draw();
      loadContextLine();
    }), { attrs: { id: "open-settings" } }),
    iconButton(t("chat.undo"), "undo", () => history("undo")),
    iconButton(t("chat.redo"), "redo", () => history("redo")),
    iconButton(t("chat.inspector"), "inspect", () => openInspector(params.id, null, labels()), { attrs: { id: "open-inspector" } }),
  );
  const composer = h(
    "div",
    { class: "composer" },
    input,
    h("div", { class: "composer-actions" }, impersonateButton, continueButton, sendButton, stopButton),
  );
  const drafts = h("div", { class: "drafts", "aria-live": "polite" });
  const notice = h("p", { class: "notice", hidden: true },
    h("span", { text: t("chat.no_connection") }), " ", h("a", { href: "#/connections", text: t("chat.add_connection") }));
  mount(root, h("section", { class: "chat", "aria-label": t("chat.title") }, header, list, notice, drafts, composer));

  // Message ids as the inspector's ledger shows them: "#3 Ann".
  function labels() {
    return Object.fromEntries((state.chat?.messages || []).map((m, i) => [m.id, `#${i} ${m.name || m.role}`]));
  }

  async function load() {
    state.chat = await api.get(`/chats/${encodeURIComponent(params.id)}`);
    title.textContent = state.chat.title;
    await loadBranches();
    draw();
    if (state.chat.task && (!state.task || state.task.id !== state.chat.task.id)) attach(state.chat.task);
    loadContextLine();
    loadDrafts();
  }

  async function loadDrafts() {
    let found = [];
    try {
      found = (await api.get(`/chats/${encodeURIComponent(params.id)}/drafts`)).filter((d) => d.kind !== "impersonate");
    } catch {
      found = [];
    }
    mount(drafts, found.map((d) => h("div", { class: "draft", "data-id": d.id },
      h("div", { class: "draft-head" }, h("span", { class: "strong", text: t("chat.draft_title") }), h("span", { class: "muted", text: d.reason })),
      h("div", { class: "draft-text", text: d.text }),
      h("div", { class: "row" },
        h("button", { type: "button", class: "small primary", text: t("chat.draft_keep"), onClick: async () => {
          await api.post(`/drafts/${d.id}/keep`);
          await load();
        } }),
        h("button", { type: "button", class: "small", text: t("chat.draft_drop"), onClick: async () => {
          await api.del(`/drafts/${d.id}`);
          loadDrafts();
        } })))));
  }

  async function loadBranches() {
    const branches = state.chat.branches || [];
    mount(branchSelect, branches.map((b) =>
      h("option", { value: b.id, selected: b.active ? "selected" : null, text: `${b.name} (${b.length})` }),
    ));
    branchSelect.hidden = branches.length < 2;
  }

  async function loadContextLine() {
    try {
      const prompt = await api.get(`/chats/${encodeURIComponent(params.id)}/prompt`);
      state.contextCut = prompt.first_message_in_context;
      placeContextLine();
    } catch {
      state.contextCut = null;
    }
  }

  function placeContextLine() {
    list.querySelectorAll(".context-line").forEach((el) => el.remove());
    const cut = state.contextCut;
    if (!cut) return;
    const first = list.querySelector(`[data-id="${CSS.escape(cut)}"]`);
    if (!first || first === list.firstElementChild) return;
    first.before(h("li", { class: "context-line", role: "separator", "aria-label": t("chat.context_cut") },
      h("span", { text: t("chat.context_cut") })));
  }

  function lastAssistantId() {
    const msgs = state.chat.messages;
    const last = msgs[msgs.length - 1];
    return last && last.role === "assistant" ? last.id : null;
  }

  function draw() {
    const busy = !!state.task;
    const lastId = lastAssistantId();
    mount(list, state.chat.messages.map((m, i) => messageItem(m, i, m.id === lastId, busy)));
    if (state.task && !["impersonate", "continue"].includes(state.task.kind)) list.append(streamItem());
    placeContextLine();
    sendButton.hidden = busy;
    stopButton.hidden = !busy;
    impersonateButton.disabled = busy;
    continueButton.disabled = busy || !state.chat.messages.length;
    list.scrollTop = list.scrollHeight;
    if (state.task) updateStream();
  }

  function streamItem() {
    const char = state.chat.characters?.[0] || {};
    const body = h("div", { class: "content markdown", "aria-live": "polite", "aria-busy": "true" });
    body.innerHTML = renderMarkdown(state.streamText || "…");
    return h("li", { class: "message assistant streaming", id: "streaming" },
      avatarFor({ role: "assistant", name: char.name, avatar_url: char.avatar_url }, state.chat),
      h("div", { class: "bubble" }, h("div", { class: "meta" }, h("span", { class: "name", text: char.name || "" })),
        reasoningBlock(state.reasoningText, true), body));
  }

  function streamTarget() {
    if (state.task.kind === "continue") {
      // A continue grows the last message in place.
      const last = [...list.querySelectorAll(".message")].pop();
      const content = last?.querySelector(".content");
      if (content) {
        last.classList.add("streaming");
        content.setAttribute("aria-busy", "true");
      }
      return content;
    }
    return list.querySelector("#streaming .content");
  }

  function updateStream() {
    if (!state.task) return;
    if (state.task.kind === "impersonate") {
      input.value = state.streamText;
      return;
    }
    const target = streamTarget();
    if (!target) return;
    const text = state.task.kind === "continue" ? state.task.base + state.streamText : state.streamText;
    target.innerHTML = renderMarkdown(text || "…");
    list.scrollTop = list.scrollHeight;
  }

  function candidateNav(m, isLast, busy) {
    if (m.candidate_count < 2 && !(isLast && m.role === "assistant")) return null;
    const prev = iconButton(t("chat.prev_candidate"), "prev", () => select(m, -1), { class: "swipe-prev" });
    prev.disabled = busy || m.candidate_index <= 1;
    // On the last reply, "next" past the last candidate asks the model for a new one (a swipe).
    const canGenerate = isLast && m.role === "assistant" && m.candidate_index >= m.candidate_count;
    const next = iconButton(t("chat.next_candidate"), "next", () => (canGenerate ? generate("swipe") : select(m, 1)), { class: "swipe-next" });
    next.disabled = busy || (!canGenerate && m.candidate_index >= m.candidate_count);
    return h("span", { class: "swipes" }, prev,
      h("span", { class: "counter", title: t("chat.candidate_counter", { n: m.candidate_index, total: m.candidate_count }), text: `${m.candidate_index}/${m.candidate_count}` }),
      next);
  }

  function messageItem(m, index, isLastAssistant, busy) {
    const content = h("div", { class: "content markdown" });
    content.innerHTML = renderMarkdown(m.content);
    const reasoning = reasoningBlock(m.generation?.extras?.reasoning);
    const actions = h("div", { class: "actions" });
    const isUser = m.role === "user";
    const add = (label, glyph, fn, cls) => {
      const b = iconButton(label, glyph, fn, { class: cls });
      b.disabled = busy;
      actions.append(b);
    };
    add(t("chat.copy"), "copy", async () => toast((await copyText(m.content)) ? t("chat.copied") : t("error.copy")), "copy");
    add(t("chat.edit"), "edit", () => startEdit(m, content, false), "edit");
    if (isUser) add(t("chat.edit_resend"), "resend", () => startEdit(m, content, true), "edit-resend");
    add(m.hidden ? t("chat.unhide") : t("chat.hide"), m.hidden ? "eyeOff" : "eye", () => setHidden(m, !m.hidden), m.hidden ? "unhide" : "hide");
    add(t("chat.branch"), "branch", () => branchFrom(m), "branch");
    add(t("chat.checkpoint"), "flag", () => checkpointAt(m), "checkpoint");
    add(t("chat.prompt_of"), "inspect", () => openInspector(params.id, m.role === "assistant" && m.generated ? m.id : null, labels()), "inspect");
    if (isLastAssistant) {
      add(t("chat.regenerate"), "regenerate", () => generate("regenerate"), "regenerate");
    }
    add(t("chat.delete"), "trash", () => remove(m), "delete danger");
    const name = m.name || (isUser ? state.chat.persona?.name : state.chat.characters?.[0]?.name) || "";
    return h(
      "li",
      {
        class: `message ${m.role}${m.hidden ? " hidden-msg" : ""}`,
        "data-id": m.id,
        "data-index": index,
        "aria-label": t("chat.message_label", { name, n: index + 1 }),
      },
      avatarFor(m, state.chat),
      h("div", { class: "bubble" },
        h("div", { class: "meta" },
          h("span", { class: "name", text: name }),
          m.hidden ? h("span", { class: "badge", text: t("chat.hidden_badge") }) : null,
          h("span", { class: "index", text: `#${index}` }),
          candidateNav(m, isLastAssistant, busy)),
        reasoning,
        content,
        actions),
    );
  }

  function startEdit(m, content, resend) {
    const area = h("textarea", { class: "edit-area", value: m.content, "aria-label": t("chat.edit_text"), rows: Math.min(12, m.content.split("\n").length + 2) });
    const save = h("button", { type: "button", class: "primary", text: resend ? t("chat.save_resend") : t("chat.save") });
    const cancel = h("button", { type: "button", text: t("chat.cancel") });
    const box = h("div", { class: "edit-box" }, area, h("div", { class: "row" }, save, cancel));
    content.replaceWith(box);
    area.focus();
    cancel.addEventListener("click", () => draw());
    save.addEventListener("click", async () => {
      const text = area.value;
      if (resend) {
        const result = await api.post(`/chats/${params.id}/messages/${m.id}/resend`, { content: text, revision: state.chat.revision });
        state.chat = result.chat;
        attach(result.task);
      } else {
        state.chat = await api.patch(`/chats/${params.id}/messages/${m.id}`, { content: text, revision: state.chat.revision });
        draw();
      }
    });
  }

  async function select(m, step) {
    state.chat = await api.post(`/chats/${params.id}/messages/${m.id}/select`, { index: m.candidate_index + step, revision: state.chat.revision });
    await loadBranches();
    draw();
    loadContextLine();
  }

  async function setHidden(m, hidden) {
    state.chat = await api.post(`/chats/${params.id}/messages/${m.id}/hidden`, { hidden, revision: state.chat.revision });
    draw();
    loadContextLine();
  }

  async function remove(m) {
    if (!confirm(t("chat.confirm_delete"))) return;
    state.chat = await api.del(`/chats/${params.id}/messages/${m.id}?revision=${state.chat.revision}`);
    draw();
    loadContextLine();
  }

  async function branchFrom(m) {
    const name = prompt(t("chat.branch_name"), t("chat.branch_default", { n: (state.chat.branches || []).length + 1 }));
    if (name === null) return;
    state.chat = await api.post(`/chats/${params.id}/branches`, { node_id: m.id, name, revision: state.chat.revision });
    await loadBranches();
    draw();
    toast(t("chat.branched", { name }));
  }

  async function checkpointAt(m) {
    const known = await api.get(`/chats/${params.id}/checkpoints`);
    const name = prompt(t("chat.checkpoint_name"), t("chat.checkpoint_default", { n: known.length + 1 }));
    if (name === null) return;
    state.chat = await api.post(`/chats/${params.id}/checkpoints`, { node_id: m.id, name, revision: state.chat.revision });
    draw();
    toast(t("chat.checkpointed", { name }));
  }

  async function history(step) {
    if (state.task) return;
    state.chat = await api.post(`/chats/${params.id}/${step}`, { revision: state.chat.revision });
    await loadBranches();
    draw();
    loadContextLine();
  }

  // `/hide 2-5`, `/hide 3`, `/unhide 2-5`: SillyTavern's commands for hiding messages.
  async function slashCommand(text) {
    const found = text.match(/^\/(hide|unhide)\s+(\d+)(?:\s*-\s*(\d+))?$/);
    if (!found) return false;
    const start = Number(found[2]);
    const end = found[3] === undefined ? start : Number(found[3]);
    state.chat = await api.post(`/chats/${params.id}/hide-range`, { start, end, hidden: found[1] === "hide", revision: state.chat.revision });
    input.value = "";
    draw();
    loadContextLine();
    return true;
  }

  async function generate(kind) {
    if (state.task) return;
    const body = { kind, revision: state.chat.revision };
    if (kind === "normal" && (await slashCommand(input.value.trim()))) return;
    if (kind === "normal") {
      body.text = input.value;
      if (!body.text.trim() && !state.chat.messages.length) return;
    }
    const result = await api.post(`/chats/${params.id}/generate`, body);
    if (kind === "normal") input.value = "";
    state.chat = result.chat;
    attach(result.task);
  }

  function attach(task) {
    if (state.closeStream) state.closeStream();
    const last = state.chat.messages[state.chat.messages.length - 1];
    state.task = { ...task, base: task.kind === "continue" && last ? last.content : "" };
    state.streamText = "";
    state.reasoningText = "";
    draw();
    state.closeStream = followTask(task.id, async (kind, data) => {
      if (kind === "delta") {
        state.streamText += data.text || "";
        updateStream();
      } else if (kind === "reasoning") {
        const first = !state.reasoningText;
        state.reasoningText += data.text || "";
        const shown = list.querySelector("#streaming .reasoning-text");
        if (shown) shown.textContent = state.reasoningText;
        else if (first) draw();
      } else if (["done", "error", "cancelled", "lost"].includes(kind)) {
        const impersonated = state.task?.kind === "impersonate" ? state.streamText : null;
        state.task = null;
        state.closeStream = null;
        if (kind === "error") toast(data.message || t("error.generation"), "error");
        if (kind === "cancelled") toast(t("chat.stopped"));
        if (impersonated !== null) {
          input.value = data.text ?? impersonated;
          // The text is in the input box now; its stored draft is not needed.
          if (data.draft_id) await api.del(`/drafts/${data.draft_id}`).catch(() => {});
        }
        if (kind === "lost") toast(t("chat.reconnecting"));
        // The server may be going away as the stream ends (a restart): keep trying.
        await recover();
      }
    });
  }

  // Read the chat again, waiting for the server to answer if it is restarting.
  async function recover() {
    for (let attempt = 0; attempt < 120 && !closed; attempt += 1) {
      try {
        await load();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  sendButton.addEventListener("click", () => generate("normal"));
  stopButton.addEventListener("click", async () => {
    if (state.task) await api.post(`/tasks/${state.task.id}/stop`);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && window.matchMedia("(pointer: fine)").matches) {
      event.preventDefault();
      generate("normal");
    }
  });
  branchSelect.addEventListener("change", async () => {
    state.chat = await api.post(`/chats/${params.id}/branches/${branchSelect.value}/switch`, { revision: state.chat.revision });
    await loadBranches();
    draw();
    loadContextLine();
  });

  await load();
  api.get("/connections").then((found) => { notice.hidden = found.length > 0; }).catch(() => {});
  return () => {
    closed = true;
    if (state.closeStream) state.closeStream();
  };
}
