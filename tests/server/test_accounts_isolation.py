"""Isolation between accounts: as user B, every route of the API with user A's ids.

Alice makes one of everything (a character, a lorebook, a chat with a branch and a
checkpoint, a persona, a preset, a group, a quick-reply set, a connection with a key, a
picture, global variables, a draft, a generation, a round and a model download). Then Bob calls EVERY
route of the app (enumerated from `app.routes`, so a new route is covered without
changing this test) with Alice's ids in its path: each answers 404 (or, for a route
naming nothing, only Bob's own things), never Alice's data, and afterwards Alice's things
are all still there as they were. A route this test does not call is in `EXEMPT`, with
the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import NodeRole, new_id
from taverna.model.persona import Persona, PersonaDescriptor
from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.chats.editing import start_chat
from taverna.services.connections.model_jobs import model_jobs
from taverna.services.library.service import LibraryKind
from taverna.services.turns import RunningGeneration
from taverna.services.turns.runs import GroupRound
from tests.server.accounts_fixtures import enable_accounts, log_in

SECRET = "ALICE-SECRET"
KEY = "sk-alice-0123456789-ZQXJ"
# Routes Bob does not call, and why.
EXEMPT = {
    ("POST", "/api/logout"): "ends the caller's own session only (tested in test_accounts)",
    ("POST", "/api/login"): "names an account and its password, no one's data",
}
# Routes only an admin may call: Bob is refused with 403.
ADMIN_ONLY = {
    "/api/users",
    "/api/users/import",
    "/api/users/{account}",
    "/api/users/{account}/password",
    "/api/users/{account}/quota",
    "/api/users/{account}/disabled",
    "/api/users/{account}/lockout",
    "/api/address-lockouts",
    "/api/address-lockouts/{address}",
}
# Path parameters that name a part of something the route's other parameter names
# (a message of a chat, an entry of a lorebook): the whole is what is checked.
# A regex layer is global or one of the account's own presets or characters, named by
# the `target` query (Alice's character here).
PART_PARAMS = {
    "node_id",
    "branch_id",
    "checkpoint_id",
    "uid",
    "identifier",
    "layer",
    "script_id",
    "label",
}


def sample(name: str) -> bytes:
    return (files("taverna") / "data" / name).read_bytes()


@pytest.fixture
def server(ctx: AppContext) -> Iterator[tuple[TestClient, TestClient, dict[str, Any]]]:
    enable_accounts(ctx, "alice", "bob", admin="root")
    app = create_app(ctx)
    with TestClient(app) as alice:
        bob = TestClient(app)
        log_in(alice, "alice")
        log_in(bob, "bob")
        yield alice, bob, seed_alice(ctx, alice)


def seed_alice(ctx: AppContext, alice: TestClient) -> dict[str, Any]:
    """One of everything of Alice's; her ids by path parameter name."""
    owner = ctx.store.account(name="alice").id
    library = ctx.library(owner)
    card = library.import_bytes(sample("Ione Calder.png"), "Ione.png")
    book = library.import_bytes(sample("Brasswater.json"), "Brasswater.json")
    chat = start_chat(ctx.chats, card.id, title=f"{SECRET} chat", owner=owner)
    revision = chat.revision
    for i in range(3):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        out = ctx.chats.append(chat.id, role, f"{SECRET} message {i}", revision=revision)
        revision = out.chat.revision
    nodes = [node.id for node in ctx.chats.active_path(chat.id).nodes]
    branched = ctx.chats.branch_from(chat.id, nodes[1], "side", revision=revision, switch=False)
    _, checkpoint = ctx.chats.create_checkpoint(
        chat.id, nodes[2], "mark", revision=branched.chat.revision
    )
    persona = library.put_persona(
        Persona(avatar="wren.png", name=f"{SECRET} Wren", descriptor=PersonaDescriptor())
    )
    preset = library.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        f"{SECRET} preset",
        {"openai_max_context": 4096, "openai_max_tokens": 100, "prompts": [], "prompt_order": []},
    )
    group = alice.post("/api/groups", json={"name": f"{SECRET} group", "character_ids": [card.id]})
    assert group.status_code == 201, group.text
    replies = alice.put(
        "/api/quick-replies",
        json={"name": f"{SECRET} set", "replies": [{"label": "go", "message": SECRET}]},
    )
    assert replies.status_code == 200, replies.text
    assert alice.put("/api/variables", json={"global": {"secret": SECRET}}).status_code == 200
    ctx.connections_of(owner, key_env_allowed=()).add(
        "alice-conn", "openai", url="http://127.0.0.1:9/v1", model="m", key=KEY
    )
    picture = ctx.images(owner).save(sample_png(), file="p.png")
    backdrop = alice.post(
        "/api/looks/backgrounds", files={"file": ("dusk.png", sample_png((9, 9, 60)), "image/png")}
    )
    assert backdrop.status_code == 201, backdrop.text
    sprite = alice.post(
        f"/api/characters/{card.id}/sprites",
        files={"file": ("joy.png", sample_png((250, 220, 0)), "image/png")},
    )
    assert sprite.status_code == 200, sprite.text
    draft = ctx.store.put_document(
        "draft",
        "normal draft",
        {"chat_id": chat.id, "kind": "normal", "text": f"{SECRET} draft", "reason": "stopped"},
        owner=owner,
    )
    run = RunningGeneration(new_id(), chat.id, GenerationType.NORMAL)
    ctx.generation.registry.add(run)
    found = GroupRound(new_id(), chat.id, ("Ione",))
    ctx.generation.rounds[found.id] = found
    download = model_jobs().start("hub", f"{SECRET} model", owner, lambda job: {})
    return {
        "owner": owner,
        "chat_id": chat.id,
        "revision": ctx.chats.get_chat(chat.id).revision,
        "node_id": nodes[1],
        "branch_id": ctx.chats.list_branches(chat.id)[0].branch.id,
        "checkpoint_id": checkpoint.id,
        "character_id": card.id,
        "lorebook_id": book.id,
        "persona_id": persona.id,
        "preset_id": preset.id,
        "group_id": group.json()["id"],
        "set_id": replies.json()["id"],
        "draft_id": draft.id,
        "task_id": run.id,
        "round_id": found.id,
        "job_id": download.id,
        "name": "alice-conn",
        "image": picture.url.rsplit("/", 1)[-1],
        "background_id": backdrop.json()["id"],
        "label": "joy",
        "uid": 0,
        "identifier": "main",
        "account": "alice",
        "address": "testclient",
        "layer": "character",
        "script_id": "alice-script-7f3",
    }


