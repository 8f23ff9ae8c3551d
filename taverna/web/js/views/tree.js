// The tree view: the chat's forks drawn as a graph, its branches and checkpoints; pick any
// run of messages to go there. The server sends runs between forks (not every message), so
// a chat of thousands of messages draws in as many rows as it has forks.

import { api } from "../api.js";
import { h, iconButton, mount, openDrawer, toast } from "../dom.js";
import { t } from "../i18n.js";
import { branchLabel } from "../labels.js";

// px per run: the graph's lines are drawn on this grid. A phone's row is taller: its marks
// (branches, checkpoints) wrap under the run's range instead of running past the edge.
const ROWS = { wide: 64, narrow: 124 };
const LANE = 14; // px per lane (a fork's side way)
const DOT = 20; // px from a row's top to its dot

/** Open the tree of chat `chatId`; `onPick(chat)` gets the chat after it changed here,
 * or null when the chat had changed elsewhere (a stale revision: the tree closes). */
export async function openTree(chatId, revision, onPick) {
  const body = h("div", { class: "inspector-body" }, h("p", { class: "muted", text: t("inspector.loading") }));
  const panel = openDrawer({ id: "tree", title: t("tree.title"), closeId: "close-tree", onStale: () => onPick(null) }, body);

  /** Send a move and hand its chat on; the tree closes. */
  async function go(request, told = null) {
    const chat = await panel.write(request);
    if (!chat) return;
    panel.remove();
    onPick(chat);
    if (told) toast(told);
  }

  let hereDepth = null; // where the path ends, for the run that holds it

  async function render() {
    const [graph, checkpoints] = await Promise.all([api.get(`/chats/${chatId}/graph`), api.get(`/chats/${chatId}/checkpoints`)]);
    hereDepth = graph.here ? graph.here.depth : null;
    const depthOf = new Map();
    for (const s of graph.segments) for (const c of s.checkpoints) depthOf.set(c.id, c.depth);
    mount(body,
      h("h3", { text: t("tree.checkpoints") }),
      checkpoints.length
        ? h("ul", { class: "checkpoints" }, checkpoints.map((c) => h("li", { class: "checkpoint-row" },
          h("button", {
            type: "button",
            class: "link",
            "aria-label": t("tree.checkpoint_open", { name: c.name }),
            onClick: () => go(() => api.post(`/chats/${chatId}/checkpoints/${c.id}/open`, { revision }), t("tree.checkpoint_opened", { name: c.name })),
          },
          h("span", { class: "strong", translate: "no", text: `⚑ ${c.name}` }),
          h("span", { class: "muted", text: t("tree.checkpoint_at", { n: depthOf.get(c.id) ?? "?" }) })),
          iconButton(t("tree.checkpoint_delete", { name: c.name }), "trash", async () => {
            if (!confirm(t("tree.checkpoint_confirm", { name: c.name }))) return;
            const chat = await panel.write(() => api.del(`/chats/${chatId}/checkpoints/${c.id}?revision=${revision}`));
            if (!chat) return;
            revision = chat.revision;
            onPick(chat);
            await render();
          }, { class: "danger" }))))
        : h("p", { class: "muted", text: t("tree.no_checkpoints") }),
      h("h3", { text: t("tree.forks") }),
      h("p", { class: "muted", id: "tree-summary", text: t("tree.summary", { messages: graph.messages, runs: graph.segments.length, here: graph.here ? graph.here.depth : "—" }) }),
      drawGraph(graph.segments, hereDepth, (path, told) => go(() => api.post(`/chats/${chatId}${path}`, { revision }), told)));
    body.querySelector(".graph-row.here")?.scrollIntoView({ block: "center" });
  }

  await render();
}

/** Rows of runs in the server's order (each run's side ways before the way it goes on),
 * and beside them one SVG of lines: a run's dot sits in its lane; a line goes from the
 * dot of the run it forks from out to its own lane, then down to it. `hereDepth`: where
 * the path ends; `move(path, told)` posts a move (a path under the chat's), closing the tree. */
