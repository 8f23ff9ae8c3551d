// A file's field path (data.extensions.depth_prompt.depth) said in plain words ("the
// character note's depth"), for import warnings: the path itself stays a fold away.

import { has, t } from "./i18n.js";

/** A path's names without the wrappers ("data", "extensions") and list positions. */
function names(path) {
  return String(path || "")
    .replace(/\[\d+\]/g, "")
    .split(".")
    .filter((part) => part && !/^\d+$/.test(part) && part !== "data" && part !== "extensions");
}

/** The plain words for `path`: the page's own label of that field (data.extensions.depth_prompt.depth
 * is the editor's "Character's note depth"), from the most of its last names the catalogue
 * knows; null when none. */
export function fieldWords(path) {
  const parts = names(path);
  for (let n = parts.length; n > 0; n--) {
    const key = `field.${parts.slice(-n).join("_")}`;
    if (has(key)) return t(key);
  }
  return null;
}