def sample_png(color: tuple[int, int, int] = (200, 10, 10)) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(out, "PNG")
    return out.getvalue()


def flat(routes: list[Any]) -> Iterator[Any]:
    """The app's routes, those of included routers among them (no router adds a prefix)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from flat(included.routes)
        else:
            yield route


def api_routes(client: TestClient) -> list[tuple[str, str, APIRoute]]:
    found = []
    for route in flat(client.app.routes):  # type: ignore[attr-defined]
        if isinstance(route, APIRoute) and route.path.startswith("/api/"):
            for method in sorted(route.methods - {"HEAD"}):
                found.append((method, route.path, route))
    return found


def fill(path: str, ids: dict[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[0]
        if name == "name" and path.startswith("/api/images"):
            return str(ids["image"])
        assert name in ids, f"{path}: no id of Alice's for {{{name}}}: add it to seed_alice"
        return str(ids[name])

    return re.sub(r"\{([^}]+)\}", one, path)


def body_for(method: str, path: str, ids: dict[str, Any]) -> dict[str, Any]:
    """Alice's ids where a body names them; else an empty object."""
    if (method, path) == ("POST", "/api/chats"):
        return {"character_id": ids["character_id"]}
    if (method, path) == ("POST", "/api/groups"):
        return {"name": "Bob's", "character_ids": [ids["character_id"]]}
    if method in ("POST", "PUT", "PATCH"):
        return {"revision": ids["revision"], "text": "bob was here"}
    return {}


def markers(ids: dict[str, Any]) -> list[str]:
    """What no answer to Bob may hold: Alice's texts, names, key and ids."""
    names = [SECRET, "Ione", "Brasswater", KEY[-4:], str(ids["owner"]), "alice-conn"]
    return names + [
        str(v) for k, v in ids.items() if (k.endswith("_id") and k != "revision") or k == "image"
    ]


