// A small markdown renderer that is safe by construction: the whole text is
// HTML-escaped first, then a fixed set of tags is added around escaped text.
// No tag, attribute or script from a card, a lorebook or a model can survive.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escape every character that means something in HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const SLOT = "\u0000";

function inline(text) {
  // `text` is already escaped; code spans are protected from the other rules.
  const codes = [];
  let out = text.replace(/`([^`\n]+)`/g, (_, code) => {
    codes.push(`<code>${code}</code>`);
    return `${SLOT}${codes.length - 1}${SLOT}`;
  });
  // Links first (only http/https; the URL may hold &amp; but no other entity, so no quote).
  // The link is set aside like a code span, so no later rule reaches into its URL.
  out = out.replace(/\[([^\]\n]+)\]\((https?:\/\/(?:[^\s)&]|&amp;)+)\)/g, (_, label, href) => {
    codes.push(`<a href="${href}" target="_blank" rel="noopener noreferrer nofollow">${label}</a>`);
    return `${SLOT}${codes.length - 1}${SLOT}`;
  });
  out = out
    .replace(/\*\*\*([^*\n]+)\*\*\*/g, "<strong><em>$1</em></strong>")
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/__([^_\n]+)__/g, "<strong>$1</strong>")
    .replace(/\*([^*\n]+)\*/g, "<em>$1</em>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,!?:;])/g, "$1<em>$2</em>")
    .replace(/~~([^~\n]+)~~/g, "<del>$1</del>")
    // Dialogue in straight or CJK quotes is tinted, as role-play readers expect.
    .replace(/(&quot;)([^\n]*?)(&quot;)/g, '<q class="speech">$1$2$3</q>')
    .replace(/(“)([^”\n]*)(”)/g, '<q class="speech">$1$2$3</q>')
    .replace(/(「)([^」\n]*)(」)/g, '<q class="speech">$1$2$3</q>');
  return out.replace(new RegExp(`${SLOT}(\\d+)${SLOT}`, "g"), (_, i) => codes[Number(i)]);
}

// With `html`, the text's own tags (and whole <style> blocks and comments) outside code
// are set aside before escaping and put back at the end, as SillyTavern's message
// formatting lets them through; the caller must then sanitize the result (js/rich.js).
const CODE_OR_TAG =
  /(```[\s\S]*?(?:```|$)|`[^`\n]+`)|(<style\b[\s\S]*?<\/style\s*>|<!--[\s\S]*?-->|<\/?[A-Za-z][\w:-]*(?:\s(?:[^<>"']|"[^"]*"|'[^']*')*)?\/?>)/gi;
const TAG_SLOT = new RegExp(`${SLOT}H(\\d+)${SLOT}`, "g");
const TAGS_ONLY = new RegExp(`^\\s*(?:${SLOT}H\\d+${SLOT}\\s*)+$`);

/** Render markdown text to an HTML string. Without `html` it holds only the renderer's own
 * tags; with it, also the text's own tags, unsanitized. */
export function renderMarkdown(source, { html: keepTags = false } = {}) {
  let raw = String(source ?? "").replace(/\r\n?/g, "\n").replaceAll(SLOT, "");
  const tags = [];
  if (keepTags) {
    raw = raw.replace(CODE_OR_TAG, (whole, code, tag) => {
      if (code) return whole;
      tags.push(tag);
      return `${SLOT}H${tags.length - 1}${SLOT}`;
    });
  }
  const out = renderEscaped(escapeHtml(raw));
  return keepTags ? out.replace(TAG_SLOT, (_, i) => tags[Number(i)]) : out;
}

function renderEscaped(escaped) {
  const blocks = [];
  // Fenced code blocks first, so nothing inside them is formatted.
  // The fence's language word (```python) becomes a class the page labels the block with.
  const text = escaped.replace(/```([^\n`]*)\n([\s\S]*?)(?:```|$)/g, (_, info, code) => {
    const lang = info.trim().match(/^[A-Za-z0-9_+#-]{1,24}$/)?.[0];
    blocks.push(`<pre><code${lang ? ` class="lang-${lang}"` : ""}>${code.replace(/\n$/, "")}</code></pre>`);
    return `\n${SLOT}B${blocks.length - 1}${SLOT}\n`;
  });
  const html = [];
  let para = [];
  let list = null;
  const flushPara = () => {
    if (para.length) html.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
  };
  const flushList = () => {
    if (list) html.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${list.tag}>`);
    list = null;
  };
  let quote = [];
  const flushQuote = () => {
    if (quote.length) html.push(`<blockquote>${quote.map(inline).join("<br>")}</blockquote>`);
    quote = [];
  };
  for (const line of text.split("\n")) {
    const block = line.match(new RegExp(`^${SLOT}B(\\d+)${SLOT}$`));
    const heading = line.match(/^(#{1,3})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    const quoted = line.match(/^&gt;\s?(.*)$/);
    if (!quoted) flushQuote();
    if (!(bullet || numbered)) flushList();
    if (block) {
      flushPara();
      html.push(blocks[Number(block[1])]);
    } else if (!line.trim()) {
      flushPara();
    } else if (TAGS_ONLY.test(line)) {
      // A line of tags only (an HTML block's opening or closing) is no paragraph.
      flushPara();
      html.push(line.trim());
    } else if (heading) {
      flushPara();
      const level = heading[1].length + 2;
      html.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (/^(\s*[-*_]){3,}\s*$/.test(line)) {
      flushPara();
      html.push("<hr>");
    } else if (bullet || numbered) {
      flushPara();
      const tag = bullet ? "ul" : "ol";
      if (list && list.tag !== tag) flushList();
      list = list || { tag, items: [] };
      list.items.push((bullet || numbered)[1]);
    } else if (quoted) {
      flushPara();
      quote.push(quoted[1]);
    } else {
      para.push(line);
    }
  }
  flushQuote();
  flushList();
  flushPara();
  return html.join("");
}
