// Messages as their authors made them: markdown with the text's own HTML and CSS, as
// SillyTavern's message formatting shows them, made safe by DOMPurify's allow-list
// (vendored, see docs/architecture/dependencies.md). What comes out holds no script, event
// handler, form, frame or outside load, images only from this server or data URIs, and its
// <style> rules reach only into the message they came with.

import DOMPurify from "./vendor/purify.es.js";
import { renderMarkdown } from "./markdown.js";

const FORBID_TAGS = [
  "form", "input", "button", "select", "option", "textarea", "fieldset", "iframe", "frame",
  "object", "embed", "link", "meta", "base", "audio", "video", "source", "track", "picture",
  "dialog", "template", "slot", "portal", "math",
];
const FORBID_ATTR = ["action", "formaction", "srcset", "ping", "background", "poster", "autofocus", "tabindex"];
const ID_PREFIX = "user-content-";

const sanitizer = DOMPurify();
sanitizer.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute?.("src") && !localUrl(node.getAttribute("src"), true)) node.removeAttribute("src");
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  if (node.hasAttribute?.("href") && node.tagName !== "A") node.removeAttribute("href");
  if (node.style?.length) tameDeclarations(node.style);
});

/** A URL the page may load: this server's own (the library's pictures), or a data URI for an image. */
function localUrl(value, image) {
  const text = String(value || "").trim();
  if (/^data:/i.test(text)) return image && /^data:image\/(png|jpe?g|gif|webp|avif|bmp)[;,]/i.test(text);
  try {
    const url = new URL(text, location.href);
    return url.origin === location.origin;
  } catch {
    return false;
  }
}

/** Drop what loads from outside or escapes the message; a fixed box stays inside it. */
function tameDeclarations(style) {
  for (const name of [...style]) {
    const value = style.getPropertyValue(name);
    const urls = [...value.matchAll(/url\(\s*(['"]?)(.*?)\1\s*\)/gi)].map((m) => m[2]);
    if (/url\(|image-set\(|expression\(/i.test(value) && !(urls.length && urls.every((u) => localUrl(u, true)))) {
      style.removeProperty(name);
    } else if (name === "position" && /fixed|sticky/i.test(value)) {
      style.setProperty("position", "absolute");
    }
  }
}

/** Split a selector list at its top-level commas (not those inside :is(...) or [a="x,y"]). */
function splitSelectors(text) {
  const parts = [];
  let depth = 0, quote = "", start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

/** One selector made to match only inside `scope`: html, body and :root become the scope itself. */
function scopeSelector(selector, scope) {
  const own = selector.replace(/#(-?[A-Za-z_][\w-]*)/g, `#${ID_PREFIX}$1`);
  const rest = own.replace(/^\s*(?:(?:html|:root|body)\b\s*)+/i, "").trim();
  if (/^[~+]/.test(rest)) return null; // the page's elements beside the message
  if (rest !== own.trim()) return rest ? `${scope} ${rest}` : scope;
  return `${scope} ${own}`;
}

/** The text of a style sheet's rules, each reaching only into `scope`. */
function scopeRules(rules, scope) {
  const out = [];
  for (const rule of rules) {
    if (rule instanceof CSSStyleRule) {
      tameDeclarations(rule.style);
      const selectors = splitSelectors(rule.selectorText).map((s) => scopeSelector(s, scope)).filter(Boolean);
      if (selectors.length) out.push(`${selectors.join(", ")} { ${rule.style.cssText} }`);
    } else if (rule instanceof CSSMediaRule) {
      out.push(`@media ${rule.conditionText} { ${scopeRules(rule.cssRules, scope)} }`);
    } else if (rule instanceof CSSSupportsRule) {
      out.push(`@supports ${rule.conditionText} { ${scopeRules(rule.cssRules, scope)} }`);
    } else if (rule instanceof CSSKeyframesRule) {
      for (const frame of rule.cssRules) tameDeclarations(frame.style);
      out.push(rule.cssText);
    }
    // @import, @font-face, @page, @layer and the rest are dropped: they load from outside or reach the page.
  }
  return out.join("\n");
}

/** A <style> block's text made to reach only into `scope` ("" when it does not parse). */
export function scopeCss(text, scope) {
  const sheet = new CSSStyleSheet();
  try {
    sheet.replaceSync(String(text).replace(/@import[^;]*;?/gi, ""));
  } catch {
    return "";
  }
  return scopeRules(sheet.cssRules, scope);
}

let counter = 0;

/** Render `source` (markdown with HTML and CSS) into `target`, safely, its styles scoped to it. */
export function renderRich(target, source) {
  const html = renderMarkdown(source, { html: true });
  const fragment = sanitizer.sanitize(html, {
    FORBID_TAGS,
    FORBID_ATTR,
    FORCE_BODY: true,
    RETURN_DOM_FRAGMENT: true,
    SANITIZE_NAMED_PROPS: true,
    ALLOW_DATA_ATTR: false,
  });
  const styles = fragment.querySelectorAll("style");
  if (styles.length) {
    if (!target.dataset.scope) target.dataset.scope = `m${++counter}`;
    const scope = `[data-scope="${target.dataset.scope}"]`;
    for (const style of styles) style.textContent = scopeCss(style.textContent, scope);
  }
  target.replaceChildren(fragment);
}
