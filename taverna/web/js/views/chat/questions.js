// The chat's questions before a change, saying what the change touches.

import { t } from "../../i18n.js";

/** Before deleting `m`: when it is one candidate among several, that only this candidate
 * goes (the others stay); else that the message goes. Both can be restored. */
export function deleteQuestion(m) {
  if ((m.candidate_count || 1) > 1) {
    return t("chat.confirm_delete_candidate", { n: m.candidate_index, total: m.candidate_count });
  }
  return t("chat.confirm_delete");
}
