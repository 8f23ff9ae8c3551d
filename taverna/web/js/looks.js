// The person's looks over the whole page, as SillyTavern applies a theme: the background
// picture, the theme's colours and the custom CSS, global and, while a chat is open, that
// chat's own over them. The server has already cleaned the CSS (no imports, no pictures but
// the library's and data: ones); it goes into a <style> as text, never as markup, and the
// page's Content-Security-Policy forbids any load from elsewhere besides.

import { api } from "./api.js";
import { h } from "./dom.js";

const layers = { global: null, chat: null };
let coloured = []; // the page's colour variables the theme set

/** A picture URL as a CSS `url("...")` (the server gives only library and data: pictures). */
function cssUrl(url) {
  return `url("${url.replace(/["\\\n\r]/g, (c) => encodeURIComponent(c))}")`;
}

function styleElement(id) {
  let style = document.getElementById(id);
  if (!style) {
    style = h("style", { id });
    document.head.append(style);
  }
  return style;
}

/** Apply both layers: the chat's background and CSS over the global ones. */
function draw() {
  const global = layers.global || {};
  const chat = layers.chat || {};
  if (!document.getElementById("looks-sheet")) {
    document.head.append(h("link", { id: "looks-sheet", rel: "stylesheet", href: "/css/looks.css" }));
  }
  const background = chat.background || global.background;
  document.body.classList.toggle("has-background", !!background);
  if (background) document.body.style.setProperty("--page-background", cssUrl(background));
  else document.body.style.removeProperty("--page-background");
  const root = document.documentElement.style;
  const colours = global.colours || {};
  for (const name of coloured) if (!(name in colours)) root.removeProperty(name);
  for (const [name, value] of Object.entries(colours)) root.setProperty(name, value);
  coloured = Object.keys(colours);
  // Custom CSS last in <head>, so it wins over the page's own rules as in SillyTavern.
  const globalCss = styleElement("custom-css");
  const chatCss = styleElement("chat-custom-css");
  globalCss.textContent = global.custom_css || "";
  chatCss.textContent = chat.custom_css || "";
  document.head.append(globalCss, chatCss);
}

/** Take the global looks (as `/api/looks` answers) and apply them. */
export function showGlobalLooks(looks) {
  layers.global = looks;
  draw();
}

/** Read the global looks and apply them; a failure leaves the page as it is. */
export async function loadGlobalLooks() {
  try {
    showGlobalLooks(await api.get("/looks"));
  } catch {
    // not logged in yet, or the server is older: the page's own looks
  }
}

/** Apply a chat's own looks (as `/api/chats/{id}/looks` answers); null: none. */
export function showChatLooks(looks) {
  layers.chat = looks;
  draw();
}
