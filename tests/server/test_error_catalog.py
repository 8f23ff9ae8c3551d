"""Every message the server can send a person has a code the page says in both languages.

Walks the source: each error the project raises (a TavernaError or one of its kinds) names a
code; each code written in the source has its sentence in the English and the Chinese
catalogs, with no placeholder the raise site does not fill. The same for the kinds' default
codes, the lorebook trace's reasons and the codes of an import's skipped files. The command
line speaks English and is left out."""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from taverna.errors import CAUSES, library_cause
from taverna.model.lorebook import REASON_TEXTS
from taverna.server.errors import DEFAULT_CODES

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "taverna"
CATALOGS = SOURCE / "web" / "i18n"
SHELL = SOURCE / "cli"
BASES = {"TavernaError"}
# Placeholders the page fills itself for every server message.
ALWAYS = {"file", "field"}
# A parser's own English words, which a Chinese sentence may leave out.
PARSER_WORDS = {"msg"}


def _catalog(lang: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((CATALOGS / f"{lang}.json").read_text(encoding="utf-8"))
    return data


EN, ZH = _catalog("en"), _catalog("zh-CN")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        if SHELL in path.parents:
            continue
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _error_classes() -> set[str]:
    """TavernaError and every class that derives from it, by name, across the source."""
    names = set(BASES)
    bases: dict[str, set[str]] = {}
    for _path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found = {b.id for b in node.bases if isinstance(b, ast.Name)}
                bases.setdefault(node.name, set()).update(found)
    grew = True
    while grew:
        grew = False
        for name, parents in bases.items():
            if name not in names and parents & names:
                names.add(name)
                grew = True
    return names


def _self_coded(classes: set[str]) -> set[str]:
    """The error classes whose own __init__ hands a code to TavernaError."""
    coded = set()
    for _path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name not in classes:
                continue
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "__init__"
                    and any(k.arg == "code" for k in call.keywords)
                ):
                    coded.add(node.name)
    return coded


@dataclass(frozen=True)
class Site:
    where: str
    code: ast.expr | None
    params: ast.expr | None


def _sites() -> list[Site]:
    classes = _error_classes()
    coded = _self_coded(classes)
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id not in classes:
                continue
            words = {k.arg: k.value for k in node.keywords}
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            code = words.get("code")
            if code is None and node.func.id in coded:
                code = ast.Name("self_coded")  # its class names the code
            found.append(Site(where, code, words.get("params")))
    return found


SITES = _sites()


def _raw_words(node: ast.expr | None) -> bool:
    """Whether `node` is a call of raw_words(exc), the params of a library's failure."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "raw_words"
    )


def _placeholders(text: str) -> set[str]:
    """The params a sentence names: `{name}`, and `{name, plural, ...}` (a count's forms)."""
    return set(re.findall(r"\{(\w+)(?:\}|, plural,)", text))


def test_the_walk_finds_the_errors() -> None:
    assert len(SITES) > 300  # the walk reads the source, not an empty list


def test_every_error_names_a_code() -> None:
    missing = [s.where for s in SITES if s.code is None]
    assert not missing, f"errors without a code: {missing}"


def test_every_code_has_english_and_chinese_words_with_its_params() -> None:
    problems = []
    for site in SITES:
        if not isinstance(site.code, ast.Constant):
            continue  # passed on from another error (`code=error.code`)
        code = site.code.value
        key = f"server.{code}"
        if key not in EN or key not in ZH:
            problems.append(f"{site.where}: {key} is not in both catalogs")
            continue
        given = set(ALWAYS)
        if isinstance(site.params, ast.Dict):
            given |= {k.value for k in site.params.keys if isinstance(k, ast.Constant)}
            if any(
                _raw_words(v)
                for k, v in zip(site.params.keys, site.params.values, strict=True)
                if k is None
            ):
                given.add("exc")
        elif _raw_words(site.params):
            given.add("exc")
        elif site.params is not None:
            continue  # params built elsewhere: their names are not known here
        for lang, text in (("en", EN[key]), ("zh-CN", ZH[key])):
            unfilled = _placeholders(text) - given
            if unfilled:
                problems.append(f"{site.where}: {lang} {key} needs {sorted(unfilled)}")
        # Chinese may leave out a JSON parser's own English (the line and column stay)
        if _placeholders(EN[key]) - PARSER_WORDS != _placeholders(ZH[key]) - PARSER_WORDS:
            problems.append(f"{key}: the languages name different placeholders")
    assert not problems, "\n".join(problems)


def _literal_codes() -> Iterator[tuple[str, str]]:
    """Every code written as a literal, as its catalog key: `code="..."` anywhere (a
    prompt ledger line's is a `reason.` key, the rest `server.`), a reader's `fail(...,
    code, ...)`, and the code an `Unfit` value carries."""
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            group = "reason" if name == "LedgerItem" else "server"
            for word in node.keywords:
                if word.arg == "code" and isinstance(word.value, ast.Constant) and word.value.value:
                    yield where, f"{group}.{word.value.value}"
            at = {"fail": 2, "Unfit": 1}.get(name or "")
            if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant):
                yield where, f"server.{node.args[at].value}"


