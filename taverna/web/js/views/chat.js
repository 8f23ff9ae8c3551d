// The chat view: a window of the active path, paged by cursor as the person scrolls,
// streaming, and every per-message action. One store holds the messages by id in path order;
// every server answer goes through `apply`, which merges it into the store and redraws the
// messages it changed (by id), nothing else. The parts (views/chat/) each own a piece of the
// page; they call one another through `chat`, the verbs this view gathers from them.

import { api, firstStart, takeNewChat } from "../api.js";
import { h, mount } from "../dom.js";
import { t } from "../i18n.js";
import { appearance } from "./chat/appearance.js";
import { composer } from "./chat/composer.js";
import { draftBox } from "./chat/drafts.js";
import { generation } from "./chat/generation.js";
import { groupBar } from "./chat/group_bar.js";
import { chatHeader } from "./chat/header.js";
import { messageActions } from "./chat/message_actions.js";
import { messageList } from "./chat/message_list.js";
import { quickBar } from "./chat/quick_bar.js";
import { regexConsent } from "./chat/regex_consent.js";
import { chatServer } from "./chat/server.js";
import { chatStore } from "./chat/store.js";
import { takeJump } from "./search.js";

/** Render the chat with id `params.id` into `root`; returns a cleanup function. */
export async function render(root, params) {
  const store = chatStore();
  const { state } = store;
  const chat = { id: params.id, url: `/chats/${encodeURIComponent(params.id)}`, labels: store.labels };
  const parts = build(store, chat);
  const { header, group, consent, list, drafts, quick, writer, looks } = parts;
  mount(root, h("section", { class: "chat", "aria-label": t("chat.title") },
    header.element, group.element, consent.element, looks.element,
    h("div", { class: "messages-pane" }, list.element, list.rail),
    writer.notice, writer.localNotice, drafts.element, writer.element));

  store.update();
  await chat.load();
  const jump = takeJump(params.id);
  if (jump) await chat.showHit(jump);
  await quick.load();
  looks.load();
  writer.turn.load();
  consent.ask();
  // SillyTavern's order: the app starting, a new chat, then the chat being opened.
  quick.runTriggered(...(firstStart() ? ["startup"] : []), ...(takeNewChat(params.id) ? ["new_chat"] : []), "chat_change");
  // The notice takes room from the list: keep its end in sight.
  api.get("/connections").then((found) => list.keepingEnd(() => writer.showConnections(found))).catch(() => {});
  return () => {
    state.closed = true;
    // The chat's drawers belong to it: leaving the chat closes them.
    for (const id of ["tree", "inspector", "chat-settings", "chat-search"]) document.getElementById(id)?.remove();
    group.stop();
    looks.stop();
    list.disconnect();
    if (state.closeStream) state.closeStream();
  };
}

/** Make the parts and gather into `chat` the verbs they call on one another. */
function build(store, chat) {
  const { state } = store;
  const server = chatServer(store, chat);
  const list = messageList(store, chat);
  const group = groupBar(store, chat);
  const quick = quickBar(store, chat);
  const drafts = draftBox(store, chat);
  const writer = composer(store, chat, quick.element);
  const run = generation(store, chat, list);
  const header = chatHeader(store, chat);
  const consent = regexConsent(store, chat);
  const looks = appearance(store, chat);

  /** Take the chat's own facts from a server answer (its messages are merged apart). */
  function takeFacts(answer) {
    const { messages: _messages, window, ...facts } = answer;
    state.chat = facts;
    state.total = window.total;
    header.showFacts(facts);
    store.update();
    writer.turn.soon(); // the path or the persona changed: so did the next prompt's total
    if (facts.group_id && state.group?.id !== facts.group_id) group.load();
  }

  Object.assign(chat, server, messageActions(store, chat), {
    composer: writer,
    takeFacts,
    apply: list.apply,
    showHit: list.showHit,
    redrawHeld: list.redrawHeld,
    loadContextLine: list.loadContextLine,
    loadSummaryMarks: list.loadSummaryMarks,
    loadDrafts: drafts.load,
    loadQuickReplies: quick.load,
    runScript: quick.runScript,
    followUp: quick.followUp,
    runTriggered: quick.runTriggered,
    runAutomations: quick.runAutomations,
    drawMembers: group.draw,
    startRound: group.startRound,
    followRound: group.followRound,
    start: run.start,
    generate: run.generate,
    attach: run.attach,
    placeStreamItem: run.placeStreamItem,
  });
  return { header, group, consent, list, drafts, quick, writer, looks };
}
