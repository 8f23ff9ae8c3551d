"""MkDocs hook: the reference pages are written from the code, and the pages are checked
against it, so a renamed command, option or server.toml key fails `mkdocs build --strict`.

- `<!-- generated: commands -->` becomes every `taverna` command with its arguments and
  options, read from the typer app (`taverna/cli/`).
- `<!-- generated: server-config -->` becomes every `server.toml` key with its type,
  default and meaning, read from `taverna/server/config.py` (the models' fields, the
  comments above them, and the example in the module's docstring).
- `<!-- generated: benchmarks -->` becomes each `bench/*.py`'s own description and command.
- `<!-- generated: workers -->` becomes `deploy/workers.sh`'s usage, from its header.
- Every `taverna ...` command line in the pages and in the README (inline code and code
  blocks) must name commands and options that exist, every TOML block must be a valid
  `server.toml` (unless its title names another file), every source path named in inline code (`engine/...`, `bench/...`) must
  exist, and the README's links into docs/ must lead somewhere; anything else is a warning,
  which strict mode turns into a failure.
"""

from __future__ import annotations

import ast
import inspect
import logging
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.taverna_reference")

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FENCE = re.compile(r"^```([A-Za-z]*)([^\n]*)\n(.*?)^```", re.M | re.S)
COMMAND_LINE = re.compile(r"(?:^|[\s(])(?:\.venv/bin/)?taverna((?:\s+[^\s`]+)*)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


# ---- the command line -------------------------------------------------------------


@cache
def _cli() -> Any:
    """The `taverna` command as typer builds it (a click-style group: typer brings its own
    copy of click, so the objects are read by their attributes)."""
    import typer

    from taverna.cli import main as cli_main

    cli_main._register()
    return typer.main.get_command(cli_main.app)


def _is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), dict)


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found: list[tuple[tuple[str, ...], Any]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        found.append(((*path, name), command))
        if _is_group(command):
            found.extend(_commands(command, (*path, name)))
    return found


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _param_row(param: Any, context: Any) -> str | None:
    """One table row: the argument or option as `--help` names it, and its help (with the
    default and whether it is required, as `--help` says them)."""
    record = param.get_help_record(context)
    if record is None:
        return None
    names, help_text = record
    kind = "argument" if param.param_type_name == "argument" else "option"
    # A pipe inside a code span does not split a table's cell (and a backslash there shows)
    return f"| `{names}` | {kind} | {_escape(help_text.strip())} |"


def commands_markdown() -> str:
    lines: list[str] = []
    for path, command in _commands(_cli()):
        title = "taverna " + " ".join(path)
        lines += [f"### `{title}`", ""]
        help_text = inspect.cleandoc(command.help or command.short_help or "")
        if help_text:
            lines += [help_text.split("\n\n")[0].replace("\n", " "), ""]
        if _is_group(command):
            subs = ", ".join(f"`{name}`" for name in sorted(command.commands))
            lines += [f"Sub-commands: {subs}.", ""]
            continue
        import typer

        context = typer.Context(command, info_name=title)
        rows = [_param_row(p, context) for p in command.params if not getattr(p, "hidden", False)]
        if any(rows):
            lines += ["| argument or option | kind | what it does |", "|---|---|---|"]
            lines += [row for row in rows if row]
            lines.append("")
    return "\n".join(lines)


def _check_command_line(words: list[str], where: str) -> None:
    """`words` follow `taverna`: the command path, then anything; each `--option` must be
    one of the command's."""
    command = _cli()
    path: list[str] = []
    for word in words:
        clean = word.strip("[]()`,;:.")
        if not _is_group(command) or clean.startswith("-"):
            break
        if clean in command.commands:
            command = command.commands[clean]
            path.append(clean)
            continue
        if "/" in clean or clean in {"...", "|"} or clean.isupper():
            break  # a placeholder (`taverna COMMAND --help`) or prose
        if not path:
            log.warning("%s: `taverna %s`: no such command %r", where, " ".join(words), clean)
            return
        break
    if not path:
        return  # `taverna` alone, or `taverna --help`
    known = {opt for p in command.params for opt in (*p.opts, *getattr(p, "secondary_opts", ()))}
    known.add("--help")
    for option in OPTION.findall(" ".join(words)):
        if option not in known:
            log.warning("%s: `taverna %s` has no option %s", where, " ".join(path), option)


def check_commands(markdown: str, where: str) -> None:
    spans = INLINE_CODE.findall(FENCE.sub("", markdown))
    for _, _, block in FENCE.findall(markdown):
        spans.extend(block.splitlines())
    for span in spans:
        for match in COMMAND_LINE.finditer(span):
            words = match.group(1).split()
            if words:
                _check_command_line(words, where)


# ---- paths in the repository ------------------------------------------------------------

PATH_ROOTS = (
    "model",
    "formats",
    "engine",
    "providers",
    "store",
    "services",
    "server",
    "cli",
    "web",
)
REPO_ROOTS = ("taverna", "tests", "bench", "deploy", "docs")
REPO_PATH = re.compile(r"^[a-z_]+/[\w./*-]*$")


def check_paths(markdown: str, where: str) -> None:
    """Every `dir/file` a page names under the package, tests, bench or deploy exists."""
    for span in INLINE_CODE.findall(FENCE.sub("", markdown)):
        span = span.split("::")[0].split(" ")[0]
        if not REPO_PATH.match(span) or "*" in span:
            continue
        head = span.split("/")[0]
        if head in PATH_ROOTS:
            candidate = ROOT / "taverna" / span
        elif head in REPO_ROOTS:
            candidate = ROOT / span
        else:
            continue
        if not candidate.exists():
            log.warning("%s: `%s` names a path the repository does not have", where, span)


README_LINK = re.compile(r"\]\((docs/[^)#\s]+)(?:#[^)\s]*)?\)")


def check_readme_links(text: str) -> None:
    for target in README_LINK.findall(text):
        if not (ROOT / target).exists():
            log.warning("README.md links to %s, which does not exist", target)


# ---- server.toml ----------------------------------------------------------------------


def _field_comments(model: type) -> dict[str, str]:
    """The comment lines right above each field of a model class's source."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(model).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("# "))
            continue
        field = re.match(r"([a-z_]+)\s*:", stripped)
        if field and pending:
            comments[field.group(1)] = " ".join(pending)
        pending = []
    return comments


def _docstring_example() -> tuple[str, dict[str, str]]:
    """The TOML example of config.py's docstring, and its comment for each key."""
    from taverna.server import config

    doc = config.__doc__ or ""
    match = re.search(r"```toml\n(.*?)```", doc, re.S)
    if match is None:
        log.warning("taverna/server/config.py: its docstring has no ```toml example")
        return "", {}
    example = match.group(1)
    notes: dict[str, str] = {}
    section = ""
    for line in example.splitlines():
        header = re.match(r"\[([a-z_]+)\]\s*(?:#\s*(.*))?", line.strip())
        if header:
            section = header.group(1) + "."
            notes[header.group(1)] = header.group(2) or ""
            continue
        entry = re.match(r"([a-z_]+)\s*=.*?(?:#\s*(.*))?$", line.strip())
        if entry:
            notes[section + entry.group(1)] = entry.group(2) or ""
    return example, notes


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return {"tuple": "list of strings", "float": "number", "int": "integer", "str": "string"}.get(
        text, str(annotation).replace("typing.", "")
    )


def server_config_markdown() -> str:
    from pydantic import BaseModel

    from taverna.server.config import CONFIG_FILE, ServerConfig

    example, notes = _docstring_example()
    rows: list[str] = []
    keys: set[str] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        comments = _field_comments(model)
        for name, field in model.model_fields.items():
            key = prefix + name
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                keys.add(key)
                walk(annotation, key + ".")
                continue
            keys.add(key)
            if key not in notes:
                log.warning("server.toml key %s is not in config.py's docstring example", key)
            meaning = notes.get(key, "")
            longer = comments.get(name, "")
            if longer:
                meaning = f"{meaning}. {longer}" if meaning else longer
            default = field.default
            default_text = "[]" if default == () else repr(default).replace("'", '"')
            type_text = (
                "list of strings" if annotation == tuple[str, ...] else _type_name(annotation)
            )
            section = f"`[{prefix[:-1]}]`" if prefix else "top level"
            rows.append(
                f"| `{name}` | {section} | {type_text} | `{default_text}` | {_escape(meaning)} |"
            )

    walk(ServerConfig, "")
    for key in notes:
        if key not in keys:
            log.warning("config.py's docstring names %s, which ServerConfig does not have", key)
    lines = [
        f"Every key of `{CONFIG_FILE}`:",
        "",
        "| key | where | type | default | what it sets |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "An example with every key:",
        "",
        "```toml",
        example.rstrip(),
        "```",
    ]
    return "\n".join(lines)


def check_toml(markdown: str, where: str) -> None:
    from pydantic import ValidationError

    from taverna.server.config import ServerConfig

    for language, info, block in FENCE.findall(markdown):
        if language != "toml" or ("title=" in info and "server.toml" not in info):
            continue  # another file's TOML (```toml title="pyproject.toml")
        try:
            ServerConfig.model_validate(tomllib.loads(block))
        except (tomllib.TOMLDecodeError, ValidationError) as exc:
            log.warning("%s: a TOML block is not a valid server.toml: %s", where, exc)


# ---- benchmarks -----------------------------------------------------------------------


def benchmarks_markdown() -> str:
    lines: list[str] = []
    for script in sorted((ROOT / "bench").glob("*.py")):
        if script.name.startswith("_") or script.name == "run_all.py":
            continue
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
        if not doc:
            log.warning("bench/%s has no docstring to say what it measures", script.name)
            continue
        lines += [
            f"### `{script.stem}`",
            "",
            "```sh",
            f".venv/bin/python bench/{script.name}",
            "```",
            "",
            doc,
            "",
        ]
    return "\n".join(lines)


def workers_markdown() -> str:
    """The header comment of deploy/workers.sh: its usage and options."""
    lines = []
    for line in (ROOT / "deploy" / "workers.sh").read_text(encoding="utf-8").splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "```text\n" + "\n".join(lines).strip("\n") + "\n```\n"


GENERATORS = {
    "commands": commands_markdown,
    "workers": workers_markdown,
    "server-config": server_config_markdown,
    "benchmarks": benchmarks_markdown,
}


# ---- MkDocs events ------------------------------------------------------------------


def on_pre_build(config: Any) -> None:
    readme = ROOT / "README.md"
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        check_commands(text, "README.md")
        check_toml(text, "README.md")
        check_paths(text, "README.md")
        check_readme_links(text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    where = page.file.src_uri
    check_commands(markdown, where)
    check_toml(markdown, where)
    check_paths(markdown, where)

    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            log.warning("%s: unknown generated section %r", where, name)
            return ""
        return GENERATORS[name]()

    return MARKER.sub(generate, markdown)
