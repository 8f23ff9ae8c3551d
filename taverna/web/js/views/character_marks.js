// Favourites and tags in the character list: a star on each card, and filters above the
// list (favourites only, one or more tags), kept in this browser.

import { api } from "../api.js";
import { h, mount, toast } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";

const KEPT = "taverna.character-filter";

/** The filter: `{ favorites, tags }`, as the person last left it. */
function keptFilter() {
  try {
    const saved = JSON.parse(localStorage.getItem(KEPT) || "{}");
    return { favorites: saved.favorites === true, tags: Array.isArray(saved.tags) ? saved.tags : [] };
  } catch {
    return { favorites: false, tags: [] };
  }
}

/** Filters above the character list; `onChange()` when they change. `bar.matches(c)`
 * says whether a character passes, `bar.update(all)` draws the tags the library has. */
export function filterBar(onChange) {
  const filter = keptFilter();
  const bar = h("div", { class: "character-filters row", role: "group", "aria-label": t("characters.filters") });
  const keep = () => {
    localStorage.setItem(KEPT, JSON.stringify(filter));
    onChange();
  };
  let tags = [];
  const draw = () => {
    const favorites = h("button", {
      type: "button", class: "chip fav-filter", id: "favorites-only", "aria-pressed": String(filter.favorites),
      onClick: () => { filter.favorites = !filter.favorites; draw(); keep(); },
    }, h("span", { "aria-hidden": "true", text: "★ " }), t("characters.favorites_only"));
    const chips = tags.map((tag) => h("button", {
      type: "button", class: "chip tag-filter", translate: "no", "aria-pressed": String(filter.tags.includes(tag)),
      "data-tag": tag, title: t("characters.filter_tag", { tag }), text: `#${tag}`,
      onClick: () => {
        filter.tags = filter.tags.includes(tag) ? filter.tags.filter((x) => x !== tag) : [...filter.tags, tag];
        draw();
        keep();
      },
    }));
    mount(bar, favorites, chips);
  };
  bar.update = (all) => {
    const counts = new Map();
    for (const c of all) for (const tag of c.tags || []) counts.set(tag, (counts.get(tag) || 0) + 1);
    tags = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || a.localeCompare(b));
    // a tag no character has any more filters nothing out
    filter.tags = filter.tags.filter((tag) => counts.has(tag));
    draw();
  };
  bar.matches = (c) => (!filter.favorites || c.favorite) && filter.tags.every((tag) => (c.tags || []).includes(tag));
  bar.active = () => filter.favorites || filter.tags.length > 0;
  draw();
  return bar;
}

/** A card's star: marks the character as a favourite or not, stored in its card. */
export function favoriteStar(c, onChanged) {
  const star = h("button", { type: "button", class: `icon star${c.favorite ? " on" : ""}`, "aria-pressed": String(!!c.favorite) });
  const label = () => {
    const words = t(c.favorite ? "characters.unfavorite" : "characters.favorite", { name: c.name });
    star.setAttribute("aria-label", words);
    star.title = words;
    star.textContent = c.favorite ? "★" : "☆";
  };
  label();
  star.addEventListener("click", async () => {
    try {
      const saved = await api.patch(`/characters/${c.id}/marks`, { favorite: !c.favorite });
      c.favorite = saved.favorite;
      star.classList.toggle("on", c.favorite);
      star.setAttribute("aria-pressed", String(c.favorite));
      label();
      onChanged();
    } catch (error) {
      toast(explain(error), "error");
    }
  });
  return star;
}
