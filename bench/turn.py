"""Turn benchmark: what a person waits for, through a real `taverna serve` over HTTP.

A temporary data folder gets a realistic library, written through the product's own
services before any server starts (no network, fixed seed): the sample character, two
lorebooks of 10,000 entries each (1-3 keys from a vocabulary of a few thousand made-up
words, some secondary keys, 200-500 characters of content, a few constant entries,
varied positions, depths and orders), one bound to every chat as the chat's lorebook and
one bound to nothing, and chats of 1,000, 10,000 and 100,000 messages (plus 20,000 for
the browser), built through the store's bulk import. Their text mentions lorebook keys
now and then; the last reply has 3 candidates.

A stub model server (OpenAI Chat Completions, short replies, no delay) runs in this
process and is the default connection; `taverna serve` runs as a subprocess and is
restarted before each chat size, so every size starts with a cold process. Per size:

- start to ready: from launching `taverna serve` until it answers (imports, opening the
  store, and preparing its most recent chats: lorebooks compiled, tokenizer loaded);
- prompt preview (`GET /api/chats/ID/prompt`): the first request after the restart,
  then the warm median;
- chat open (`GET /api/chats/ID`): warm median time and the response's size;
- candidate switch through the API (`POST .../messages/ID/select`): warm median;
- time to request: from sending `POST /api/chats/ID/generate` (a user message) until
  the stub model server has received the model request, warm median over several turns,
  each sent as soon as the last one's generation has ended (the target's figure); also
  the time until the POST answered, and the median of a few more turns sent a second
  apart, as a person's are (the last turn's follow-ups done);
- the server's resident memory (VmRSS at rest after the measurements, VmHWM the peak).

With `--recall`, recall by meaning is on and every stored message has a vector (as if the
embedding backlog were done); the messages the measured turns add are embedded by the
server itself with the bundled model. After the turns, the same number of turns is sent
with recall turned off through the API (then on again), on the same server and chat:
the difference of the two medians is recall's cost, printed with its ratio to 30 ms.
Before the server starts, each chat's sign bits are read cold as a server reads them
(`bits_read_*_s`, beside making them from the floats: `bits_from_floats_*_s`); the
warm turns' start, counted from the first prompt built (which starts that read), says
whether they ran with the bits in memory or the database's search.

With Debian's Chromium (/usr/bin/chromium) and Playwright present, a 20,000-message chat
is opened in the page: time from navigation until the last message is visible, the DOM's
node count, and the time from a click on the last reply's candidate arrows (‹ then ›,
in turn) until the message shows the other candidate; all by the page's own clock.
Each load is in a fresh browser context, the first right after a server restart.

A series of repeats stops early once it has taken `--budget` seconds (never under 3
samples, 2 in the browser), so a slow server cannot stretch the run without end; the
counts taken are reported. Prints a table per chat size, the targets with PASS/MISS
(printed, not asserted), the load average and CPU count, then one line of JSON with
every figure.

    python bench/turn.py [--sizes 1000,10000,100000] [--repeat 15] [--turns 8]
                         [--open-repeat 5] [--switches 6] [--budget 15]
                         [--browser-messages 20000] [--browser-loads 3] [--no-browser]

Quick run: `python bench/turn.py --sizes 1000,10000 --repeat 5 --turns 3 --no-browser`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from starlette.requests import Request  # noqa: E402

from taverna.model.chat import CharacterRef, Node, NodeRole, new_id  # noqa: E402
from taverna.services.chats.editing import set_chat_lorebook  # noqa: E402
from taverna.services.chats.service import ChatService  # noqa: E402
from taverna.services.house.workspace import open_workspace, seed_samples  # noqa: E402
from taverna.services.library.active_settings import set_active  # noqa: E402
from taverna.services.library.service import LibraryKind, LibraryService  # noqa: E402
from taverna.store import NewChat  # noqa: E402
from taverna.store.repository import Store  # noqa: E402
from tests.stubs.model_server import Reply, StubServer  # noqa: E402
from tests.stubs.taverna_server import TavernaServer  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
CHARACTER = "Ione Calder"
USER = "User"
BOUND_BOOK = "Atlas of the Reach"
SPARE_BOOK = "Annals of the Deep"
CANDIDATES = 3

COMMON_TEXT = (
    "the a and of to in she he they we it was is were said looked turned toward across "
    "under above beside behind before after while then still only never always slowly "
    "quietly lantern road river bridge canal water stone light shadow door window street "
    "market harbour boat rope coat hand eyes voice night morning rain wind bell tower "
    "city quarter house room table letter map key coin ledger ferry lamp smoke glass "
    "warm cold old new long short quiet loud dark bright small heavy careful tired"
)
COMMON = COMMON_TEXT.split()


# ----------------------------------------------------------------- the library


def made_up_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct pronounceable made-up words (lorebook keys)."""
    onsets = ["b", "br", "c", "d", "dr", "f", "g", "gl", "h", "k", "l", "m", "n", "p", "qu",
              "r", "s", "sk", "st", "t", "th", "tr", "v", "w", "z"]  # fmt: skip
    vowels = ["a", "e", "i", "o", "u", "ae", "ai", "ei", "ou", "y"]
    codas = ["", "", "n", "r", "l", "s", "th", "nd", "sk", "m", "x", "rn"]
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.choice((2, 2, 3, 3, 4))
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables))
        words.add(word + rng.choice(codas))
    return sorted(words)


