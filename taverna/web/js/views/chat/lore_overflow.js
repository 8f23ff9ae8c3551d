// After a turn: the lorebook budget ran out and the person asked to be told (the World Info
// settings' overflow alert), so the chat says so, not only the prompt inspector.

import { api } from "../../api.js";
import { h, toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { overflowAlertOn } from "../world_info.js";

/** How many lorebook entries the budget left out, by a prompt's trace. */
export const loreCut = (trace) => (trace || []).filter((row) => row.outcome === "budget").length;

/** Reply `nodeId` of the chat at `chatUrl` is saved: when its prompt (as it was sent, a
 * stored record) had entries cut by the lorebook budget and the alert is on, a toast. */
export async function tellLoreOverflow(chatUrl, nodeId) {
  if (!nodeId || !(await overflowAlertOn())) return;
  let cut = 0;
  try {
    cut = loreCut((await api.get(`${chatUrl}/messages/${encodeURIComponent(nodeId)}/prompt`)).prompt.ledger?.trace);
  } catch {
    return; // a notice is a hint: none rather than a wrong one
  }
  if (cut) toast(h("span", { class: "lore-overflow-toast" }, t("inspector.lore_overflow", { n: cut })), "warning");
}
