// The looks page: the background every chat shows (chosen among uploaded and imported ones),
// the custom CSS over the whole page, SillyTavern themes, and each character's expression
// sprites. A chat can have its own background and CSS in its settings.

import { api } from "../api.js";
import { formWith, h, iconButton, mount, toast } from "../dom.js";
import { t } from "../i18n.js";
import { showGlobalLooks } from "../looks.js";
import { expressionName } from "./chat/appearance.js";

/** A file picker that hands the files chosen to `take` (then forgets them). */
function picker(accept, take, { multiple = false, id } = {}) {
  const input = h("input", { type: "file", accept, multiple, hidden: true, id });
  input.addEventListener("change", async () => {
    const chosen = [...input.files];
    input.value = "";
    if (chosen.length) await take(chosen);
  });
  return input;
}

const PICTURES = "image/png,image/jpeg,image/gif,image/webp";

export async function render(root) {
  const backgrounds = h("ul", { class: "backgrounds", id: "backgrounds" });
  const css = h("textarea", { class: "custom-css", id: "custom-css-text", spellcheck: "false", "aria-label": t("looks.css") });
  const removed = h("p", { class: "css-removed", id: "css-removed", hidden: true });
  const themes = h("select", { id: "theme-list", "aria-label": t("looks.themes") });
  const sprites = h("section", { class: "panel", id: "sprites-section" });
  let looks = null;

  const uploadBackgrounds = picker(PICTURES, async (files) => {
    for (const file of files) await api.upload("/looks/backgrounds", formWith({ file }));
    toast(t("looks.backgrounds_added", { n: files.length }));
    await reload();
  }, { multiple: true, id: "background-file" });
  const uploadTheme = picker("application/json,.json", async ([file]) => {
    take(await api.upload("/looks/themes", formWith({ file })));
    toast(t("common.saved"));
  }, { id: "theme-file" });

  function take(answer) {
    looks = answer;
    showGlobalLooks(answer);
    drawBackgrounds();
    css.value = answer.custom_css;
    removed.hidden = !answer.removed.length;
    mount(removed, t("looks.css_removed", { items: answer.removed.join("  ") }));
    mount(themes, h("option", { value: "", text: t("looks.no_theme") }),
      answer.themes.map((name) => h("option", { value: name, translate: "no", text: name, selected: name === answer.theme ? "selected" : null })));
  }

  async function choose(url) {
    take(await api.put("/looks", { background: url }));
  }

  function drawBackgrounds() {
    const none = h("li", { class: looks.background ? "" : "chosen" },
      h("div", { class: "bg-none", text: t("looks.no_background") }),
      h("div", { class: "row" }, h("button", { type: "button", class: "small", text: t("looks.use"), onClick: () => choose(null) })));
    mount(backgrounds, none, looks.backgrounds.map((bg) => h("li", { class: bg.url === looks.background ? "chosen" : "", dataset: { name: bg.name } },
      h("img", { src: bg.url, alt: "", loading: "lazy" }),
      h("div", { class: "row" },
        h("span", { class: "bg-name", translate: "no", title: bg.name, text: bg.name }),
        h("button", { type: "button", class: "small", text: t("looks.use"), onClick: () => choose(bg.url) }),
        iconButton(t("looks.delete_background", { name: bg.name }), "trash", async () => {
          await api.del(`/looks/backgrounds/${bg.id}`);
          await reload();
        }, { class: "small" })))));
  }

  async function reload() {
    take(await api.get("/looks"));
  }

  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.looks") })),
    h("section", { class: "panel" },
      h("h2", { text: t("looks.background") }),
      h("p", { class: "muted", text: t("looks.background_help") }),
      backgrounds,
      h("div", { class: "row" }, h("button", { type: "button", id: "add-background", text: t("looks.add_background"), onClick: () => uploadBackgrounds.click() }), uploadBackgrounds)),
    h("section", { class: "panel" },
      h("h2", { text: t("looks.themes") }),
      h("div", { class: "row wrap" }, themes,
        h("button", { type: "button", id: "apply-theme", text: t("looks.apply_theme"), onClick: async () => {
          take(await api.put("/looks/theme", { name: themes.value }));
          toast(themes.value ? t("looks.theme_applied", { name: themes.value }) : t("common.saved"));
        } }),
        h("button", { type: "button", text: t("looks.import_theme"), onClick: () => uploadTheme.click() }), uploadTheme)),
    h("section", { class: "panel" },
      h("h2", { text: t("looks.css") }),
      h("p", { class: "muted", text: t("looks.css_help") }),
      css, removed,
      h("div", { class: "row" }, h("button", { type: "button", class: "primary", id: "save-css", text: t("common.save"), onClick: async () => {
        take(await api.put("/looks", { custom_css: css.value }));
        toast(t("common.saved"));
      } }))),
    sprites);
  await reload();
  await spriteSection(sprites);
}

/** Each character's expression sprites: pick a character, add pictures (named by their
 * expression: joy.png) or one for an expression chosen, remove one. */
async function spriteSection(root) {
  const characters = await api.get("/characters");
  const who = h("select", { id: "sprite-character", "aria-label": t("looks.sprites_of") },
    characters.map((c) => h("option", { value: c.id, translate: "no", text: c.name })));
  const grid = h("ul", { class: "sprites", id: "sprites" });
  const label = h("select", { id: "sprite-label", "aria-label": t("looks.expression") });
  const files = picker(PICTURES, async (chosen) => {
    for (const file of chosen) {
      const query = chosen.length === 1 && label.value ? `?label=${encodeURIComponent(label.value)}` : "";
      await api.upload(`/characters/${who.value}/sprites${query}`, formWith({ file }));
    }
    toast(t("looks.sprites_added", { n: chosen.length }));
    await draw();
  }, { multiple: true, id: "sprite-file" });

  async function draw() {
    if (!who.value) return mount(grid, h("li", { text: t("looks.no_characters") }));
    const found = await api.get(`/characters/${who.value}/sprites`);
    const kept = label.value;
    mount(label, h("option", { value: "", text: t("looks.label_from_file") }),
      found.labels.map((name) => h("option", { value: name, text: `${expressionName(name)} (${name})` })));
    label.value = kept;
    const entries = Object.entries(found.sprites);
    mount(grid, entries.length ? entries.map(([name, url]) => h("li", { dataset: { label: name } },
      h("img", { src: url, alt: expressionName(name) }),
      h("span", { text: expressionName(name) }),
      iconButton(t("looks.remove_sprite", { name: expressionName(name) }), "trash", async () => {
        await api.del(`/characters/${who.value}/sprites/${encodeURIComponent(name)}`);
        await draw();
      }, { class: "small" }))) : h("li", { class: "muted", text: t("looks.no_sprites") }));
  }
  who.addEventListener("change", draw);
  mount(root, h("h2", { text: t("looks.sprites") }),
    h("p", { class: "muted", text: t("looks.sprites_help") }),
    h("div", { class: "row wrap" }, who, label,
      h("button", { type: "button", id: "add-sprites", text: t("looks.add_sprites"), onClick: () => files.click() }), files),
    grid);
  await draw();
}