def prose(rng: random.Random, low: int, high: int, extra: list[str] | None = None) -> str:
    """Plain sentences of `low`-`high` characters (no markdown), with `extra` words mixed in."""
    target = rng.randint(low, high)
    words: list[str] = []
    size = 0
    pool = extra or []
    while size < target:
        word = rng.choice(pool) if pool and rng.random() < 0.12 else rng.choice(COMMON)
        words.append(word)
        size += len(word) + 1
    sentences: list[str] = []
    step = 12
    for i in range(0, len(words), step):
        part = " ".join(words[i : i + step])
        sentences.append(part[:1].upper() + part[1:] + ".")
    return " ".join(sentences)[:high]


def lorebook_json(rng: random.Random, vocabulary: list[str], entries: int) -> dict[str, Any]:
    """A SillyTavern world file of `entries` entries, shaped like real big books."""
    out: dict[str, Any] = {}
    constant_uids = set(rng.sample(range(entries), 4))
    for uid in range(entries):
        keys = rng.sample(vocabulary, rng.choice((1, 1, 2, 2, 3)))
        secondary = rng.sample(vocabulary, rng.randint(1, 2)) if rng.random() < 0.2 else []
        position = rng.choices((0, 1, 2, 3, 4), weights=(40, 30, 5, 5, 20))[0]
        constant = uid in constant_uids
        out[str(uid)] = {
            "uid": uid,
            "key": [] if constant else keys,
            "keysecondary": secondary,
            "comment": f"{keys[0].capitalize()} ({uid})",
            "content": prose(rng, 200, 500, keys),
            "constant": constant,
            "vectorized": False,
            "selective": bool(secondary),
            "selectiveLogic": rng.choice((0, 0, 0, 1, 3)) if secondary else 0,
            "addMemo": True,
            "order": rng.choice((10, 50, 100, 100, 100, 150, 200, 250)),
            "position": position,
            "disable": rng.random() < 0.02,
            "excludeRecursion": rng.random() < 0.1,
            "preventRecursion": rng.random() < 0.3,
            "delayUntilRecursion": False,
            "probability": 100 if rng.random() < 0.9 else rng.choice((25, 50, 75)),
            "useProbability": True,
            "depth": rng.randint(0, 8) if position == 4 else 4,
            "group": "",
            "groupOverride": False,
            "groupWeight": 100,
            "scanDepth": None,
            "caseSensitive": None,
            "matchWholeWords": None,
            "useGroupScoring": None,
            "automationId": "",
            "role": rng.choice((0, 1, 2)) if position == 4 else None,
            "sticky": 0,
            "cooldown": 0,
            "delay": 0,
            "displayIndex": uid,
        }
    return {"entries": out}


class Messages:
    """Distinct ~300-500-character messages, cheap to make by the hundred thousand; about
    one in five mentions one or two keys of the bound lorebook."""

    def __init__(self, rng: random.Random, keys: list[str]) -> None:
        self.rng = rng
        self.keys = keys
        self.pool = [prose(rng, 300, 480) for _ in range(1500)]
        self.count = 0

    def next(self) -> str:
        self.count += 1
        text = self.pool[self.rng.randrange(len(self.pool))]
        if self.rng.random() < 0.2:
            mentioned = " and ".join(self.rng.sample(self.keys, self.rng.randint(1, 2)))
            text = f"{text} They spoke of {mentioned}."
        return f"{text} ({self.count})"


def candidate_marker(k: int) -> str:
    return f"Candidate {k} of {CANDIDATES}"


@dataclass
class BuiltChat:
    id: str
    messages: int
    last_parent: str  # the node whose children are the last reply's candidates


