// The message catalog: every string the page shows comes from here.

const LANGUAGES = { en: "English", "zh-CN": "简体中文" };
// Only the active language's catalogue is read (each is complete: a test sees to it); a key
// missing from it shows itself.
let catalog = {};
let current = "en";

async function load(lang) {
  const response = await fetch(`/i18n/${lang}.json`);
  if (!response.ok) throw new Error(`no catalog for ${lang}`);
  return response.json();
}

/** Pick the saved language, else the browser's, and load its catalog. Only a person's own
 * choice is saved: a guess from the browser follows the browser. */
export async function initI18n() {
  const saved = localStorage.getItem("taverna.lang");
  const guess = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh-CN" : "en";
  await useLanguage(saved && LANGUAGES[saved] ? saved : guess);
}

async function useLanguage(lang) {
  catalog = await load(lang);
  current = lang;
  document.documentElement.lang = lang;
}

/** The person chose `lang`: load it and remember the choice. */
export async function setLanguage(lang) {
  await useLanguage(lang);
  localStorage.setItem("taverna.lang", lang);
}

export const language = () => current;
export const languages = () => LANGUAGES;

/** Whether the catalog has `key`. */
export const has = (key) => key in catalog;

// A count's words by the language's plural rules, as ICU writes them:
// "{n, plural, one {# message} other {# messages}}" (# is the number). Chinese needs none.
const PLURAL = /\{(\w+), plural, ((?:[a-z]+ \{[^{}]*\}\s*)+)\}/g;

function plural(text, params) {
  return text.replace(PLURAL, (whole, name, forms) => {
    if (!(name in params)) return whole;
    const n = Number(params[name]);
    const by = Object.fromEntries([...forms.matchAll(/([a-z]+) \{([^{}]*)\}/g)].map((f) => [f[1], f[2]]));
    const form = by[new Intl.PluralRules(current).select(n)] ?? by.other ?? "";
    return form.replaceAll("#", String(params[name]));
  });
}

/** Look up `key` and fill `{name}` placeholders (and plural forms). A missing key shows
 * itself, so it gets noticed. */
export function t(key, params = {}) {
  const text = plural(catalog[key] ?? key, params);
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

// What the server writes for a value by its kind ("a list", "null"...), in a sentence's params.
const VALUE_WORDS = new Set(["null", "true", "false", "a boolean", "a number", "a string", "a list", "an object", "an empty list", "an empty object"]);
// Params that name a place or a value of the file as written, never a kind of value.
const AS_WRITTEN = new Set(["file", "field", "name", "key"]);

// Params that carry a library's own English words (a JSON parser's, a zip reader's...).
const LIBRARY_WORDS = ["exc", "error", "msg", "reason"];

/** The sentence for a library failure's cause (param `cause`, cause.* in the catalog) in
 * the person's language; null in English, where the library's own words say more. */
export function causeWords(params = {}) {
  const key = params.cause && `cause.${params.cause}`;
  return key && current !== "en" && has(key) ? t(key, params) : null;
}

/** `params` with each value the server names by its kind said in the person's language
 * (value.* in the catalog), a library's own words by their cause; every other value as it
 * came. */
export function valueWords(params = {}) {
  const cause = causeWords(params);
  return Object.fromEntries(Object.entries(params).map(([name, value]) => {
    if (cause && LIBRARY_WORDS.includes(name)) return [name, cause];
    const key = `value.${String(value).replace(/ /g, "_")}`;
    return [name, !AS_WRITTEN.has(name) && VALUE_WORDS.has(value) && has(key) ? t(key) : value];
  }));
}
