// Accounts: who the page acts for. Without accounts (one person on this machine) there is
// nothing to show; with them, a login form until the server knows who this is, then the
// account's name and a logout button in the header.

import { api, setSession } from "./api.js";
import { h, mount } from "./dom.js";
import { icon } from "./icons.js";
import { explain } from "./errors.js";
import { t } from "./i18n.js";

let current = null; // /api/me's answer

/** Who the page acts for (/api/me's answer): `mode`, and with accounts `name` and `admin`. */
export const me = () => current;

/** Take a new session's CSRF token (after a password change the server starts one). */
export function renewSession(answer) {
  current = { ...current, ...answer };
  setSession(current.csrf);
}

/** Make sure someone is logged in (showing the login form until then); resolves with /api/me. */
export async function ensureSession() {
  try {
    current = await api.get("/me");
  } catch (error) {
    if (error.status !== 401) throw error;
    current = await loginForm();
  }
  setSession(current.csrf, () => location.reload());
  renderAccount();
  return current;
}

function renderAccount() {
  document.getElementById("account")?.remove();
  if (!current || current.mode !== "accounts") return;
  // the account's name as its person wrote it, not a word of the page
  // (a phone shows the name alone, and logout as an icon: the header holds no more)
  const words = (text) => (text ? h("span", { class: "account-words", text }) : null);
  const said = t("account.signed_in", { name: "{name}" }).split("{name}")
    .flatMap((piece, i) => (i ? [h("span", { translate: "no", text: current.name }), words(piece)] : [words(piece)]));
  const chip = h("span", { id: "account", class: "account" },
    h("span", { class: "account-name", title: current.name }, said),
    h("button", { type: "button", id: "logout", "aria-label": t("account.logout"), title: t("account.logout"), onClick: logout },
      icon("logout"), h("span", { class: "account-words", text: t("account.logout") })),
  );
  document.querySelector(".topbar .lang").before(chip);
}

/** Re-draw the header's account part (after a language change). */
export function refreshAccount() {
  renderAccount();
}

async function logout() {
  await api.post("/logout");
  location.hash = "#/characters";
  location.reload();
}

function loginForm() {
  const view = document.getElementById("view");
  document.body.classList.add("logged-out");
  return new Promise((resolve) => {
    const name = h("input", { id: "login-name", name: "username", autocomplete: "username", required: true });
    const password = h("input", { id: "login-password", name: "password", type: "password", autocomplete: "current-password", required: true });
    const message = h("p", { class: "error", role: "alert", id: "login-error" });
    const form = h("form", { class: "login", id: "login-form" },
      h("h1", { text: t("login.title") }),
      h("label", { for: "login-name", text: t("login.name") }), name,
      h("label", { for: "login-password", text: t("login.password") }), password,
      message,
      h("button", { type: "submit", class: "primary", text: t("login.submit") }),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      message.textContent = "";
      try {
        const me = await api.post("/login", { name: name.value, password: password.value });
        document.body.classList.remove("logged-out");
        resolve(me);
      } catch (error) {
        // a disabled account is told so (only once its password was right)
        const plain = error.status === 401 && error.detail?.code !== "account_disabled";
        message.textContent = plain ? t("login.failed") : explain(error);
      }
    });
    mount(view, form);
    name.focus();
  });
}