def build_chat(
    store: Store, character_id: str, book_id: str, size: int, texts: Messages
) -> BuiltChat:
    """A chat of `size` path messages, alternating and ending with the character's reply,
    whose last reply has 3 candidates (the 3rd active); the bound lorebook attached."""
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(size):
        assistant = (size - 1 - i) % 2 == 0
        role = NodeRole.ASSISTANT if assistant else NodeRole.USER
        speaker = CHARACTER if assistant else USER
        if i == size - 1:
            for k in range(1, CANDIDATES + 1):
                text = f"{candidate_marker(k)}. {texts.next()}"
                nodes.append(Node(new_id(), "", parent, role, text, speaker=speaker))
        else:
            nodes.append(Node(new_id(), "", parent, role, texts.next(), speaker=speaker))
        last_parent = parent
        parent = nodes[-1].id
    new = NewChat(
        title=f"bench {size:,} messages",
        characters=(CharacterRef(CHARACTER, character_id),),
        user_name=USER,
    )
    chat = store.import_tree(new, nodes, active_leaf_id=parent)
    set_chat_lorebook(ChatService(store), chat.id, book_id, owner="", revision=chat.revision)
    assert last_parent is not None
    return BuiltChat(chat.id, size, last_parent)


RECALL_ON = {"enabled_chats": True, "insert": 3, "query": 2, "budget": 400}
RECALL_TARGET_MS = 30.0  # what recall may add to a turn (issue: long-chat memory)


