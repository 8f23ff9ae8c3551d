// The writes a person makes at one message: pick a candidate, edit (and send again), hide,
// attach or remove a picture, delete, branch and set a checkpoint there.

import { api } from "../../api.js";
import { toast } from "../../dom.js";
import { t } from "../../i18n.js";
import { deleteQuestion } from "./questions.js";

/** The verbs a message's buttons call; each states the revision the page holds now. */
export function messageActions(store, chat) {
  const { state } = store;
  const at = (m) => `${chat.url}/messages/${m.id}`;
  const revision = () => state.chat.revision;

  /** Show candidate `index` of `m` (and the path that follows it). */
  const choose = (m, index) => chat.write(() => api.post(`${at(m)}/select`, { index, revision: revision() }));

  async function remove(m) {
    if (!confirm(deleteQuestion(m))) return;
    await chat.write(() => api.del(`${at(m)}?revision=${revision()}`));
  }

  async function branchFrom(m) {
    const name = prompt(t("chat.branch_name"), t("chat.branch_default", { n: (state.chat.branches || []).length + 1 }));
    if (name === null) return;
    if (await chat.write(() => api.post(`${chat.url}/branches`, { node_id: m.id, name, revision: revision() }))) {
      toast(t("chat.branched", { name }));
    }
  }

  async function checkpointAt(m) {
    const known = await api.get(`${chat.url}/checkpoints`);
    const name = prompt(t("chat.checkpoint_name"), t("chat.checkpoint_default", { n: known.length + 1 }));
    if (name === null) return;
    if (await chat.write(() => api.post(`${chat.url}/checkpoints`, { node_id: m.id, name, revision: revision() }))) {
      toast(t("chat.checkpointed", { name }));
    }
  }

  return {
    choose,
    select: (m, step) => choose(m, m.candidate_index + step),
    setHidden: (m, hidden) => chat.write(() => api.post(`${at(m)}/hidden`, { hidden, revision: revision() })),
    setPicture: (m, image) => chat.write(() => api.put(`${at(m)}/image`, { image, revision: revision() })),
    saveEdit: (m, content) => chat.write(() => api.patch(at(m), { content, revision: revision() }), t("kept.edit")),
    // the edited message takes the place of `m`: the path is read again from its parent
    resend: (m, content) => chat.start(() => api.post(`${at(m)}/resend`, { content, revision: revision() }), t("kept.edit"), "", { editedBelow: m.parent_id }),
    remove,
    branchFrom,
    checkpointAt,
  };
}
