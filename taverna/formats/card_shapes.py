"""The card models' fields as plain data (formats/shapes.py), for reading a card without
the models (formats/quick_read.py).

Generated from the models by `python -m taverna.formats.shape_table`; do not edit. A test
fails when a model changes and this file was not generated again.
"""

from __future__ import annotations

from taverna.formats.shapes import Field, Model, Shape

CHARACTER = "taverna.model.character.Character"
EXTENSIONS = "taverna.model.character.CharacterExtensions"

MODELS: dict[str, Model] = {
    "taverna.model.character.CardAsset": Model(
        (
            Field("type", "type", Shape("text"), ("str",), ""),
            Field("uri", "uri", Shape("text"), ("str",), ""),
            Field("name", "name", Shape("text"), ("str",), ""),
            Field("ext", "ext", Shape("text"), ("str",), ""),
        )
    ),
    "taverna.model.character.Character": Model(
        (
            Field("name", "name", Shape("text"), ("str",), ""),
            Field("description", "description", Shape("text"), ("str",), ""),
            Field("personality", "personality", Shape("text"), ("str",), ""),
            Field("scenario", "scenario", Shape("text"), ("str",), ""),
            Field("first_mes", "first_mes", Shape("text"), ("str",), ""),
            Field("mes_example", "mes_example", Shape("text"), ("str",), ""),
            Field("creator_notes", "creator_notes", Shape("text"), ("str",), ""),
            Field("system_prompt", "system_prompt", Shape("text"), ("str",), ""),
            Field(
                "post_history_instructions",
                "post_history_instructions",
                Shape("text"),
                ("str",),
                "",
            ),
            Field(
                "alternate_greetings",
                "alternate_greetings",
                Shape("texts"),
                ("wrap", ("list", ("str",))),
                [],
            ),
            Field("tags", "tags", Shape("texts"), ("list", ("str",)), []),
            Field("creator", "creator", Shape("text"), ("str",), ""),
            Field("character_version", "character_version", Shape("text"), ("str",), ""),
            Field(
                "extensions",
                "extensions",
                Shape("model", model="taverna.model.character.CharacterExtensions"),
                ("model", "taverna.model.character.CharacterExtensions"),
                {},
            ),
            Field(
                "character_book",
                "character_book",
                Shape("model", optional=True, model="taverna.model.character.CharacterBook"),
                ("union", ("model", "taverna.model.character.CharacterBook"), ("none",)),
                None,
            ),
            Field(
                "group_only_greetings",
                "group_only_greetings",
                Shape("texts"),
                ("wrap", ("list", ("str",))),
                [],
            ),
            Field(
                "assets",
                "assets",
                Shape("models", optional=True, model="taverna.model.character.CardAsset"),
                ("union", ("list", ("model", "taverna.model.character.CardAsset")), ("none",)),
                None,
            ),
            Field(
                "nickname",
                "nickname",
                Shape("text", optional=True),
                ("union", ("str",), ("none",)),
                None,
            ),
            Field(
                "creator_notes_multilingual",
                "creator_notes_multilingual",
                Shape("object", optional=True),
                ("union", ("dict", ("str",)), ("none",)),
                None,
            ),
            Field(
                "source",
                "source",
                Shape("texts", optional=True),
                ("union", ("list", ("str",)), ("none",)),
                None,
            ),
            Field(
                "creation_date",
                "creation_date",
                Shape("number", optional=True),
                ("union", ("int",), ("float",), ("none",)),
                None,
            ),
            Field(
                "modification_date",
                "modification_date",
                Shape("number", optional=True),
                ("union", ("int",), ("float",), ("none",)),
                None,
            ),
            Field("_envelope", "envelope", Shape("object"), ("dict", ("any",)), {}),
        )
    ),
    "taverna.model.character.CharacterBook": Model(
        (
            Field(
                "name", "name", Shape("text", optional=True), ("union", ("str",), ("none",)), None
            ),
            Field(
                "description",
                "description",
                Shape("text", optional=True),
                ("union", ("str",), ("none",)),
                None,
            ),
            Field(
                "scan_depth",
                "scan_depth",
                Shape("number", optional=True),
                ("union", ("int",), ("float",), ("none",)),
                None,
            ),
            Field(
                "token_budget",
                "token_budget",
                Shape("number", optional=True),
                ("union", ("int",), ("float",), ("none",)),
                None,
            ),
            Field(
                "recursive_scanning",
                "recursive_scanning",
                Shape("bool", optional=True),
                ("union", ("bool",), ("none",)),
                None,
            ),
            Field("extensions", "extensions", Shape("object"), ("dict", ("any",)), {}),
            Field(
                "entries",
                "entries",
                Shape("models", model="taverna.model.character.CharacterBookEntry"),
                ("list", ("model", "taverna.model.character.CharacterBookEntry")),
                [],
            ),
        )
    ),
    "taverna.model.character.CharacterBookEntry": Model(
        (
            Field("keys", "keys", Shape("texts"), ("list", ("str",)), []),
            Field("content", "content", Shape("text"), ("str",), ""),
            Field("extensions", "extensions", Shape("object"), ("dict", ("any",)), {}),
            Field("enabled", "enabled", Shape("bool"), ("bool",), True),
            Field(
                "insertion_order",
                "insertion_order",
                Shape("number"),
                ("union", ("int",), ("float",)),
                100,
            ),
            Field(
                "case_sensitive",
                "case_sensitive",
                Shape("bool", optional=True),
                ("union", ("bool",), ("none",)),
                None,
            ),
            Field(
                "use_regex",
                "use_regex",
                Shape("bool", optional=True),
                ("union", ("bool",), ("none",)),
                None,
            ),
            Field(
                "constant",
                "constant",
                Shape("bool", optional=True),
                ("union", ("bool",), ("none",)),
                None,
            ),
            Field(
                "name", "name", Shape("text", optional=True), ("union", ("str",), ("none",)), None
            ),
            Field(
                "priority",
                "priority",
                Shape("number", optional=True),
                ("union", ("int",), ("float",), ("none",)),
                None,
            ),
            Field(
                "id",
                "id",
                Shape("union", optional=True, members=(Shape("integer"), Shape("text"))),
                ("union", ("jsonint",), ("str",), ("none",)),
                None,
            ),
            Field(
                "comment",
                "comment",
                Shape("text", optional=True),
                ("union", ("str",), ("none",)),
                None,
            ),
            Field(
                "selective",
                "selective",
                Shape("bool", optional=True),
                ("union", ("bool",), ("none",)),
                None,
            ),
            Field(
                "secondary_keys",
                "secondary_keys",
                Shape("texts", optional=True),
                ("union", ("list", ("str",)), ("none",)),
                None,
            ),
            Field(
                "position",
                "position",
                Shape("text", optional=True),
                ("union", ("str",), ("none",)),
                None,
            ),
        )
    ),
    "taverna.model.character.CharacterExtensions": Model(
        (
            Field(
                "talkativeness",
                "talkativeness",
                Shape(
                    "union",
                    optional=True,
                    members=(Shape("text"), Shape("integer"), Shape("number")),
                ),
                ("union", ("str",), ("int",), ("float",), ("none",)),
                None,
            ),
            Field(
                "fav",
                "fav",
                Shape("union", optional=True, members=(Shape("bool"), Shape("text"))),
                ("union", ("bool",), ("str",), ("none",)),
                None,
            ),
            Field(
                "world", "world", Shape("text", optional=True), ("union", ("str",), ("none",)), None
            ),
            Field(
                "depth_prompt",
                "depth_prompt",
                Shape("model", optional=True, model="taverna.model.character.DepthPrompt"),
                ("union", ("model", "taverna.model.character.DepthPrompt"), ("none",)),
                None,
            ),
            Field(
                "regex_scripts",
                "regex_scripts",
                Shape("models", optional=True, model="taverna.model.regex_script.RegexScript"),
                ("union", ("list", ("model", "taverna.model.regex_script.RegexScript")), ("none",)),
                None,
            ),
        )
    ),
    "taverna.model.character.DepthPrompt": Model(
        (
            Field("prompt", "prompt", Shape("text"), ("str",), ""),
            Field("depth", "depth", Shape("number"), ("union", ("int",), ("float",)), 4),
            Field("role", "role", Shape("text"), ("str",), "system"),
        )
    ),
    "taverna.model.regex_script.RegexScript": Model(
        (
            Field("id", "id", Shape("text"), ("str",), ""),
            Field("scriptName", "script_name", Shape("text"), ("str",), ""),
            Field("findRegex", "find_regex", Shape("text"), ("str",), ""),
            Field("replaceString", "replace_string", Shape("text"), ("str",), ""),
            Field("trimStrings", "trim_strings", Shape("texts"), ("list", ("str",)), []),
            Field(
                "placement",
                "placement",
                Shape("numbers", members=(Shape("integer"),)),
                ("list", ("jsonint",)),
                [],
            ),
            Field("disabled", "disabled", Shape("bool"), ("bool",), False),
            Field("markdownOnly", "markdown_only", Shape("bool"), ("bool",), False),
            Field("promptOnly", "prompt_only", Shape("bool"), ("bool",), False),
            Field("runOnEdit", "run_on_edit", Shape("bool"), ("bool",), False),
            Field(
                "substituteRegex",
                "substitute_regex",
                Shape("union", members=(Shape("bool"), Shape("integer"))),
                ("union", ("bool",), ("jsonint",)),
                False,
            ),
            Field(
                "minDepth",
                "min_depth",
                Shape("integer", optional=True),
                ("union", ("jsonint",), ("none",)),
                None,
            ),
            Field(
                "maxDepth",
                "max_depth",
                Shape("integer", optional=True),
                ("union", ("jsonint",), ("none",)),
                None,
            ),
        )
    ),
}
