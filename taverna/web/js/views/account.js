// My account: what my library stores and the generations I started this hour, against the
// limits an admin set; change my password (the current one first).

import { api } from "../api.js";
import { h, mount, phrase, toast } from "../dom.js";
import { explain } from "../errors.js";
import { t } from "../i18n.js";
import { renewSession } from "../session.js";
import { size, usage } from "./accounts.js";

export async function render(root) {
  let mine;
  try {
    mine = await api.get("/me/account");
  } catch (error) {
    // without accounts there is nobody to manage: say so in the page's words
    mount(root, h("p", { class: "muted", role: "status", text: error.status === 404 ? t("account.single_user") : explain(error) }));
    return null;
  }
  const old = h("input", { type: "password", id: "my-old-password", autocomplete: "current-password", required: true });
  const fresh = h("input", { type: "password", id: "my-new-password", autocomplete: "new-password", minlength: 8, required: true });
  const again = h("input", { type: "password", id: "my-new-password-again", autocomplete: "new-password", minlength: 8, required: true });
  const message = h("p", { class: "error", role: "alert", id: "my-password-error" });
  const form = h("form", { class: "editor panel", id: "my-password-form" },
    h("h2", { text: t("account.change_password") }),
    h("label", { class: "field", for: "my-old-password" }, h("span", { text: t("account.old_password") }), old),
    h("label", { class: "field", for: "my-new-password" }, h("span", { text: t("accounts.new_password") }), fresh),
    h("label", { class: "field", for: "my-new-password-again" }, h("span", { text: t("account.new_password_again") }), again),
    message,
    h("button", { type: "submit", class: "primary", text: t("account.change_password") }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    message.textContent = "";
    if (fresh.value !== again.value) {
      message.textContent = t("account.passwords_differ");
      return;
    }
    try {
      renewSession(await api.put("/me/password", { old_password: old.value, password: fresh.value }));
    } catch (error) {
      message.textContent = explain(error);
      return;
    }
    form.reset();
    toast(t("account.password_changed"));
  });
  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.my_account") })),
    h("section", { class: "panel", id: "my-usage" },
      h("h2", {}, h("span", { translate: "no", text: mine.name }), mine.admin ? h("span", { class: "badge", text: t("accounts.admin") }) : null),
      h("p", { id: "my-storage" }, h("span", { class: "strong", text: t("accounts.storage") }), " ", usage(mine.used_bytes, mine.storage_bytes, size)),
      h("p", { id: "my-generations" }, h("span", { class: "strong", text: t("accounts.generations") }), " ", usage(mine.generations_last_hour, mine.generations_per_hour)),
      h("p", { class: "muted" }, phrase("account.limits_help", { gen: "/gen", genraw: "/genraw" }, ["gen", "genraw"]))),
    form);
  return null;
}
