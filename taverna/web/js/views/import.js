// Import: a whole SillyTavern user data folder with progress and a report, or single files.

import { api, followTask } from "../api.js";
import { formWith, h, mount, plainWarningNode, toast, toastWarnings } from "../dom.js";
import { explain, rawDetail, reportError, serverText } from "../errors.js";
import { causeWords, t } from "../i18n.js";
import { importKindLabel, reasonNode } from "../labels.js";
import { cardBookSetting } from "./card_book_ask.js";
import { importCards } from "./characters.js";

/** Why a file was skipped: in the person's language when the page knows the sentence; else
 * as the file's reader wrote it (naming the file and field), marked as not translated. */
const reasonText = (skip) => {
  const why = skip.code === "line_left_out" ? serverText(skip.params?.why_code, skip.params) : null;
  const said = skip.code === "line_left_out" ? why && t("reason.line_left_out", { why }) : serverText(skip.code, skip.params);
  if (!said) return reasonNode(skip.reason, "span", { class: "muted" });
  // a library's words said by their cause: its own English stays a fold away
  const raw = causeWords(skip.params || {}) && h("details", { class: "raw-detail" },
    h("summary", { text: t("error.raw_detail") }), h("span", { translate: "no", lang: "en", text: skip.reason }));
  return h("span", { class: "muted" }, said, raw || null);
};

/** A chat file the server refused: its name (the person's own words), why, and that
 * nothing was stored. */
const failed = (file, error) =>
  toast([h("span", { translate: "no", text: file.name }), `${t("import.colon")}${explain(error, { fileNamed: true })} ${t("kept.nothing_stored")}`, rawDetail(error)], "error");

/** One SillyTavern chat file (.jsonl): stored with the character it names, or, when the
 * library has none of that name, with one the person chooses or creates here. */
function chatFileSection() {
  const picker = h("input", { type: "file", id: "chat-file", accept: ".jsonl,application/jsonl", hidden: true });
  const choice = h("div", { class: "chat-file-choice", role: "group" });
  const importChat = async (file, characterId) => {
    const fields = characterId ? { file, character_id: characterId } : { file };
    const done = await api.upload("/chats/import", formWith(fields));
    toast(t(done.already_imported ? "import.chat_again" : "import.chat_done", { n: done.messages }));
    toastWarnings(file.name, done.warnings || []);
    location.hash = `#/chat/${done.id}`;
  };
  const askCharacter = async (file, named) => {
    const characters = await api.get("/characters");
    const select = h("select", { id: "chat-file-character", "aria-label": t("import.chat_character") },
      characters.map((c) => h("option", { value: c.id, translate: "no", text: c.name })));
    const attempt = async (work) => {
      try { await work(); } catch (error) { failed(file, error); }
    };
    mount(choice,
      h("p", {}, named ? t("import.chat_unknown") : t("import.chat_unnamed"),
        named ? h("span", { class: "strong", translate: "no", text: named }) : null),
      characters.length ? h("div", { class: "row" }, select,
        h("button", { type: "button", id: "chat-file-use", text: t("import.chat_use"), onClick: () => attempt(() => importChat(file, select.value)) })) : null,
      named ? h("div", { class: "row" }, h("button", { type: "button", id: "chat-file-create", class: "primary", text: t("import.chat_create"), onClick: () => attempt(async () => {
        const made = await api.post("/characters", { name: named });
        await importChat(file, made.id);
      }) })) : null);
    choice.scrollIntoView({ block: "nearest" });
  };
  picker.addEventListener("change", async () => {
    const file = picker.files[0];
    picker.value = "";
    mount(choice);
    if (!file) return;
    try {
      await importChat(file, null);
    } catch (error) {
      if (error?.detail?.code === "chat_needs_character") await askCharacter(file, error.detail.params?.name || "");
      else failed(file, error);
    }
  });
  return h("section", { class: "panel" },
    h("h2", { text: t("import.chat_file") }),
    h("p", { class: "muted", text: t("import.chat_file_help") }),
    h("button", { type: "button", id: "pick-chat-file", text: t("common.import"), onClick: () => picker.click() }),
    picker, choice);
}

