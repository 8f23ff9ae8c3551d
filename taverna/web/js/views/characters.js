// The character library: search, import by drag-and-drop or file picker, open, start a chat.

import { api, markNewChat } from "../api.js";
import { formWith, h, mount, toast, toastWarnings } from "../dom.js";
import { explain, rawDetail, reportError } from "../errors.js";
import { t } from "../i18n.js";
import { wantsCardBook } from "./card_book_ask.js";
import { favoriteStar, filterBar } from "./character_marks.js";

const ACCEPT = ".png,.json,.charx,image/png,application/json";

/** Upload card files; returns the stored characters. Shared with the import view. */
export async function importCards(files) {
  const stored = [];
  for (const file of files) {
    try {
      const result = await api.upload("/characters/import", formWith({ file }));
      toastWarnings(file.name, result.warnings);
      // Asked about the card's own lorebook first, so the toast names all that was stored.
      const final = await offerCardLorebook(result, { quiet: true });
      stored.push(final);
      toast(storedWords(result, final));
    } catch (error) {
      // the file's name is the person's own; the reader's English a fold away
      const said = t("characters.import_failed", { file: "{file}", message: `${explain(error, { fileNamed: true })} ${t("kept.nothing_stored")}` });
      const parts = said.split("{file}").flatMap((piece, i) => (i ? [h("span", { translate: "no", text: file.name }), piece] : [piece]));
      toast([...parts, rawDetail(error)], "error");
    }
  }
  return stored;
}

/** What one card's import stored, in a sentence: the character (new or updated) and the
 * lorebook it brought, or that its lorebook was left out. The same card (or one of the
 * same name) again replaces that character: said so, since the list gains nothing. */
function storedWords(result, final) {
  const who = t(result.replaced ? "characters.import_replaced" : "characters.imported", { name: result.name });
  if (final.lorebook_id && !result.lorebook_id) {
    return `${who} ${t("characters.import_stored_book", { book: final.lorebook_name || "", n: result.embedded_lorebook_entries })}`;
  }
  if (result.has_embedded_lorebook && !final.lorebook_id) return `${who} ${t("characters.import_left_book")}`;
  return who;
}

/** A card with a lorebook of its own that is not in the library yet: ask in the page, as
 * SillyTavern does, whether to import that book and link it to the character (or import it
 * when the person chose "always"). */
export async function offerCardLorebook(character, { quiet = false } = {}) {
  if (!character.has_embedded_lorebook || character.lorebook_id) return character;
  if (!(await wantsCardBook(character))) return character;
  return importCardLorebook(character, { quiet });
}

/** Store the card's embedded lorebook as a library lorebook linked to the character. */
export async function importCardLorebook(character, { quiet = false } = {}) {
  try {
    const updated = await api.post(`/characters/${character.id}/lorebook/import`);
    if (!quiet) toast(t("characters.book_imported", { name: updated.lorebook_name || "" }));
    return updated;
  } catch (error) {
    reportError(error);
    return character;
  }
}

function card(c, onChanged) {
  const avatar = c.avatar_url
    ? h("img", { class: "avatar big", src: c.avatar_url, alt: "", loading: "lazy" })
    : h("span", { class: "avatar big letter", "aria-hidden": "true", text: [...(c.name || "?")][0] });
  return h("li", { class: "card", "data-id": c.id },
    h("a", { href: `#/characters/${c.id}`, class: "card-link" },
      avatar,
      h("span", { translate: "no", class: "card-name", text: c.name }),
      h("span", { class: "card-sub", translate: "no", text: (c.tags || []).slice(0, 4).join(" · ") || c.creator || "" })),
    h("div", { class: "card-actions" },
      favoriteStar(c, onChanged),
      h("button", { type: "button", class: "small", text: t("characters.chat"), "aria-label": t("characters.chat_with", { name: c.name }), onClick: () => startChat(c.id) })));
}

/** Open the newest chat of a character, or start one. */
export async function startChat(characterId) {
  const chats = await api.get(`/chats?character_id=${encodeURIComponent(characterId)}`);
  const chat = chats.length ? chats[0] : await api.post("/chats", { character_id: characterId });
  if (!chats.length) markNewChat(chat.id);
  location.hash = `#/chat/${chat.id}`;
}

export async function render(root) {
  const search = h("input", { type: "search", placeholder: t("characters.search"), "aria-label": t("characters.search") });
  const picker = h("input", { type: "file", accept: ACCEPT, multiple: true, hidden: true, id: "card-file" });
  const grid = h("ul", { class: "cards" });
  const filters = filterBar(() => draw());
  const drop = h("div", { class: "dropzone", tabindex: "0", role: "button", "aria-label": t("characters.drop") },
    h("span", { text: t("characters.drop") }));
  mount(root,
    h("div", { class: "page-head" },
      h("h1", { text: t("nav.characters") }),
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", id: "import-card", text: t("common.import"), onClick: () => picker.click() }),
        h("a", { class: "button", href: "#/characters/new", text: t("characters.new") }))),
    search, filters, drop, picker, grid);

  let all = [];
  function draw() {
    const q = search.value.trim().toLocaleLowerCase();
    const found = q ? all.filter((c) => `${c.name} ${(c.tags || []).join(" ")} ${c.creator || ""}`.toLocaleLowerCase().includes(q)) : all;
    const shown = found.filter(filters.matches);
    const none = all.length && filters.active() ? "characters.none_filtered" : "characters.none";
    mount(grid, shown.length ? shown.map((c) => card(c, draw)) : h("li", { class: "empty", text: t(none) }));
  }
  const reload = async () => {
    all = await api.get("/characters");
    filters.update(all);
    draw();
  };
  search.addEventListener("input", draw);
  picker.addEventListener("change", async () => {
    await importCards([...picker.files]);
    picker.value = "";
    reload();
  });
  drop.addEventListener("click", () => picker.click());
  drop.addEventListener("keydown", (e) => (e.key === "Enter" || e.key === " ") && picker.click());
  for (const name of ["dragenter", "dragover"]) {
    root.addEventListener(name, (e) => {
      e.preventDefault();
      drop.classList.add("over");
    });
  }
  root.addEventListener("dragleave", () => drop.classList.remove("over"));
  root.addEventListener("drop", async (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    await importCards([...e.dataTransfer.files]);
    reload();
  });
  await reload();
}