def test_every_route_as_another_user_finds_nothing_of_alices(
    server: tuple[TestClient, TestClient, dict[str, Any]],
) -> None:
    alice, bob, ids = server
    before = alice.get(f"/api/chats/{ids['chat_id']}").json()
    called = 0
    for method, path, route in api_routes(bob):
        if (method, path) in EXEMPT:
            continue
        url = fill(path, ids)
        query = {"q": "ALICE", "revision": ids["revision"], "target": ids["character_id"]}
        upload = any(p.name == "file" for p in route.dependant.body_params)
        if upload:
            files_ = {"file": ("x.png", sample_png((0, 90, 0)), "image/png")}
            response = bob.request(method, url, params=query, files=files_)
        elif route.dependant.body_params:
            response = bob.request(method, url, params=query, json=body_for(method, path, ids))
        else:
            response = bob.request(method, url, params=query)
        called += 1
        where = f"{method} {path} -> {response.status_code}"
        assert response.status_code < 500, f"{where}: {response.text[:300]}"
        if path in ADMIN_ONLY:
            assert response.status_code == 403, where
            continue
        params = set(re.findall(r"\{([^}:]+)", path))
        owned = params - PART_PARAMS
        text = response.text
        if owned:
            assert response.status_code in (404, 422), f"{where}: {text[:300]}"
        # A 404 may repeat the id it was asked for; never anything else of Alice's.
        named = 5 if response.status_code == 404 else None
        leaked = [m for m in markers(ids)[:named] if m in text]
        assert not leaked, f"{where}: Alice's {leaked} in {text[:300]}"
    assert called >= 100, called

    # Nothing of Alice's was changed or removed by Bob's calls.
    after = alice.get(f"/api/chats/{ids['chat_id']}").json()
    assert after["revision"] == before["revision"]
    assert [m["content"] for m in after["messages"]] == [m["content"] for m in before["messages"]]
    for listing in (
        "characters",
        "lorebooks",
        "personas",
        "groups",
        "quick-replies",
        "connections",
    ):
        text = alice.get(f"/api/{listing}").text
        assert SECRET in text or "Ione" in text or "Brasswater" in text or "alice-conn" in text, (
            listing
        )
    assert alice.get("/api/variables").json() == {"secret": SECRET}
    assert alice.get(f"/api/images/{ids['image']}").status_code == 200
    assert [b["id"] for b in alice.get("/api/looks").json()["backgrounds"]] == [
        ids["background_id"]
    ]
    assert list(alice.get(f"/api/characters/{ids['character_id']}/sprites").json()["sprites"]) == [
        "joy"
    ]


def test_each_sees_only_their_own_chats(
    server: tuple[TestClient, TestClient, dict[str, Any]],
) -> None:
    alice, bob, ids = server
    assert [c["id"] for c in alice.get("/api/chats").json()] == [ids["chat_id"]]
    assert bob.get("/api/chats").json() == []
    assert bob.get("/api/characters").json() == []
    mine = alice.get("/api/regex/character", params={"target": ids["character_id"]})
    assert mine.status_code == 200
    theirs = bob.get("/api/regex/character", params={"target": ids["character_id"]})
    assert theirs.status_code == 404
    found = alice.get("/api/search", params={"q": SECRET}).json()
    assert found and SECRET in str(found)
    assert SECRET not in bob.get("/api/search", params={"q": SECRET}).text


def test_why_a_plugin_failed_to_load_is_shown_to_admins_only(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from taverna.server.context import open_context
    from tests.plugins.install import write_distribution

    monkeypatch.syspath_prepend(str(write_distribution(tmp_path / "site")))
    ctx = open_context(tmp_path / "data")
    enable_accounts(ctx, "bob", admin="root")
    app = create_app(ctx)
    with TestClient(app) as root:
        bob = TestClient(app)
        log_in(root, "root")
        log_in(bob, "bob")
        seen = {
            who: {p["name"]: p for p in client.get("/api/plugins").json()["plugins"]}
            for who, client in (("root", root), ("bob", bob))
        }
    assert "read_minds" in seen["root"]["broken"]["error"]
    assert "read_minds" not in seen["bob"]["broken"]["error"]
    assert "admin" in seen["bob"]["broken"]["error"]
    # What may touch a person's chats is shown to everyone alike.
    assert seen["bob"]["mood"]["grants"] == seen["root"]["mood"]["grants"]
    assert seen["bob"]["mood"]["error"] is None
