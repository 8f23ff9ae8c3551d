// Import: a whole SillyTavern user data folder with progress and a report, or single files.

import { api, followTask } from "../api.js";
import { formWith, h, mount } from "../dom.js";
import { explain, reportError } from "../errors.js";
import { t } from "../i18n.js";
import { importKindLabel, reasonNode } from "../labels.js";
import { importCards } from "./characters.js";

/** Why a file was skipped: in the person's language when the page knows the sentence; else
 * as the file's reader wrote it (naming the file and field), marked as not translated. */
const reasonText = (reason) => reasonNode(reason, "span", { class: "muted" });

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
      h("button", { type: "button", text: t("common.import"), onClick: () => cards.click() }), cards));

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
      } else if (kind === "error") {
        status.textContent = data.message || t("error.generation");
      }
    });
  });

  function showReport(r) {
    const stored = r.stored || [];
    const skipped = r.skipped || [];
    const loose = r.warnings || [];
    mount(report,
      h("h3", { text: t("import.stored", { n: stored.length }) }),
      h("ul", { class: "list compact" }, stored.map((s) => h("li", {}, `${importKindLabel(s.kind)}${t("import.colon")}`, h("span", { translate: "no", text: s.name })))),
      h("h3", { text: t("import.skipped", { n: skipped.length }) }),
      h("ul", { class: "list compact" }, skipped.map((s) => h("li", {}, h("span", { class: "strong", translate: "no", text: s.path }), " ", reasonText(s.reason)))),
      h("h3", { text: t("import.warnings", { n: loose.length }) }),
      h("ul", { class: "list compact warnings" }, loose.map((w) => h("li", {}, h("span", { class: "strong", text: w.path }), h("span", { class: "muted", translate: "no", text: ` ${w.field ? `${w.field}: ` : ""}${w.message}` })))));
  }
  return () => close && close();
}
