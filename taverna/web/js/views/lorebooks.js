// Lorebooks: list, import, create, delete; the World Info settings above the list.

import { api } from "../api.js";
import { formWith, h, mount, toast, toastWarnings } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";
import { worldInfoPanel } from "./world_info.js";

export async function render(root) {
  const picker = h("input", { type: "file", accept: ".json,.png,application/json,image/png", multiple: true, hidden: true, id: "lorebook-file" });
  const list = h("ul", { class: "list" });
  const panelSlot = h("div", { class: "world-info-slot" });
  mount(root, h("div", { class: "page-head" }, h("h1", { text: t("nav.lorebooks") }),
    h("div", { class: "row" },
      h("button", { type: "button", class: "primary", text: t("common.import"), onClick: () => picker.click() }),
      h("button", { type: "button", text: t("lorebooks.new"), onClick: async () => {
        const name = prompt(t("lorebooks.name"));
        if (!name) return;
        const book = await api.post("/lorebooks", { name });
        location.hash = `#/lorebooks/${book.id}`;
      } }))),
  picker, panelSlot, list);
  picker.addEventListener("change", async () => {
    for (const file of picker.files) {
      try {
        const book = await api.upload("/lorebooks/import", formWith({ file }));
        toast(t("lorebooks.imported", { name: book.name, n: book.entry_count }));
        toastWarnings(file.name, book.warnings);
      } catch (error) {
        toast(`${file.name}: ${explain(error)} ${t("kept.nothing_stored")}`, "error");
      }
    }
    picker.value = "";
    reload();
  });
  const drawList = (books, everyChat) => {
    mount(list, books.length ? books.map((b) => h("li", {},
      h("a", { translate: "no", href: `#/lorebooks/${b.id}`, class: "grow", text: b.name }),
      everyChat.includes(b.name) ? h("span", { class: "badge wi-badge", text: t("wi.global_badge") }) : null,
      h("span", { class: "muted", text: t("lorebooks.entries", { n: b.entry_count }) }),
      h("a", { class: "button small", href: `/api/lorebooks/${b.id}/export`, download: "", text: t("common.export") }),
      h("button", { type: "button", class: "small danger", text: t("common.delete"), onClick: async () => {
        if (!confirm(t("lorebooks.confirm_delete", { name: b.name }))) return;
        await api.del(`/lorebooks/${b.id}`);
        reload();
      } }))) : h("li", { class: "muted", text: t("lorebooks.none") }));
  };
  const reload = async () => {
    const books = await api.get("/lorebooks");
    const open = panelSlot.querySelector("details")?.open;
    const panel = await worldInfoPanel(books, (saved) => drawList(books, saved.world_info.globalSelect));
    panel.open = !!open;
    mount(panelSlot, panel);
    drawList(books, [...panel.querySelectorAll("#wi-global input:checked")].map((box) => box.value));
  };
  await reload();
}
