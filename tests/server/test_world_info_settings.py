"""The world-info settings through the API: read with a new install's values, changed key by
key with SillyTavern's names and ranges (a bad value refused with its key named, nothing
stored), and the next prompt's lorebook scan follows them."""

from __future__ import annotations

import io
import json

from fastapi.testclient import TestClient

from tests.support.api import start_chat

ENDPOINT = "/api/world-info-settings"


def _book(client: TestClient, name: str, key: str, content: str) -> None:
    world = {"entries": {"0": {"uid": 0, "key": [key], "content": content, "comment": key}}}
    file = (f"{name}.json", io.BytesIO(json.dumps(world).encode()), "application/json")
    assert client.post("/api/lorebooks/import", files={"file": file}).status_code == 201


def _scan(client: TestClient, chat_id: str) -> dict[str, str]:
    """The next prompt's lorebook trace: entry comment -> outcome."""
    prompt = client.get(f"/api/chats/{chat_id}/prompt").json()["prompt"]
    return {row["comment"]: row["outcome"] for row in prompt["ledger"]["trace"]}


def test_a_new_install_reads_sillytaverns_defaults(client: TestClient) -> None:
    settings = client.get(ENDPOINT).json()
    assert settings["world_info"] == {"globalSelect": []}
    assert settings["world_info_depth"] == 2
    assert settings["world_info_budget"] == 25
    assert settings["world_info_recursive"] is True
    assert settings["world_info_match_whole_words"] is True
    assert settings["world_info_character_strategy"] == 1
    assert settings["world_info_overflow_alert"] is False


def test_a_change_keeps_the_other_keys_and_refuses_bad_values(client: TestClient) -> None:
    _book(client, "Atlas", "lighthouse", "LORE")
    changed = client.put(
        ENDPOINT,
        json={
            "world_info": {"globalSelect": ["Atlas"]},
            "world_info_depth": 7,
            "world_info_overflow_alert": True,
        },
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["world_info"] == {"globalSelect": ["Atlas"]}
    later = client.put(ENDPOINT, json={"world_info_budget_cap": 500}).json()
    assert (later["world_info_depth"], later["world_info_budget_cap"]) == (7, 500)
    assert later["world_info_overflow_alert"] is True
    assert later["world_info"] == {"globalSelect": ["Atlas"]}

    for body, field in (
        ({"world_info_depth": 1001}, "world_info_depth"),
        ({"world_info_budget": 0}, "world_info_budget"),
        ({"world_info_max_recursion_steps": 11}, "world_info_max_recursion_steps"),
        ({"world_info_character_strategy": 3}, "world_info_character_strategy"),
        ({"world_info": {"globalSelect": ["Nowhere"]}}, "world_info.globalSelect"),
    ):
        refused = client.put(ENDPOINT, json=body)
        assert refused.status_code in (400, 422), refused.text
        assert field in refused.text
    assert client.put(ENDPOINT, json={"world_info_recursive": "yes"}).status_code == 422
    assert client.put(ENDPOINT, json={"world_info_unknown": 1}).status_code == 422
    assert client.get(ENDPOINT).json() == later


def test_the_next_prompt_scans_with_the_settings(client: TestClient) -> None:
    _book(client, "Atlas", "lighthouse", "LORE-LIGHT")
    _book(client, "Harbour", "harbour", "LORE-HARBOUR")
    chat_id = start_chat(client, name="Mira", first_mes="The lighthouse stands by the harbour.")
    assert _scan(client, chat_id) == {}  # no book active yet

    client.put(ENDPOINT, json={"world_info": {"globalSelect": ["Atlas", "Harbour"]}})
    assert _scan(client, chat_id) == {"lighthouse": "activated", "harbour": "activated"}

    # Scan depth 0: no message is read, nothing fires.
    client.put(ENDPOINT, json={"world_info_depth": 0})
    assert set(_scan(client, chat_id).values()) <= {"no match"}

    # A budget cap of one token: the scan overflows, the entries are cut by the budget.
    client.put(ENDPOINT, json={"world_info_depth": 2, "world_info_budget_cap": 1})
    assert "budget" in _scan(client, chat_id).values()


def test_the_insertion_strategy_decides_whose_lore_fits_the_budget(client: TestClient) -> None:
    words = " ".join(["word"] * 20)
    _book(client, "World", "lighthouse", f"GLOBAL {words}")
    _book(client, "Kin", "lighthouse", f"CHARACTER {words}")
    kin = next(b for b in client.get("/api/lorebooks").json() if b["name"] == "Kin")
    made = client.post(
        "/api/characters",
        json={"name": "Mira", "first_mes": "The lighthouse.", "lorebook_id": kin["id"]},
    ).json()
    chat_id = client.post("/api/chats", json={"character_id": made["id"]}).json()["id"]
    # Room for one entry: the strategy says whose goes in.
    client.put(
        ENDPOINT, json={"world_info": {"globalSelect": ["World"]}, "world_info_budget_cap": 30}
    )

    def outcomes() -> dict[str, str]:
        prompt = client.get(f"/api/chats/{chat_id}/prompt").json()["prompt"]
        return {row["book"]: row["outcome"] for row in prompt["ledger"]["trace"]}

    client.put(ENDPOINT, json={"world_info_character_strategy": 1})
    assert outcomes() == {"Kin": "activated", "World": "budget"}
    client.put(ENDPOINT, json={"world_info_character_strategy": 2})
    assert outcomes() == {"Kin": "budget", "World": "activated"}
