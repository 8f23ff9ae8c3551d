// One message of the chat as drawn: its speaker, its candidates' arrows, its text (rich, with
// code blocks that copy, or a tool step's calls), its actions, and editing it in place.

import { copyText, h, iconButton, toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { personaLabel } from "../../labels.js";
import { renderRich } from "../../rich.js";
import { openInspector } from "../inspector.js";
import { avatarFor, reasoningBlock } from "./message_parts.js";
import { choosePicture } from "./picture_chip.js";

/** The <li> of message `m`: `isLast` when it is the path's last reply (it has more buttons),
 * `busy` while a reply is written, `facts` the chat's own facts, `chat` the verbs it calls. */
export function messageItem(m, { isLast, busy, facts, chat }) {
  const content = h("div", { class: "content markdown", translate: "no" });
  if (m.tool_calls) content.replaceChildren(toolCalls(m));
  else {
    // What display-only regex scripts make of the message, if they change it; edits use the stored text.
    renderRich(content, m.shown ?? m.content);
    decorateCode(content);
  }
  // The reasoning as display-only regex scripts of the reasoning placement show it.
  const reasoning = reasoningBlock(m.shown_reasoning ?? m.generation?.extras?.reasoning);
  const isUser = m.role === "user";
  const name = m.name || (isUser ? facts.persona?.name : facts.characters?.[0]?.name) || "";
  return h(
    "li",
    {
      class: `message ${m.role}${m.hidden ? " hidden-msg" : ""}${m.tool_calls ? " tool-step" : ""}`,
      "data-id": m.id,
      "data-index": m.position,
      "data-last": isLast ? "1" : "0",
      "aria-label": t("chat.message_label", { name, n: m.position + 1 }),
    },
    avatarFor(m, facts),
    h("div", { class: "bubble" },
      h("div", { class: "meta" },
        h("span", { class: "name", translate: "no", text: isUser ? personaLabel(name) : name }),
        m.hidden ? h("span", { class: "badge", text: t("chat.hidden_badge") }) : null,
        h("span", { class: "index", text: `#${m.position}` }),
        candidateNav(m, isLast, busy, chat)),
      reasoning,
      m.image_url ? h("img", { class: "attached-picture", src: m.image_url, alt: t("chat.picture"), loading: "lazy" }) : null,
      content,
      messageActions(m, content, { isLast, busy, chat })),
  );
}

/** The row of buttons under a message: copy, edit, hide, picture, branch, prompt, delete. */
function messageActions(m, content, { isLast, busy, chat }) {
  const actions = h("div", { class: "actions" });
  const isUser = m.role === "user";
  const add = (label, glyph, fn, cls) => {
    const b = iconButton(label, glyph, fn, { class: cls });
    b.disabled = busy;
    actions.append(b);
  };
  add(t("chat.copy"), "copy", async () => toast((await copyText(m.content)) ? t("chat.copied") : t("error.copy")), "copy");
  add(t("chat.edit"), "edit", () => startEdit(m, content, false, chat), "edit");
  if (isUser) add(t("chat.edit_resend"), "resend", () => startEdit(m, content, true, chat), "edit-resend");
  add(m.hidden ? t("chat.unhide") : t("chat.hide"), m.hidden ? "eyeOff" : "eye", () => chat.setHidden(m, !m.hidden), m.hidden ? "unhide" : "hide");
  if (m.image_url) add(t("chat.picture_remove"), "picture", () => chat.setPicture(m, null), "picture-remove");
  else add(t("chat.picture_attach"), "picture", () => choosePicture((p) => chat.setPicture(m, p.url)), "picture-attach");
  add(t("chat.branch"), "branch", () => chat.branchFrom(m), "branch");
  add(t("chat.checkpoint"), "flag", () => chat.checkpointAt(m), "checkpoint");
  add(t("chat.prompt_of"), "inspect", () => openInspector(chat.id, m.role === "assistant" && m.generated ? m.id : null, chat.labels()), "inspect");
  if (isLast) {
    add(t("chat.regenerate"), "regenerate", () => chat.generate("regenerate"), "regenerate");
  }
  add(t("chat.delete"), "trash", () => chat.remove(m), "delete danger");
  return actions;
}

function candidateNav(m, isLast, busy, chat) {
  if (m.candidate_count < 2 && !(isLast && m.role === "assistant")) return null;
  const prev = iconButton(t("chat.prev_candidate"), "prev", () => chat.select(m, -1), { class: "swipe-prev" });
  prev.dataset.off = m.candidate_index <= 1 ? "1" : "0";
  prev.disabled = busy || prev.dataset.off === "1";
  // On the last reply, "next" past the last candidate asks the model for a new one (a swipe).
  const canGenerate = isLast && m.role === "assistant" && m.candidate_index >= m.candidate_count;
  const next = iconButton(t("chat.next_candidate"), "next", () => (canGenerate ? chat.generate("swipe") : chat.select(m, 1)), { class: "swipe-next" });
  next.dataset.off = !canGenerate && m.candidate_index >= m.candidate_count ? "1" : "0";
  next.disabled = busy || next.dataset.off === "1";
  return h("span", { class: "swipes" }, prev,
    h("span", { class: "counter", title: t("chat.candidate_counter", { n: m.candidate_index, total: m.candidate_count }), text: `${m.candidate_index}/${m.candidate_count}` }),
    next);
}

/** A tool step: what the model said, then each call it made and the tool's answer
 * (plain text, never markup). */
function toolCalls(m) {
  const first = m.tool_calls[0];
  const shown = `${first.name}(${first.arguments}) → ${first.result}`;
  const said = m.content.endsWith(shown) ? m.content.slice(0, -shown.length).trim() : "";
  return h("div", { class: "tool-calls" },
    said ? h("p", { class: "tool-said", text: said }) : null,
    m.tool_calls.map((call) => h("div", { class: "tool-call", "data-tool": call.name },
      h("span", { class: "badge", text: t("chat.tool_call") }), " ",
      h("code", { class: "tool-name", text: `${call.name}(${call.arguments})` }),
      h("div", { class: "tool-result" }, h("span", { class: "muted", text: t("chat.tool_result") }), " ",
        h("code", { text: call.result })))));
}

/** Each code block gets a head: its language (from the fence) and a copy button. */
function decorateCode(content) {
  for (const pre of content.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    const lang = [...(code?.classList || [])].find((c) => c.startsWith("lang-"))?.slice(5);
    pre.before(h("div", { class: "code-head" },
      h("span", { class: "code-lang", text: lang || t("chat.code") }),
      iconButton(t("chat.copy_code"), "copy", async () => toast((await copyText(code?.textContent || "")) ? t("chat.copied") : t("error.copy")), { class: "code-copy" })));
  }
}

/** Edit `m` in place of its `content`; `resend`: the edit is sent again and answered. */
function startEdit(m, content, resend, chat) {
  const area = h("textarea", { class: "edit-area", value: m.content, "aria-label": t("chat.edit_text"), rows: Math.min(12, m.content.split("\n").length + 2) });
  const save = h("button", { type: "button", class: "primary", text: resend ? t("chat.save_resend") : t("chat.save") });
  const cancel = h("button", { type: "button", text: t("chat.cancel") });
  const box = h("div", { class: "edit-box" }, area, h("div", { class: "row" }, save, cancel));
  content.replaceWith(box);
  area.focus();
  cancel.addEventListener("click", () => chat.redrawHeld(m.id));
  save.addEventListener("click", async () => {
    const text = area.value;
    if (resend) await chat.resend(m, text);
    else await chat.saveEdit(m, text);
  });
  // As editors go: Escape puts the message back as it was, Ctrl+Enter (⌘+Enter) saves.
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      cancel.click();
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      save.click();
    }
  });
}
