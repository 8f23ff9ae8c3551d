// The page shell: navigation, language switch, and a hash router over the views.

import { h, mount } from "./dom.js";
import { explain, reportError } from "./errors.js";
import { icon } from "./icons.js";
import { initI18n, languages, language, setLanguage, t } from "./i18n.js";
import { loadGlobalLooks } from "./looks.js";
import { ensureSession, me, refreshAccount } from "./session.js";

const ROUTES = [
  [/^#\/characters\/new$/, () => import("./views/character_edit.js"), () => ({ id: null })],
  [/^#\/characters\/([^/]+)$/, () => import("./views/character_edit.js"), (m) => ({ id: m[1] })],
  [/^#\/characters$/, () => import("./views/characters.js"), () => ({})],
  [/^#\/chat\/([^/]+)$/, () => import("./views/chat.js"), (m) => ({ id: m[1] })],
  [/^#\/chats$/, () => import("./views/chats.js"), () => ({})],
  [/^#\/groups$/, () => import("./views/groups.js"), () => ({})],
  [/^#\/personas$/, () => import("./views/personas.js"), () => ({})],
  [/^#\/lorebooks\/([^/]+)$/, () => import("./views/lorebook_edit.js"), (m) => ({ id: m[1] })],
  [/^#\/lorebooks$/, () => import("./views/lorebooks.js"), () => ({})],
  [/^#\/presets\/([^/]+)$/, () => import("./views/preset_edit.js"), (m) => ({ id: m[1] })],
  [/^#\/presets$/, () => import("./views/presets.js"), () => ({ kind: "chat" })],
  [/^#\/templates$/, () => import("./views/presets.js"), () => ({ kind: "templates" })],
  [/^#\/quick-replies$/, () => import("./views/quick_replies.js"), () => ({})],
  [/^#\/regex$/, () => import("./views/regex.js"), () => ({})],
  [/^#\/connections$/, () => import("./views/connections.js"), () => ({})],
  [/^#\/models$/, () => import("./views/models.js"), () => ({})],
  [/^#\/plugins$/, () => import("./views/plugins.js"), () => ({})],
  [/^#\/import$/, () => import("./views/import.js"), () => ({})],
  [/^#\/looks$/, () => import("./views/looks.js"), () => ({})],
  [/^#\/account$/, () => import("./views/account.js"), () => ({})],
  [/^#\/accounts$/, () => import("./views/accounts.js"), () => ({})],
];

const NAV = [
  ["#/characters", "nav.characters"],
  ["#/chats", "nav.chats"],
  ["#/groups", "nav.groups"],
  ["#/personas", "nav.personas"],
  ["#/lorebooks", "nav.lorebooks"],
  ["#/presets", "nav.presets"],
  ["#/templates", "nav.templates"],
  ["#/quick-replies", "nav.quick_replies"],
  ["#/regex", "nav.regex"],
  ["#/connections", "nav.connections"],
  ["#/plugins", "nav.plugins"],
  ["#/looks", "nav.looks"],
  ["#/import", "nav.import"],
];

/** The navigation's links: with accounts, the person's own page, and the admin's. */
function links() {
  const who = me();
  if (!who || who.mode !== "accounts") return NAV;
  return [...NAV, ["#/account", "nav.my_account"], ...(who.admin ? [["#/accounts", "nav.accounts"]] : [])];
}

let cleanup = null;

// The colour theme: the system's (default), or light or dark as the person chose, kept in
// this browser and applied before the first view is drawn.
const THEMES = ["system", "light", "dark"];

function applyTheme(theme) {
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function themeChoice() {
  const saved = localStorage.getItem("taverna.theme") || "system";
  const select = h("select", { id: "theme-select" }, THEMES.map((name) =>
    h("option", { value: name, selected: name === saved ? "selected" : null, text: t(`nav.theme_${name}`) })));
  select.addEventListener("change", () => {
    localStorage.setItem("taverna.theme", select.value);
    applyTheme(select.value);
  });
  return h("label", { class: "theme", for: "theme-select" }, h("span", { text: t("nav.theme") }), select);
}

function renderNav() {
  const nav = document.getElementById("nav");
  const here = location.hash || "#/characters";
  mount(
    nav,
    h("ul", {}, links().map(([href, key]) =>
      h("li", {}, h("a", { href, "aria-current": here === href || here.startsWith(`${href}/`) ? "page" : null, text: t(key) })),
    )),
    themeChoice(),
  );
  const toggle = document.getElementById("menu-toggle");
  toggle.setAttribute("aria-label", t("nav.menu"));
  toggle.title = t("nav.menu");
  document.getElementById("lang-label").textContent = t("nav.language");
  const select = document.getElementById("lang-select");
  mount(select, Object.entries(languages()).map(([code, name]) =>
    // Each language is named in itself, whatever the page's language.
    h("option", { value: code, selected: code === language() ? "selected" : null, translate: "no", lang: code, text: name }),
  ));
  select.value = language();
}

async function route() {
  const hash = location.hash || "#/characters";
  document.body.classList.remove("nav-open");
  document.getElementById("menu-toggle").setAttribute("aria-expanded", "false");
  renderNav();
  if (typeof cleanup === "function") cleanup();
  cleanup = null;
  const view = document.getElementById("view");
  for (const [pattern, loader, params] of ROUTES) {
    const match = hash.match(pattern);
    if (!match) continue;
    const module = await loader();
    if ((location.hash || "#/characters") !== hash) return; // a newer route is drawing
    mount(view);
    view.dataset.view = pattern.source;
    try {
      cleanup = await module.render(view, params(match));
    } catch (error) {
      mount(view, h("p", { class: "error", role: "alert", text: t("error.load", { message: explain(error) }) }));
    }
    return;
  }
  location.hash = "#/characters";
}

async function start() {
  applyTheme(localStorage.getItem("taverna.theme"));
  await initI18n();
  document.getElementById("lang-select").addEventListener("change", async (event) => {
    await setLanguage(event.target.value);
    // The login form is drawn again in the new language (the page starts over).
    if (document.body.classList.contains("logged-out")) return location.reload();
    refreshAccount();
    route();
  });
  document.getElementById("menu-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("nav-open");
    document.getElementById("menu-toggle").setAttribute("aria-expanded", String(open));
  });
  document.getElementById("menu-toggle").replaceChildren(icon("menu"));
  // A tap on a link closes the phone menu, also on the page already open (no hash change).
  document.getElementById("nav").addEventListener("click", (event) => {
    if (!event.target.closest("a")) return;
    document.body.classList.remove("nav-open");
    document.getElementById("menu-toggle").setAttribute("aria-expanded", "false");
  });
  window.addEventListener("hashchange", route);
  // A failure no view handled itself: said in words; the page keeps what it shows.
  window.addEventListener("unhandledrejection", (event) => {
    reportError(event.reason);
  });
  renderNav(); // the language list, also for the login form
  await ensureSession();
  loadGlobalLooks();
  route();
}

start();