def store_recall_vectors(store: Store, rng: random.Random) -> int:
    """Recall on, and a vector stored for every message as if the backlog had embedded them
    all: unit vectors drawn from a pool of 1,000 (a search costs the same whatever the
    vectors mean; embedding 100,000 messages would take hours). How many were stored."""
    import numpy as np

    from taverna.providers.embeddings import LOCAL_MODEL

    set_active(store, "extension_settings", {"vectors": RECALL_ON})
    generator = np.random.default_rng(rng.randrange(1 << 30))
    pool = generator.standard_normal((1000, 512)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    stored = 0
    while due := store.messages_due(LOCAL_MODEL, limit=5000):
        rows = [(d, pool[rng.randrange(len(pool))].tobytes()) for d in due]
        stored += store.save_message_vectors(LOCAL_MODEL, rows)
    return stored


def time_bits_read(store: Store, chat_id: str, size: int) -> dict[str, float]:
    """How long a server takes to have a chat's sign bits in memory (`ChatBits`, read
    from the bits stored with each vector), beside reading the chat's floats and making
    the bits from them (as a chat's bits were made before the bits were stored)."""
    import numpy as np

    from taverna.providers.embeddings import LOCAL_MODEL
    from taverna.services.memory.recall.chat_vectors import BITS_READ, ChatBits

    began = time.perf_counter()
    bits = ChatBits(chat_id, LOCAL_MODEL)
    bits.refresh(store)
    read = time.perf_counter() - began
    began = time.perf_counter()
    after, made = 0, 0
    while fresh := store.message_vectors(chat_id, LOCAL_MODEL, after=after, limit=BITS_READ):
        floats = np.frombuffer(b"".join(v.vector for v in fresh), dtype=np.float32)
        made += len(np.packbits(floats.reshape(len(fresh), -1) > 0, axis=1))
        after = fresh[-1].seq
    from_floats = time.perf_counter() - began
    assert made == len(bits), (made, len(bits))
    return {f"bits_read_{size}_s": read, f"bits_from_floats_{size}_s": from_floats}


def build_library(
    data: Path, sizes: list[int], browser_size: int | None, seed: int, recall: bool = False
) -> tuple[dict[int, BuiltChat], list[str], dict[str, float]]:
    """Write the library into `data` (no server running): the chats by size, the bound
    book's keys, and how long each part took. `recall`: recall by meaning on, every
    message's vector stored."""
    rng = random.Random(seed)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    ws = open_workspace(data, background_backups=False)
    try:
        seed_samples(ws.library())
        library = LibraryService(ws.store)
        card = library.find(LibraryKind.CHARACTER, CHARACTER)
        assert card is not None, "the sample character is missing"
        vocabulary = made_up_words(rng, 3000)
        book_ids: dict[str, str] = {}
        for name in (BOUND_BOOK, SPARE_BOOK):
            book = lorebook_json(rng, vocabulary, 10_000)
            raw = json.dumps(book).encode()
            book_ids[name] = library.import_bytes(raw, f"{name}.json").id
        timings["build_lorebooks_s"] = time.perf_counter() - started
        bound = library.lorebook(book_ids[BOUND_BOOK])
        keys = sorted({k for e in bound.entries for k in e.key})
        texts = Messages(rng, keys)
        chats: dict[int, BuiltChat] = {}
        for size in sorted({*sizes, *([browser_size] if browser_size else [])}):
            began = time.perf_counter()
            chats[size] = build_chat(ws.store, card.id, book_ids[BOUND_BOOK], size, texts)
            timings[f"build_chat_{size}_s"] = time.perf_counter() - began
        if recall:
            began = time.perf_counter()
            store_recall_vectors(ws.store, rng)
            timings["store_recall_vectors_s"] = time.perf_counter() - began
            for size, built in chats.items():
                timings.update(time_bits_read(ws.store, built.id, size))
    finally:
        ws.close()
    timings["build_total_s"] = time.perf_counter() - started
    return chats, keys, timings


# ------------------------------------------------------------- stub and server


class TimedStub(StubServer):
    """The stub model server, noting when each model request has arrived (perf_counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.arrived = threading.Condition()
        self.default = Reply(tokens=["The lamp", " burns", " green."])

    async def _receive(self, request: Request, check: Callable[[Any], list[str]]) -> Any:
        await request.body()  # the whole request is in (the base class reads it again, cached)
        with self.arrived:
            self.arrivals.append(time.perf_counter())
            self.arrived.notify_all()
        return await super()._receive(request, check)

    def wait_arrival(self, count: int, timeout: float = 120) -> float:
        """perf_counter of the `count`-th request (1-based), waiting for it."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.arrivals) >= count, timeout):
                raise RuntimeError("the model request never reached the stub")
            return self.arrivals[count - 1]


# ------------------------------------------------------------------ measuring


def ms(seconds: float) -> float:
    return seconds * 1000


def timed_get(client: httpx.Client, url: str) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response


def wait_task(client: httpx.Client, task_id: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.get(f"/api/tasks/{task_id}").json()["status"] == "done":
            return
        time.sleep(0.01)
    raise RuntimeError(f"generation {task_id} did not end")


def send_turn(
    client: httpx.Client, stub: TimedStub, chat_id: str, text: str
) -> tuple[float, float]:
    """Send a message and wait for its generation to end: (seconds until the model
    server received the request, seconds until the POST answered)."""
    revision = revision_of(client, chat_id)
    seen = len(stub.arrivals)
    started = time.perf_counter()
    response = client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": text, "revision": revision},
    )
    posted = time.perf_counter()
    response.raise_for_status()
    arrival = stub.wait_arrival(seen + 1)
    wait_task(client, response.json()["task"]["id"])
    return arrival - started, posted - started


def revision_of(client: httpx.Client, chat_id: str) -> int:
    """The chat's current revision, from the chat list (cheap at any chat length)."""
    for summary in client.get("/api/chats").raise_for_status().json():
        if summary["id"] == chat_id:
            return int(summary["revision"])
    raise RuntimeError(f"chat {chat_id} is not listed")


class Series:
    """Repeats of one measurement: `count` of them, or fewer (never under `minimum`) once
    `budget` seconds have gone, so a slow server cannot stretch the run without end."""

    def __init__(self, count: int, budget: float, minimum: int = 3) -> None:
        self.count = count
        self.budget = budget
        self.minimum = min(minimum, count)
        self.started = time.perf_counter()
        self.samples: list[float] = []

    def __iter__(self) -> Iterator[int]:
        i = 0
        while i < self.count:
            spent = time.perf_counter() - self.started
            if i >= self.minimum and spent > self.budget:
                return
            yield i
            i += 1

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    @property
    def median_ms(self) -> float:
        return ms(statistics.median(self.samples))


def measure_size(
    server: TavernaServer,
    stub: TimedStub,
    chat: BuiltChat,
    keys: list[str],
    args: argparse.Namespace,
    log: Callable[[str], None],
) -> dict[str, float]:
    """Restart the server, then measure one chat; figures in ms, KB and MB."""
    out: dict[str, float] = {}
    server.restart()
    out["ready_ms"] = server.ready_ms
    with httpx.Client(base_url=server.url, timeout=600) as client:
        prompt_url = f"/api/chats/{chat.id}/prompt"
        # The first request that builds a prompt starts reading the chat's sign bits
        # (recall on); turns before they are in memory search with the database.
        recall_asked = time.perf_counter()
        first, response = timed_get(client, prompt_url)
        out["prompt_first_ms"] = ms(first)
        # a sanity check: the bound book's entries take part (by key, not only the constant ones)
        trace = response.json().get("prompt", {}).get("ledger", {}).get("trace", [])
        out["lore_by_key"] = sum(
            1
            for item in trace
            if item.get("book") == BOUND_BOOK
            and item.get("outcome") == "activated"
            and item.get("reason") != "constant"
        )
        prompts = Series(args.repeat, args.budget)
        for _ in prompts:
            prompts.add(timed_get(client, prompt_url)[0])
        out["prompt_warm_ms"] = prompts.median_ms
        out["prompt_warm_n"] = len(prompts.samples)
        log(
            f"  prompt preview: first {ms(first):.0f} ms, "
            f"warm {out['prompt_warm_ms']:.0f} ms (n={len(prompts.samples)}); "
            f"{out['lore_by_key']:.0f} entries of the bound book activated by key"
        )

        opens = Series(args.open_repeat, args.budget)
        body = b""
        for _ in opens:
            elapsed, response = timed_get(client, f"/api/chats/{chat.id}")
            opens.add(elapsed)
            body = response.content
        view = json.loads(body)
        out["open_ms"] = opens.median_ms
        out["open_kb"] = len(body) / 1024
        out["open_messages_returned"] = len(view.get("messages", []))
        log(
            f"  chat open: {out['open_ms']:.0f} ms, {out['open_kb']:.0f} KB, "
            f"{out['open_messages_returned']:.0f} messages (n={len(opens.samples)})"
        )

        # The last reply's candidates through the API, as the page's arrows do: 3/3, 2/3, 3/3 ...
        revision = int(view["revision"])
        last = view["messages"][-1] if view.get("messages") else None
        if last is not None and last.get("candidate_count", 1) >= 2:
            index = int(last["candidate_index"])
            node_id = last["id"]
            switches = Series(args.switches, args.budget, minimum=2)
            for i in switches:
                target = index - 1 if i % 2 == 0 else index
                started = time.perf_counter()
                response = client.post(
                    f"/api/chats/{chat.id}/messages/{node_id}/select",
                    json={"index": target, "revision": revision},
                )
                switches.add(time.perf_counter() - started)
                changed = response.raise_for_status().json()
                revision = int(changed["revision"])
                node_id = changed["messages"][-1]["id"]
            out["switch_api_ms"] = switches.median_ms
            log(
                f"  candidate switch (API): {out['switch_api_ms']:.0f} ms (n={len(switches.samples)})"
            )

        # Turns, each waited for until its generation ended; the first warms up, uncounted.
        rng = random.Random(chat.messages)
        to_request = Series(args.turns, args.budget)
        answered: list[float] = []
        for turn in itertools.chain([-1], to_request):
            text = f"Tell me about {rng.choice(keys)} and the {rng.choice(keys)}."
            sent = time.perf_counter()
            to_model, to_answer = send_turn(client, stub, chat.id, text)
            if turn >= 0:
                to_request.add(to_model)
                answered.append(to_answer)
            else:
                out["ttr_first_ms"] = ms(to_model)
                # When the warm turns start, counted from the first prompt built: past
                # the sign bits' cold read time (`bits_read_*_s`), they are in memory.
                out["warm_turns_start_s"] = sent + to_model - recall_asked
        out["ttr_warm_ms"] = to_request.median_ms
        out["ttr_max_ms"] = ms(max(to_request.samples))
        out["ttr_n"] = len(to_request.samples)
        out["generate_post_ms"] = ms(statistics.median(answered))
        # The same, a second apart, as a person's turns are: the last turn's follow-ups
        # (its stored prompt, the backup) are done before the next message is sent.
        paced = Series(max(3, args.turns // 2), args.budget)
        for _ in paced:
            time.sleep(1.0)
            paced.add(send_turn(client, stub, chat.id, f"And what of {rng.choice(keys)}?")[0])
        out["ttr_paced_ms"] = paced.median_ms
        log(
            f"  time to request: warm {out['ttr_warm_ms']:.0f} ms "
            f"(POST answered in {out['generate_post_ms']:.0f} ms; n={len(to_request.samples)})"
        )
        if args.recall:
            # The same turns on the same server with recall turned off (then on again):
            # recall's cost on the turn path, measured under the same load.
            def recall_on(on: bool) -> None:
                client.put("/api/recall-settings", json={"enabled_chats": on}).raise_for_status()

            log(
                f"  recall on: the warm turns began {out['warm_turns_start_s']:.1f} s after the "
                "first prompt built (their sign bits are in memory if that is past the cold "
                "read, bits_read_*_s); turns in ms: "
                + ", ".join(f"{ms(x):.0f}" for x in to_request.samples)
            )
            recall_on(False)
            try:
                off = Series(args.turns, args.budget)
                for turn in itertools.chain([-1], off):
                    text = f"Tell me about {rng.choice(keys)} and the {rng.choice(keys)}."
                    to_model, _ = send_turn(client, stub, chat.id, text)
                    if turn >= 0:
                        off.add(to_model)
            finally:
                recall_on(True)
            out["ttr_warm_recall_off_ms"] = off.median_ms
            out["ttr_recall_cost_ms"] = out["ttr_warm_ms"] - off.median_ms
            log(
                f"  time to request with recall off: warm {off.median_ms:.0f} ms "
                f"(n={len(off.samples)}); recall's cost {out['ttr_recall_cost_ms']:.0f} ms "
                f"(target <= {RECALL_TARGET_MS:.0f} ms, ratio "
                f"{out['ttr_recall_cost_ms'] / RECALL_TARGET_MS:.2f})"
            )
    time.sleep(1.0)  # let the follow-ups (stored prompt, backup) settle
    out["rss_rest_mb"], out["rss_peak_mb"] = server.memory_mb()
    log(f"  server RSS: {out['rss_rest_mb']:.0f} MB at rest, {out['rss_peak_mb']:.0f} MB peak")
    return out


# ----------------------------------------------------------------- the browser

LAST_VISIBLE = """
(marker) => {
  const list = document.querySelector("ol.messages");
  if (!list) return false;
  let el = list.lastElementChild;
  while (el && !(el.classList.contains("message") && !el.classList.contains("streaming"))) {
    el = el.previousElementSibling;
  }
  if (!el || !el.textContent.includes(marker)) return false;
  const box = el.getBoundingClientRect();
  const inView = box.height > 0 && box.bottom > 0 && box.top < window.innerHeight;
  return inView ? performance.now() : false;
}
"""

CLICK_SWITCH = """
async ([button, marker]) => {
  const list = document.querySelector("ol.messages");
  let el = list.lastElementChild;
  while (el && !(el.classList.contains("message") && !el.classList.contains("streaming"))) {
    el = el.previousElementSibling;
  }
  const target = el && el.querySelector(button);
  if (!target || target.disabled) return -1;
  const shows = () => {
    let m = document.querySelector("ol.messages")?.lastElementChild;
    while (m && !(m.classList.contains("message") && !m.classList.contains("streaming"))) {
      m = m.previousElementSibling;
    }
    return !!m && m.textContent.includes(marker);
  };
  const started = performance.now();
  target.click();
  return await new Promise((resolve) => {
    const check = () => {
      if (shows()) resolve(performance.now() - started);
      else if (performance.now() - started > 300000) resolve(-2);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
}
"""


class Quiet:
    """Counts a page's requests in flight, to wait until its follow-up requests are done."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.in_flight = 0
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, _: Any) -> None:
        self.in_flight += 1

    def _ended(self, _: Any) -> None:
        self.in_flight = max(0, self.in_flight - 1)

    def wait(self, quiet_ms: int = 300, timeout: float = 120) -> None:
        """Until no request has been in flight for `quiet_ms` (or `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        calm = 0
        while calm < quiet_ms and time.monotonic() < deadline:
            self.page.wait_for_timeout(50)
            calm = calm + 50 if self.in_flight == 0 else 0


def measure_browser(
    server: TavernaServer, chat: BuiltChat, args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, float]:
    """Open the chat in Chromium (each time in a fresh context, so nothing is cached), then
    switch the last reply's candidates with its arrows. Times are the page's own clock."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    server.restart()
    url = f"{server.url}/#/chat/{chat.id}"
    active = candidate_marker(CANDIDATES)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            loads = Series(args.browser_loads, args.budget, minimum=2)
            context = None
            for i in loads:
                if context is not None:
                    context.close()
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                quiet = Quiet(page)
                page.goto(url, wait_until="commit")
                # performance.now() counts from the navigation's start
                shown = page.wait_for_function(
                    LAST_VISIBLE, arg=active, polling="raf", timeout=300_000
                )
                loads.add(float(shown.json_value()) / 1000)
                log(f"  open #{i + 1}: {ms(loads.samples[-1]):.0f} ms")
            assert context is not None
            opens = loads.samples
            out["browser_open_first_ms"] = ms(opens[0])
            out["browser_open_ms"] = ms(statistics.median(opens[1:] if len(opens) > 1 else opens))
            quiet.wait()  # the page's follow-up requests (context line, drafts)
            out["browser_dom_nodes"] = float(
                page.evaluate("document.getElementsByTagName('*').length")
            )
            out["browser_messages_in_dom"] = float(
                page.evaluate("document.querySelectorAll('ol.messages > li.message').length")
            )
            switches = Series(args.switches, args.budget, minimum=2)
            index = CANDIDATES
            for i in switches:
                button, index = (
                    (".swipe-prev", index - 1) if i % 2 == 0 else (".swipe-next", index + 1)
                )
                elapsed = float(page.evaluate(CLICK_SWITCH, [button, candidate_marker(index)]))
                if elapsed < 0:
                    why = "no such button" if elapsed == -1 else "the text never changed"
                    log(f"  switch #{i + 1}: failed ({why})")
                    break
                switches.add(elapsed / 1000)
                log(f"  switch #{i + 1} ({button}): {elapsed:.0f} ms")
                quiet.wait()  # the page's follow-up (context line) ends before the next click
            if switches.samples:
                out["browser_switch_first_ms"] = ms(switches.samples[0])
                out["browser_switch_ms"] = switches.median_ms
            context.close()
        finally:
            browser.close()
    return out


def browser_available() -> str | None:
    """None when the browser part can run, else why not."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (make browser-deps)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed"
    return None


# -------------------------------------------------------------------- report


def target_lines(figures: dict[str, Any], sizes: list[int]) -> list[tuple[str, str, str]]:
    """(target, figure, PASS/MISS/n/a) for each target."""
    lines: list[tuple[str, str, str]] = []

    def check(name: str, value: float | None, limit: float, unit: str, fmt: str = ".1f") -> None:
        if value is None:
            lines.append((name, "-", "n/a"))
        else:
            shown = f"{value:{fmt}} {unit}".strip()
            lines.append((name, shown, "PASS" if value <= limit else "MISS"))

    def get(key: str) -> float | None:
        value = figures.get(key)
        return float(value) if isinstance(value, int | float) else None

    check("warm time to request at 10,000 <= 15 ms", get("ttr_warm_10000_ms"), 15, "ms")
    ratio = None
    if get("ttr_warm_100000_ms") is not None and get("ttr_warm_1000_ms"):
        ratio = figures["ttr_warm_100000_ms"] / figures["ttr_warm_1000_ms"]
    figures["ttr_ratio_100000_1000"] = round(ratio, 2) if ratio is not None else None
    check("time to request ratio 100k/1k <= 2", ratio, 2, "", ".2f")
    check("first prompt after restart at 10,000 <= 400 ms", get("prompt_first_10000_ms"), 400, "ms")
    check("chat open at 100,000 <= 30 ms", get("open_100000_ms"), 30, "ms")
    check("chat open at 100,000 <= 100 KB", get("open_100000_kb"), 100, "KB")
    check("browser open at 20,000 <= 1 s", get("browser_open_ms"), 1000, "ms", ".0f")
    check("browser candidate switch <= 150 ms", get("browser_switch_ms"), 150, "ms", ".0f")
    check("browser DOM nodes <= 5,000", get("browser_dom_nodes"), 5000, "", ".0f")
    rest = [get(f"rss_rest_{s}_mb") for s in sizes]
    peak = [get(f"rss_peak_{s}_mb") for s in sizes]
    check("server RSS at rest (largest) <= 300 MB", max((r for r in rest if r), default=None), 300, "MB")  # fmt: skip
    check("server RSS peak (largest) <= 300 MB", max((p for p in peak if p), default=None), 300, "MB")  # fmt: skip
    return lines


ROWS = [
    ("server start to ready (restart)", "ready_ms", "ms"),
    ("prompt preview, first after restart", "prompt_first_ms", "ms"),
    ("prompt preview, warm median", "prompt_warm_ms", "ms"),
    ("prompt preview, warm repeats", "prompt_warm_n", ""),
    ("bound-book entries activated by key", "lore_by_key", ""),
    ("chat open GET, warm median", "open_ms", "ms"),
    ("chat open GET, response size", "open_kb", "KB"),
    ("chat open GET, messages returned", "open_messages_returned", ""),
    ("candidate switch (API), median", "switch_api_ms", "ms"),
    ("time to request, first turn", "ttr_first_ms", "ms"),
    ("time to request, warm median", "ttr_warm_ms", "ms"),
    ("time to request, slowest turn", "ttr_max_ms", "ms"),
    ("time to request, turns 1 s apart", "ttr_paced_ms", "ms"),
    ("time to request, turns counted", "ttr_n", ""),
    ("warm turns began, s after 1st prompt", "warm_turns_start_s", "s"),
    ("generate POST answered, median", "generate_post_ms", "ms"),
    ("server RSS at rest", "rss_rest_mb", "MB"),
    ("server RSS peak (VmHWM)", "rss_peak_mb", "MB"),
]


def print_report(
    per_size: dict[int, dict[str, float]], figures: dict[str, Any], sizes: list[int]
) -> None:
    width = 38
    print()
    header = "".join(f"{f'{s:,} msgs':>14}" for s in sizes)
    print(f"{'through taverna serve (HTTP)':{width}}{header}")
    for label, key, unit in ROWS:
        cells = ""
        for size in sizes:
            value = per_size.get(size, {}).get(key)
            shown = "-" if value is None else f"{value:,.{1 if unit else 0}f} {unit}".strip()
            cells += f"{shown:>14}"
        print(f"{label:{width}}{cells}")
    if len(sizes) > 1:
        low, high = min(sizes), max(sizes)
        for label, key in (("time to request", "ttr_warm_ms"), ("prompt, first", "prompt_first_ms"),
                           ("chat open", "open_ms"), ("chat open size", "open_kb")):  # fmt: skip
            a, b = per_size[low].get(key), per_size[high].get(key)
            if a and b:
                print(f"{f'ratio {label} {high:,}/{low:,}':{width}}{b / a:14.2f}")
    if "browser_open_ms" in figures:
        size = figures["browser_messages"]
        print()
        print(f"{f'in Chromium, {size:,} messages':{width}}{'value':>14}")
        for label, key, unit in (
            ("open to last message visible, 1st", "browser_open_first_ms", "ms"),
            ("open to last message visible, median", "browser_open_ms", "ms"),
            ("DOM nodes", "browser_dom_nodes", ""),
            ("messages in the DOM", "browser_messages_in_dom", ""),
            ("candidate switch, first", "browser_switch_first_ms", "ms"),
            ("candidate switch, median", "browser_switch_ms", "ms"),
        ):
            value = figures.get(key)
            shown = "-" if value is None else f"{value:,.0f} {unit}".strip()
            print(f"{label:{width}}{shown:>14}")
    elif figures.get("browser_skipped"):
        print(f"\nbrowser part skipped: {figures['browser_skipped']}")
    print()
    print(f"{'target':{width + 10}}{'figure':>14}  result")
    for name, value, verdict in target_lines(figures, sizes):
        print(f"{name:{width + 10}}{value:>14}  {verdict}")
    load = figures["loadavg"]
    print()
    print(
        f"machine: {figures['cpus']} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"(at start {figures['loadavg_start'][0]:.2f}); run took {figures['total_s']:.0f} s"
    )


@contextmanager
def running_stub() -> Iterator[TimedStub]:
    stub = TimedStub().start()
    try:
        yield stub
    finally:
        stub.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=15, help="warm prompt previews per size")
    parser.add_argument("--open-repeat", type=int, default=5, help="chat opens per size")
    parser.add_argument("--turns", type=int, default=8, help="counted generations per size")
    parser.add_argument(
        "--budget",
        type=float,
        default=15,
        help="seconds after which a series of repeats stops early (at least 3 are taken)",
    )
    parser.add_argument("--browser-messages", type=int, default=20_000)
    parser.add_argument("--browser-loads", type=int, default=3)
    parser.add_argument("--switches", type=int, default=6)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--recall",
        action="store_true",
        help="recall by meaning on (every stored message with a vector; the messages the "
        "turns add are embedded by the server with the bundled model), to compare with off",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    skipped = "--no-browser" if args.no_browser else browser_available()
    browser_size = None if skipped else args.browser_messages
    started = time.perf_counter()
    figures: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "repeat": args.repeat,
        "turns": args.turns,
    }

    def log(line: str) -> None:
        print(line, flush=True)

    per_size: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="taverna-turn-") as tmp:
        data = Path(tmp) / "data"
        log(f"building the library ({', '.join(f'{s:,}' for s in sizes)} messages) ...")
        chats, keys, timings = build_library(data, sizes, browser_size, args.seed, args.recall)
        figures["recall"] = args.recall
        figures.update({k: round(v, 2) for k, v in timings.items()})
        log(f"  built in {timings['build_total_s']:.1f} s")
        for size in sizes:
            if f"bits_read_{size}_s" in timings:
                log(
                    f"  {size:,} messages' sign bits, cold: read "
                    f"{timings[f'bits_read_{size}_s']:.2f} s; made from the floats "
                    f"{timings[f'bits_from_floats_{size}_s']:.2f} s"
                )
        server = TavernaServer(data, Path(tmp) / "serve.log")
        try:
            with running_stub() as stub:
                server.start()
                httpx.post(
                    f"{server.url}/api/connections",
                    json={
                        "name": "stub",
                        "api": "openai",
                        "url": stub.base_url("openai"),
                        "model": "stub-model",
                        "key": None,
                        "default": True,
                    },
                    timeout=30,
                ).raise_for_status()
                for size in sizes:
                    log(f"{size:,} messages:")
                    per_size[size] = measure_size(server, stub, chats[size], keys, args, log)
                    for key, value in per_size[size].items():
                        name = key.replace("_ms", f"_{size}_ms").replace("_kb", f"_{size}_kb")
                        name = name.replace("_mb", f"_{size}_mb")
                        if name == key:
                            name = f"{key}_{size}"
                        figures[name] = round(value, 2)
                if browser_size is not None:
                    log(f"Chromium, {browser_size:,} messages:")
                    figures["browser_messages"] = browser_size
                    found = measure_browser(server, chats[browser_size], args, log)
                    figures.update({k: round(v, 1) for k, v in found.items()})
                    figures["rss_rest_browser_mb"], figures["rss_peak_browser_mb"] = (
                        round(x, 1) for x in server.memory_mb()
                    )
                else:
                    figures["browser_skipped"] = skipped
                if stub.problems:
                    figures["stub_problems"] = stub.problems[:5]
        except BaseException:
            if server.log.exists():  # what the server said, before the folder goes
                tail = server.log.read_text(errors="replace")[-4000:]
                print(f"taverna serve's log ends:\n{tail}", file=sys.stderr)
            raise
        finally:
            server.stop()
    figures["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    figures["total_s"] = round(time.perf_counter() - started, 1)
    print_report(per_size, figures, sizes)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
