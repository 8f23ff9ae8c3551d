"""Writes formats/card_shapes.py: the card models' fields as plain data (formats/shapes.py).

`python -m taverna.formats.shape_table` rewrites the file from the models (then `ruff
format` it); tests/formats/test_quick_read.py fails while the two disagree.
"""

from __future__ import annotations

from pathlib import Path

from taverna.formats import shapes
from taverna.formats.validation import described, model_name

TARGET = Path(__file__).with_name("card_shapes.py")

HEADER = '''"""The card models' fields as plain data (formats/shapes.py), for reading a card without
the models (formats/quick_read.py).

Generated from the models by `python -m taverna.formats.shape_table`; do not edit. A test
fails when a model changes and this file was not generated again.
"""

from __future__ import annotations

'''


def card_models() -> dict[str, shapes.Model]:
    """The description of `Character` and of every model inside it, by name."""
    from taverna.model.character import Character, CharacterExtensions

    found: dict[str, shapes.Model] = {}
    waiting = [model_name(Character), model_name(CharacterExtensions)]
    while waiting:
        name = waiting.pop()
        if name in found:
            continue
        found[name] = model = described(name)
        for field in model.fields:
            waiting.extend(_models_in(field.type))
    return dict(sorted(found.items()))


def _models_in(kind: shapes.Type) -> list[str]:
    if kind[0] == "model":
        return [kind[1]]
    return [name for part in kind[1:] if isinstance(part, tuple) for name in _models_in(part)]


def source() -> str:
    """The text of formats/card_shapes.py."""
    from taverna.model.character import Character, CharacterExtensions

    models = "".join(
        f"    {name!r}: {_model_text(model)},\n" for name, model in card_models().items()
    )
    names = "REQUIRED, Field, Model, Shape" if "REQUIRED" in models else "Field, Model, Shape"
    return (
        f"{HEADER}from taverna.formats.shapes import {names}\n\n"
        f"CHARACTER = {model_name(Character)!r}\n"
        f"EXTENSIONS = {model_name(CharacterExtensions)!r}\n\n"
        f"MODELS: dict[str, Model] = {{\n{models}}}\n"
    )


def _model_text(model: shapes.Model) -> str:
    """A model as a short call: positional fields, the shapes' default arguments left out
    (a field a line, so the file stays readable and small)."""
    fields = "".join(f"{_field_text(field)}, " for field in model.fields)
    opaque = ", opaque=True" if model.opaque else ""
    return f"Model(({fields}){opaque})"


def _field_text(field: shapes.Field) -> str:
    return (
        f"Field({field.key!r}, {field.name!r}, {_shape_text(field.shape)}, "
        f"{field.type!r}, {field.default!r})"
    )


def _shape_text(shape: shapes.Shape) -> str:
    parts = [repr(shape.kind)]
    if shape.optional:
        parts.append("optional=True")
    if shape.model is not None:
        parts.append(f"model={shape.model!r}")
    if shape.members:
        members = ", ".join(_shape_text(member) for member in shape.members)
        parts.append(f"members=({members}{',' if len(shape.members) == 1 else ''})")
    return f"Shape({', '.join(parts)})"


if __name__ == "__main__":
    TARGET.write_text(source(), encoding="utf-8")
    print(f"wrote {TARGET}")
