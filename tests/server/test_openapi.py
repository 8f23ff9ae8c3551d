"""The published OpenAPI schema says what the server really answers: its error answers, in
one shape, and the media types of the files and streams it sends."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from taverna.server.openapi import ErrorOut

ERROR = {"$ref": "#/components/schemas/ErrorOut"}


def operation(schema: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found: dict[str, Any] = schema["paths"][path][method]
    return found


def media(op: dict[str, Any], status: str) -> set[str]:
    return set(op["responses"][status].get("content", {}))


def test_the_frameworks_own_refusals_have_the_error_shape(client: TestClient) -> None:
    # A JSON body that is not UTF-8, a multipart body that does not parse.
    unparsed = client.post(
        "/api/personas", content=b"\xe9", headers={"Content-Type": "application/json"}
    )
    assert unparsed.status_code == 400
    assert ErrorOut.model_validate(unparsed.json()).detail.kind == "BadRequest"
    multipart = client.post(
        "/api/lorebooks/import",
        content=b"--b\r\n-329--b--\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=b"},
    )
    assert multipart.status_code == 400
    assert ErrorOut.model_validate(multipart.json()).detail.message == "Invalid multipart data."
    missing = client.get("/api/nothing-here")
    assert missing.status_code == 404
    assert ErrorOut.model_validate(missing.json()).detail.kind == "NotFound"
    wrong_method = client.put("/api/health")
    assert wrong_method.status_code == 405
    assert ErrorOut.model_validate(wrong_method.json()).detail.kind == "MethodNotAllowed"
    assert wrong_method.headers["allow"] == "GET, HEAD"


def test_the_projects_errors_fit_the_documented_shape(client: TestClient) -> None:
    card = client.post("/api/characters", json={"name": "Mira"}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    stale = client.patch(
        f"/api/chats/{chat['id']}", json={"title": "New", "revision": chat["revision"] + 5}
    )
    assert stale.status_code == 409
    conflict = ErrorOut.model_validate(stale.json()).detail
    assert conflict.kind == "StaleRevision" and conflict.current_revision == chat["revision"]
    unreadable = client.post(
        "/api/lorebooks/import", files={"file": ("book.json", b"[1, 2", "application/json")}
    )
    assert unreadable.status_code == 422
    assert ErrorOut.model_validate(unreadable.json()).detail.file == "book.json"


def test_every_operation_documents_its_error_answers(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert set(schema["components"]["schemas"]["ErrorOut"]["properties"]) == {"detail"}
    write = operation(schema, "patch", "/api/chats/{chat_id}")
    assert {"200", "400", "403", "404", "409", "413", "422"} <= set(write["responses"])
    for status in ("400", "403", "404", "409", "413"):
        assert write["responses"][status]["content"]["application/json"]["schema"] == ERROR
    invalid = write["responses"]["422"]["content"]["application/json"]["schema"]
    assert invalid == {"anyOf": [{"$ref": "#/components/schemas/HTTPValidationError"}, ERROR]}
    health = operation(schema, "get", "/api/health")
    assert set(health["responses"]) == {"200", "400"}
    models = operation(schema, "get", "/api/connections/{name}/models")
    assert "502" in models["responses"]
    for path_item in schema["paths"].values():
        for op in path_item.values():
            assert "400" in op["responses"]


def test_files_and_streams_are_documented_with_their_media_types(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    pictures = {"image/png", "image/svg+xml"}
    assert media(operation(schema, "get", "/api/characters/{character_id}/avatar"), "200") == (
        pictures
    )
    assert media(operation(schema, "get", "/api/personas/{persona_id}/avatar"), "200") == pictures
    card = operation(schema, "get", "/api/characters/{character_id}/export")
    assert media(card, "200") == {"image/png", "application/json"}
    chat = operation(schema, "get", "/api/chats/{chat_id}/export")
    assert media(chat, "200") == {"application/jsonl", "application/zip"}
    for path in ("/api/lorebooks/{lorebook_id}/export", "/api/presets/{preset_id}/export"):
        assert media(operation(schema, "get", path), "200") == {"application/json"}
    events = operation(schema, "get", "/api/tasks/{task_id}/events")
    assert media(events, "200") == {"text/event-stream"}
    event = events["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert {"delta", "done", "error", "progress"} <= set(event["properties"]["event"]["enum"])
