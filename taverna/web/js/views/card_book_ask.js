// A card with a lorebook of its own, at import: asked in the page (as SillyTavern asks)
// whether to import that book and link it to the character, with "always" remembered as
// the page's setting, as the theme and the language are.

import { h } from "../dom.js";
import { t } from "../i18n.js";

const KEY = "taverna.cardBooks";

/** Whether a card's own lorebook is imported without asking. */
export const alwaysImportCardBooks = () => localStorage.getItem(KEY) === "always";

export function setAlwaysImportCardBooks(on) {
  if (on) localStorage.setItem(KEY, "always");
  else localStorage.removeItem(KEY);
}

/** Ask about `character`'s embedded lorebook: "yes", "always" or "no" (also on Esc). */
export function askCardBook(character) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "panel ask-card-book", "aria-labelledby": "ask-card-book-text" });
    const answer = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    const question = t("characters.import_book", { name: "{name}", n: character.embedded_lorebook_entries });
    dialog.append(
      h("p", { id: "ask-card-book-text" },
        question.split("{name}").flatMap((piece, i) => (i ? [h("span", { translate: "no", class: "strong", text: character.name }), piece] : [piece]))),
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", id: "card-book-yes", text: t("characters.book_yes"), onClick: () => answer("yes") }),
        h("button", { type: "button", id: "card-book-always", text: t("characters.book_always"), onClick: () => answer("always") }),
        h("button", { type: "button", id: "card-book-no", text: t("characters.book_no"), onClick: () => answer("no") })));
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      answer("no");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** Whether to import `character`'s own lorebook: the remembered "always", else the person's answer. */
export async function wantsCardBook(character) {
  if (alwaysImportCardBooks()) return true;
  const said = await askCardBook(character);
  if (said === "always") setAlwaysImportCardBooks(true);
  return said !== "no";
}

/** The Import page's setting: a checkbox for the remembered "always". */
export function cardBookSetting() {
  const box = h("input", { type: "checkbox", id: "always-card-books", checked: alwaysImportCardBooks(),
    onChange: () => setAlwaysImportCardBooks(box.checked) });
  return h("label", { class: "check" }, box, " ", t("import.always_card_books"));
}
