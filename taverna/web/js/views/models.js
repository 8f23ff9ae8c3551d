// The model manager: a stronger model for this machine, downloaded from Hugging Face (the
// recommended ones or any GGUF file by repository and file) or pulled into Ollama, each
// with its progress; a finished download is a connection of its own.

import { api } from "../api.js";
import { h, mount } from "../dom.js";
import { explain, serverText } from "../errors.js";
import { t } from "../i18n.js";

const POLL_MS = 400;

const gb = (bytes) => (bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(1)} GB` : `${Math.round(bytes / (1 << 20))} MB`);

/** A job's place on the page: a bar, the bytes, and how it ended. */
function jobView(job) {
  const bar = h("progress", { max: 1, value: 0 });
  const words = h("p", { class: "muted job-words", role: "status" });
  const box = h("div", { class: "model-job", "data-job": job.id, "data-state": job.state }, bar, words);
  const show = (found) => {
    box.dataset.state = found.state;
    if (found.total) {
      bar.max = found.total;
      bar.value = found.done;
    } else bar.removeAttribute("value");
    if (found.state === "running") {
      const amount = found.total ? t("models.progress", { done: gb(found.done), total: gb(found.total), percent: Math.floor((100 * found.done) / found.total) }) : t("models.starting");
      words.textContent = found.status ? `${found.status} · ${amount}` : amount;
    } else if (found.state === "done") {
      bar.value = bar.max = 1;
      mount(words, found.kind === "hub"
        ? t("models.done_hub", { connection: found.connection })
        : t("models.done_pull", { model: found.label, connection: found.connection }), " ",
      h("a", { href: "#/connections", text: t("models.to_connections") }));
    } else {
      bar.remove();
      words.className = "error job-words";
      words.setAttribute("role", "alert");
      words.textContent = t("models.failed", { message: serverText(found.code, found.params) || found.error });
    }
  };
  show(job);
  return { box, show };
}

/** Follow a job until it ends; returns a function that stops following. */
function follow(job, view, onEnd) {
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try {
      const found = await api.get(`/models/jobs/${job.id}`);
      view.show(found);
      if (found.state !== "running") return onEnd?.(found);
    } catch (error) {
      view.show({ ...job, state: "failed", error: explain(error), code: null });
      return;
    }
    setTimeout(tick, POLL_MS);
  };
  setTimeout(tick, POLL_MS);
  return () => { stopped = true; };
}

function recommendedItem(model, start) {
  const slot = h("div", { class: "job-slot" });
  const button = h("button", { type: "button", class: "small", text: t("models.download"), onClick: () => start({ repo: model.repo, file: model.file }, slot, button) });
  if (!model.fits) button.disabled = true;
  return h("li", { class: model.suggested ? "model suggested" : "model", "data-model": model.name },
    h("div", { class: "row wrap" },
      h("strong", { translate: "no", text: model.name }),
      model.suggested ? h("span", { class: "badge", text: t("models.suggested") }) : null,
      model.fits ? null : h("span", { class: "badge muted", text: t("models.too_big", { memory: gb(model.memory_needed) }) })),
    h("div", { class: "muted clip" },
      `${gb(model.size)} · `,
      h("a", { href: model.licence_url, target: "_blank", rel: "noopener", translate: "no", text: model.licence }),
      " · ", h("span", { translate: "no", text: `${model.repo} / ${model.file}` })),
    h("div", { class: "row wrap" }, button), slot);
}

function customForm(start) {
  const repo = h("input", { name: "repo", required: true, placeholder: "owner/name-GGUF", translate: "no", autocomplete: "off" });
  const choices = h("datalist", { id: "model-files" });
  const file = h("input", { name: "file", required: true, placeholder: "model-Q4_K_M.gguf", translate: "no", autocomplete: "off", list: "model-files" });
  const listed = h("p", { class: "muted", id: "model-files-said", role: "status" });
  // the repository's GGUF files, offered as the file's choices once a repository is named
  repo.addEventListener("change", async () => {
    const named = repo.value.trim();
    mount(choices);
    listed.textContent = "";
    if (!/^[^/\s]+\/[^/\s]+$/.test(named)) return;
    try {
      const files = await api.get(`/models/files?repo=${encodeURIComponent(named)}`);
      mount(choices, files.map((f) => h("option", { value: f.file, text: f.size ? gb(f.size) : "" })));
      listed.textContent = t("models.files_found", { count: files.length });
      if (files.length === 1 && !file.value) file.value = files[0].file;
    } catch (error) {
      listed.textContent = explain(error);
    }
  });
  const slot = h("div", { class: "job-slot" });
  const button = h("button", { type: "submit", text: t("models.download") });
  const form = h("form", { id: "model-custom", class: "stack" },
    h("h2", { text: t("models.custom") }),
    h("label", {}, t("models.repo"), repo),
    h("label", {}, t("models.file"), file), choices, listed,
    h("div", { class: "row" }, button), slot);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    start({ repo: repo.value.trim(), file: file.value.trim() }, slot, button);
  });
  return form;
}

function ollamaForm(connections, startPull) {
  const ollamas = connections.filter((c) => c.api === "ollama");
  if (!ollamas.length) {
    return h("section", { id: "model-ollama" }, h("h2", { text: t("models.ollama") }),
      h("p", { class: "muted" }, t("models.ollama_none"), " ", h("a", { href: "#/connections", text: t("models.to_connections") })));
  }
  const select = h("select", { name: "connection" }, ollamas.map((c) => h("option", { value: c.name, translate: "no", text: c.name })));
  const model = h("input", { name: "model", required: true, placeholder: "qwen2.5:1.5b", translate: "no", autocomplete: "off" });
  const slot = h("div", { class: "job-slot" });
  const button = h("button", { type: "submit", text: t("models.pull") });
  const form = h("form", { id: "model-ollama", class: "stack" },
    h("h2", { text: t("models.ollama") }),
    h("label", {}, t("models.ollama_connection"), select),
    h("label", {}, t("models.ollama_model"), model),
    h("div", { class: "row" }, button), slot);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    startPull({ connection: select.value, model: model.value.trim() }, slot, button);
  });
  return form;
}

function machineLine(found) {
  const m = found.machine;
  const where = found.offload === "cpu" ? t("models.on_cpu") : t("models.on_gpu");
  return h("p", { id: "model-machine", class: "muted", text: t("models.machine", { memory: gb(m.memory), cores: m.cores, where }) });
}

export async function render(root) {
  const stops = [];
  let found;
  try {
    found = await api.get("/models");
  } catch (error) {
    mount(root, h("div", { class: "page-head" }, h("h1", { text: t("models.title") })),
      h("p", { class: "error", role: "alert", text: explain(error) }));
    return null;
  }
  const connections = await api.get("/connections").catch(() => []);
  const run = (path, body, slot, button) => {
    button.disabled = true;
    api.post(path, body).then((job) => {
      const view = jobView(job);
      mount(slot, view.box);
      stops.push(follow(job, view, () => { button.disabled = false; }));
    }).catch((error) => {
      button.disabled = false;
      mount(slot, h("p", { class: "error", role: "alert", text: explain(error) }));
    });
  };
  const start = (body, slot, button) => run("/models/downloads", body, slot, button);
  const startPull = (body, slot, button) => run("/models/pulls", body, slot, button);
  const running = h("div", { id: "model-running" });
  for (const job of await api.get("/models/jobs").catch(() => [])) {
    if (job.state !== "running") continue;
    const view = jobView(job);
    running.append(h("p", { translate: "no", text: job.label }), view.box);
    stops.push(follow(job, view));
  }
  mount(root,
    h("div", { class: "page-head" }, h("h1", { text: t("models.title") })),
    h("p", { text: t("models.about") }),
    machineLine(found),
    running,
    h("section", { id: "model-recommended" },
      h("h2", { text: t("models.recommended") }),
      h("ul", { class: "list models" }, found.recommended.map((m) => recommendedItem(m, start)))),
    customForm(start),
    ollamaForm(connections, startPull),
    found.downloaded.length
      ? h("section", { id: "model-downloaded" }, h("h2", { text: t("models.downloaded") }),
        h("ul", { class: "list" }, found.downloaded.map((name) => h("li", { translate: "no", text: name }))))
      : null);
  return () => stops.forEach((stop) => stop());
}