/** The toast that ends a folder import: what was stored, counted by kind. */
function storedSummary(r) {
  const counts = new Map();
  for (const s of r.stored || []) counts.set(s.kind, (counts.get(s.kind) || 0) + 1);
  const what = [...counts].map(([kind, n]) => `${importKindLabel(kind)}${t("import.colon")}${n}`).join(" · ");
  return t("import.folder_done", { what: what || "0" });
}

/** What an import stored, what it skipped and why, and the values it read loosely. */
export function reportNode(r) {
  const stored = r.stored || [];
  const skipped = r.skipped || [];
  const loose = r.warnings || [];
  return [
    h("h3", { text: t("import.stored", { n: stored.length }) }),
    h("ul", { class: "list compact" }, stored.map((s) => h("li", {}, `${importKindLabel(s.kind)}${t("import.colon")}`, h("span", { translate: "no", text: s.name })))),
    h("h3", { text: t("import.skipped", { n: skipped.length }) }),
    h("ul", { class: "list compact" }, skipped.map((s) => h("li", {}, h("span", { class: "strong", translate: "no", text: s.path }), " ", reasonText(s)))),
    h("h3", { text: t("import.warnings", { n: loose.length }) }),
    h("ul", { class: "list compact warnings" }, loose.map((w) => h("li", {}, h("span", { class: "strong", translate: "no", text: w.path }), " ", plainWarningNode(w, { class: "muted" })))),
  ];
}

export async function render(root) {
  const folder = h("input", { type: "file", id: "st-folder", webkitdirectory: true, directory: true, multiple: true, hidden: true });
  const cards = h("input", { type: "file", id: "card-files", accept: ".png,.json,.charx", multiple: true, hidden: true });
  const bar = h("progress", { max: 1, value: 0, "aria-label": t("import.progress") });
  const status = h("p", { class: "muted", role: "status" });
  const report = h("div", { class: "report" });
  let close = null;
  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.import") })),
    h("section", { class: "panel" },
      h("h2", { text: t("import.st_folder") }),
      h("p", { class: "muted", text: t("import.st_folder_help") }),
      h("button", { type: "button", class: "primary", id: "pick-folder", text: t("import.pick_folder"), onClick: () => folder.click() }),
      folder, bar, status, report),
    h("section", { class: "panel" },
      h("h2", { text: t("import.cards") }),
      h("button", { type: "button", text: t("common.import"), onClick: () => cards.click() }), cards,
      cardBookSetting()),
    chatFileSection());

  cards.addEventListener("change", async () => {
    await importCards([...cards.files]);
    cards.value = "";
  });
  folder.addEventListener("change", async () => {
    const files = [...folder.files];
    if (!files.length) return;
    mount(report);
    bar.removeAttribute("value");
    status.textContent = t("import.uploading", { n: files.length });
    let started;
    try {
      started = await api.upload("/import/sillytavern", formWith({ files }));
    } catch (error) {
      status.textContent = `${explain(error)} ${t("kept.nothing_stored")}`;
      reportError(error, t("kept.nothing_stored"));
      bar.value = 0;
      return;
    }
    folder.value = "";
    close = followTask(started.task.id, (kind, data) => {
      if (kind === "progress") {
        bar.max = data.total || 1;
        bar.value = data.done || 0;
        status.textContent = t("import.progress_line", { done: data.done ?? 0, total: data.total ?? "?", item: data.item || "" });
      } else if (kind === "done") {
        bar.max = 1;
        bar.value = 1;
        status.textContent = t("import.finished");
        showReport(data.report || {});
        toast(storedSummary(data.report || {}));
      } else if (kind === "error") {
        status.textContent = data.message || t("error.generation");
      }
    });
  });

  function showReport(r) {
    mount(report, reportNode(r));
  }
  return () => close && close();
}
