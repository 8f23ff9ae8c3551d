// Plugins: the Python packages installed under taverna's entry points, each with what it
// may touch (its grants; none unless it declares them) and the hooks it implements.

import { api } from "../api.js";
import { h, mount } from "../dom.js";
import { t } from "../i18n.js";

function pluginItem(plugin, allGrants) {
  const grants = allGrants.map((grant) => {
    const held = plugin.grants.includes(grant);
    return h("li", { class: held ? "grant held" : "grant", "data-grant": grant, "data-held": held ? "1" : "0" },
      h("span", { class: "badge", text: held ? t("plugins.granted") : t("plugins.not_granted") }),
      " ", t(`plugins.grant.${grant}`));
  });
  return h("li", { class: "plugin", "data-plugin": plugin.name },
    h("h2", {}, plugin.name, plugin.version ? h("span", { class: "muted", text: ` ${plugin.version}` }) : null),
    plugin.description ? h("p", { text: plugin.description }) : null,
    h("p", { class: "muted", text: t("plugins.from", { module: plugin.module, distribution: plugin.distribution || "—" }) }),
    plugin.error
      ? h("p", { class: "error", role: "alert", text: t("plugins.not_loaded", { error: plugin.error }) })
      : h("div", {},
        h("h3", { text: t("plugins.grants") }),
        plugin.grants.length ? null : h("p", { class: "muted", text: t("plugins.no_grants") }),
        h("ul", { class: "grants" }, grants),
        h("p", { class: "muted", text: t("plugins.hooks", { hooks: plugin.hooks.join(", ") || "—" }) })));
}

export async function render(root) {
  const found = await api.get("/plugins");
  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("nav.plugins") })),
    h("p", { class: "muted", text: t("plugins.about") }),
    found.plugins.length
      ? h("ul", { class: "list plugins" }, found.plugins.map((p) => pluginItem(p, found.grants)))
      : h("p", { class: "muted", id: "no-plugins", text: t("plugins.none") }));
}
