// Whether a regex script's Find can be read: SillyTavern's patterns are JavaScript's
// (/pattern/flags, or a bare pattern), so the page's own RegExp is the judge. A pattern
// it cannot read changes nothing, in SillyTavern as here; the editor says so.

/** The reason `find` is no regex (the browser's words), or null when it is one (or empty). */
export function regexProblem(find) {
  const text = String(find ?? "");
  if (!text) return null;
  const slashed = text.match(/^\/([\s\S]+)\/([A-Za-z]*)$/);
  try {
    if (slashed) new RegExp(slashed[1], slashed[2]);
    else new RegExp(text);
    return null;
  } catch (error) {
    return String(error?.message || error);
  }
}

/** The scripts (on) whose Find cannot be read. */
export const unreadable = (scripts) => scripts.filter((s) => !s.disabled && regexProblem(s.findRegex));

/** Which "When" the test box starts on: what the script is for. */
export const startingUse = (script) => (script.markdownOnly ? "display" : script.promptOnly ? "prompt" : "store");
