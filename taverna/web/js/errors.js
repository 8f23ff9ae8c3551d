// Failures in words: what happened (from the server's own message) and what was kept.

import { ApiError } from "./api.js";
import { h, toast } from "./dom.js";
import { causeWords, has, language, t, valueWords } from "./i18n.js";

/** The server's own words for a failure, in the person's language: its code (with its
 * params) through the catalog (server.*); the English message where the page reads English
 * or the code is not in the catalog. */
function serverWords(error, detail, fileNamed = false) {
  const code = detail.code;
  const params = { ...valueWords(detail.params || {}), file: detail.file || "", field: detail.field || "" };
  const key = code && `server.${code}`;
  // English readers get the server's own sentence: it says more than a code's.
  if (language() !== "en" && key && has(key)) return tidy(t(key, params));
  // the file is named once: not again when the caller's sentence names it already
  const where = [fileNamed ? null : detail.file, detail.field].filter(Boolean).join(", ");
  return where ? `${error.message} (${where})` : error.message;
}

// A place the server did not name leaves "(field )" behind: drop it.
const tidy = (text) => text.replace(/\s*[（(](field|字段)?\s*[)）]/g, "");

/** The server's words for `code` with `params` in the person's language (server.<code> in
 * the catalog); null when the catalog does not know the code (the caller shows the English). */
export function serverText(code, params = {}) {
  const key = code && `server.${code}`;
  return key && has(key) ? tidy(t(key, { file: "", field: "", ...valueWords(params) })) : null;
}

/** Why a failed check (a connection test) failed, from the server's answer: the model API's
 * failure kind, else the code of the error that stopped it, else its English message. */
export function explainOutcome({ message = "", cause = null, code = null, params = {} }) {
  if (cause) return failureCause(cause, message);
  const key = code && `server.${code}`;
  if (language() !== "en" && key && has(key)) return tidy(t(key, valueWords(params)));
  return message;
}

/** What went wrong, as a sentence a person can act on; `fileNamed` when the caller names
 * the file itself (the server's file is then not said again). */
export function explain(error, { fileNamed = false } = {}) {
  if (!(error instanceof ApiError)) return t("error.unexpected", { message: error?.message || String(error) });
  const detail = error.detail && typeof error.detail === "object" ? error.detail : {};
  const message = serverWords(error, detail, fileNamed);
  if (error.status === 0) return t("error.network");
  if (error.status === 409 && (!detail.code || detail.code === "stale_revision" || detail.code === "conflict")) return t("error.conflict");
  if (error.status === 409) return t("error.refused", { message });
  if (error.status === 413) return t("error.too_large", { message });
  if (error.status === 404) return t("error.not_found", { message });
  if (error.status === 400 || error.status === 422) return t("error.refused", { message });
  if (error.status === 502) return t("error.model", { message });
  if (error.status >= 500) return t("error.server", { status: error.status, message });
  return t("error.refused", { message });
}

/** The server's English words for a failure whose library cause the page said in its own
 * language: folded away, marked as the original, for a person who wants them (null when
 * nothing was put in other words). */
export function rawDetail(error) {
  const detail = error instanceof ApiError && error.detail && typeof error.detail === "object" ? error.detail : {};
  if (!causeWords(detail.params || {})) return null;
  return h("details", { class: "raw-detail" },
    h("summary", { text: t("error.raw_detail") }),
    h("span", { translate: "no", lang: "en", text: error.message }));
}

/** Tell of a failure in a toast: what happened, then what was kept (`kept`, a sentence). */
export function reportError(error, kept = t("kept.page")) {
  const said = `${explain(error)} ${kept}`.trim();
  const raw = rawDetail(error);
  toast(raw ? [said, raw] : said, "error");
}

// The causes a model API failure is sorted into by the server (its ErrorKind).
const CAUSES = ["auth", "not_found", "rate_limited", "context_length", "bad_request", "server", "timeout", "network", "interrupted", "protocol", "aborted", "prompt_too_big", "empty_reply"];
// Causes a retry cannot mend: the page offers no Retry for them.
const FINAL_CAUSES = ["prompt_too_big"];

/** Why a generation failed, in the person's language: from the server's `cause`, else the
 * server's own message (a failure that is not the model API's, such as a save that failed). */
export function failureCause(cause, message = "") {
  if (CAUSES.includes(cause)) return t(`error.cause.${cause}`);
  return message ? t("error.cause.other") : t("error.generation");
}

/** Whether trying a failed generation again can succeed (a prompt too big cannot). */
export const retryable = (cause) => !FINAL_CAUSES.includes(cause);