def test_every_literal_code_has_words_in_both_languages() -> None:
    found = list(_literal_codes())
    assert any(key == "server.unfit_number" for _where, key in found)
    assert any(key == "reason.reply_primed" for _where, key in found)
    missing = [f"{where}: {key}" for where, key in found if key not in EN or key not in ZH]
    assert not missing, missing


def test_the_default_codes_of_the_error_kinds_have_words() -> None:
    for _kind, code in DEFAULT_CODES:
        assert EN[f"server.{code}"] and ZH[f"server.{code}"]


@pytest.mark.parametrize("code", sorted(REASON_TEXTS))
def test_every_lorebook_reason_has_words(code: str) -> None:
    key = f"reason.{code}"
    assert EN[key] and ZH[key]
    english = _placeholders(REASON_TEXTS[code])
    # `stopped` is said by the page from its own note, never by a server value
    assert _placeholders(ZH[key]) - {"stopped"} == english
    assert _placeholders(EN[key]) - {"stopped"} == english


def test_every_skip_reason_has_words() -> None:
    codes = set()
    for _path, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Skipped", "SkippedLine")
                and len(node.args) >= 3
                and isinstance(node.args[2], ast.Constant)
            ):
                codes.add(node.args[2].value)
    assert {"not_imported", "empty_chat", "json_unreadable", "json_unreadable_at"} <= codes
    codes.add("line_left_out")
    missing = sorted(c for c in codes if f"server.{c}" not in EN or f"server.{c}" not in ZH)
    assert not missing, missing


def test_chinese_words_are_chinese() -> None:
    # a sentence copied over untranslated would pass every test above
    english_only = [
        key
        for key, text in ZH.items()
        if key.startswith("server.") and not re.search(r"[\u4e00-\u9fff]", text)
    ]
    assert not english_only, english_only


@pytest.mark.parametrize("cause", sorted(CAUSES))
def test_every_library_cause_has_words_with_its_params(cause: str) -> None:
    key = f"cause.{cause}"
    assert EN[key] and ZH[key]
    assert _placeholders(EN[key]) == set(CAUSES[cause]) == _placeholders(ZH[key])
    assert re.search(r"[\u4e00-\u9fff]", ZH[key])


def _failure(work: Callable[[], object]) -> BaseException:
    try:
        work()
    except Exception as exc:  # the library's own exception, whatever its kind
        return exc
    raise AssertionError("no failure")


def test_the_common_library_failures_are_named_by_a_cause() -> None:
    """JSON, text, zip and picture readers' failures each get a code of their own, with the
    values its sentence names; an unknown one gets none (its words stay)."""
    from PIL import Image

    png = (SOURCE / "data" / "Ione Calder.png").read_bytes()
    cases = {
        "json_syntax": lambda: json.loads('{"a": x}'),
        "utf8_invalid_start": lambda: b"ok \xff".decode("utf-8"),
        "utf8_ends_early": lambda: b"ok \xc3".decode("utf-8"),
        "unknown_encoding": lambda: b"a".decode("no-such-encoding"),
        "not_zip": lambda: zipfile.ZipFile(io.BytesIO(b"not a zip at all")),
        "not_image": lambda: Image.open(io.BytesIO(b"not a picture")),
        "truncated": lambda: Image.open(io.BytesIO(png[: len(png) // 2])).load(),
        "bad_compression": lambda: zlib.decompress(b"not zlib"),
        "bad_base64": lambda: base64.b64decode("abc", validate=True),
    }
    for cause, work in cases.items():
        found = library_cause(_failure(work))
        assert found.get("cause") == cause, (cause, found)
        assert set(found) - {"cause"} == set(CAUSES[cause]), (cause, found)
    assert library_cause(_failure(lambda: json.loads("[1,"))) == {
        "cause": "json_syntax",
        "json_line": "1",
        "json_column": "4",
    }
    assert library_cause(RuntimeError("something else")) == {}