function drawGraph(segments, hereDepth, move) {
  const narrow = window.matchMedia("(max-width: 720px)").matches;
  const ROW = narrow ? ROWS.narrow : ROWS.wide;
  const cap = narrow ? 5 : 10;
  const laneOf = (s) => Math.min(s.lane, cap);
  const lanes = Math.max(0, ...segments.map(laneOf)) + 1;
  const gutter = lanes * LANE + 8;
  const x = (s) => 8 + laneOf(s) * LANE;
  const svg = graphLines(segments, ROW, x, gutter);
  const rows = segments.map((s) => {
    const range = s.first.depth === s.last.depth ? `#${s.first.depth}` : `#${s.first.depth}–#${s.last.depth}`;
    const who = s.first.name || t(`tree.role_${s.first.role}`);
    const jump = h("button", {
      type: "button",
      class: "link graph-jump",
      "aria-current": s.here ? "true" : null,
      "aria-label": t("tree.go_run", { range, n: s.count }),
      onClick: () => move(`/messages/${s.last.id}/show`),
    },
    h("span", { class: "strong", text: range }),
    h("span", { class: "muted", text: t("tree.run_count", { n: s.count }) }));
    const marks = [
      s.here ? h("span", { class: "badge here", text: t("tree.here", { n: hereDepth ?? s.last.depth }) }) : null,
      ...s.branches.map((b) => h("button", {
        type: "button",
        class: `badge branch${b.active ? " active" : ""}`,
        title: t("tree.branch_switch", { name: b.name }),
        "aria-label": t("tree.branch_switch", { name: b.name }),
        translate: b.name === "main" ? null : "no",
        text: `⎇ ${branchLabel(b.name)}`,
        onClick: () => move(`/branches/${b.id}/switch`),
      })),
      ...s.checkpoints.map((c) => h("button", {
        type: "button",
        class: "badge checkpoint",
        title: t("tree.checkpoint_open", { name: c.name }),
        translate: "no",
        text: `⚑ ${c.name}`,
        onClick: () => move(`/checkpoints/${c.id}/open`, t("tree.checkpoint_opened", { name: c.name })),
      })),
      s.unused ? h("span", { class: "badge muted", title: t("tree.unused_note"), text: t("tree.unused", { n: s.unused }) }) : null,
    ];
    return h("li", { class: `graph-row${s.on_path ? " on-path" : ""}${s.here ? " here" : ""}`, "data-id": s.id, style: `height: ${ROW}px` },
      h("div", { class: "graph-line" }, jump, marks),
      h("div", { class: "muted clip graph-text" },
        s.first.name ? h("span", { translate: "no", text: s.first.name }) : who, ": ",
        h("span", { translate: "no", text: s.first.text || "…" })));
  });
  return h("div", { class: "graph", style: `--gutter: ${gutter}px` }, svg, h("ol", { class: "graph-rows" }, rows));
}

/** The graph's lines as one SVG: a dot per run in its lane, a line from the run it forks
 * from. `x(run)` is a run's lane in px, `ROW` the px per run. */
function graphLines(segments, ROW, x, gutter) {
  const rowOf = new Map(segments.map((s, i) => [s.id, i]));
  const svgNs = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNs, "svg");
  svg.setAttribute("class", "graph-lines");
  svg.setAttribute("width", String(gutter));
  svg.setAttribute("height", String(segments.length * ROW));
  svg.setAttribute("aria-hidden", "true");
  const add = (tag, attrs) => {
    const el = document.createElementNS(svgNs, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    svg.append(el);
  };
  const byId = new Map(segments.map((s) => [s.id, s]));
  segments.forEach((s, i) => {
    const parent = s.parent && byId.get(s.parent);
    if (!parent) return;
    const x0 = x(parent);
    const y0 = rowOf.get(parent.id) * ROW + DOT;
    const x1 = x(s);
    const y1 = i * ROW + DOT;
    const bend = y0 + ROW / 2;
    const d = x0 === x1 ? `M${x0} ${y0} L${x1} ${y1}` : `M${x0} ${y0} C${x0} ${bend} ${x1} ${y0} ${x1} ${bend} L${x1} ${y1}`;
    add("path", { d, class: s.on_path ? "on-path" : "" });
  });
  segments.forEach((s, i) => {
    add("circle", { cx: x(s), cy: i * ROW + DOT, r: s.here ? 6 : 4, class: `${s.on_path ? "on-path" : ""}${s.here ? " here" : ""}` });
  });
  return svg;
}
