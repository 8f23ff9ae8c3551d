"""Custom CSS and SillyTavern themes: applied to the whole page, loading nothing from
elsewhere."""

from __future__ import annotations

import json

import pytest

from taverna.errors import FormatError
from taverna.formats.custom_css import MAX_CSS, allowed_picture, clean_css
from taverna.formats.st_theme import read_theme

PICTURE = "/api/images/" + "a" * 64 + ".png"


def test_rules_are_kept_as_written() -> None:
    css = "body { color: red; }\n.mes_text { font-size: 1.1em !important; }"
    assert clean_css(css).css == css
    assert clean_css(css).removed == ()


@pytest.mark.parametrize(
    "css",
    [
        '@import url("https://evil.example/x.css");',
        "@import 'https://evil.example/x.css';",
        "@IMPORT url(//evil.example/x.css) screen;",
        '@import/**/"https://evil.example/x.css";',
        "@\\69mport 'https://evil.example/x.css';",
    ],
)
def test_imports_are_taken_out(css: str) -> None:
    cleaned = clean_css(css + " body { color: red; }")
    assert "import" not in cleaned.css.lower()
    assert "evil" not in cleaned.css
    assert cleaned.css.endswith("body { color: red; }")
    assert cleaned.removed


@pytest.mark.parametrize(
    "css",
    [
        "body { background: url(https://evil.example/a.png) no-repeat; }",
        "body { background: url('http://evil.example/a.png'); }",
        'body { background: url( "//evil.example/a.png" ); }',
        "body { background: url(/api/chats/1/delete); }",
        "body { background: \\75 rl(https://evil.example/a.png); }",
        "body { background: u\\rl(https://evil.example/a.png); }",
        'body { background: image-set("https://evil.example/a.png" 1x); }',
        "@font-face { font-family: x; src: url(https://evil.example/f.woff2); }",
        "body { background: url(backgrounds/old.jpg); }",
    ],
)
def test_pictures_from_elsewhere_are_taken_out(css: str) -> None:
    cleaned = clean_css(css)
    assert "evil" not in cleaned.css and "/api/chats" not in cleaned.css
    assert "backgrounds/" not in cleaned.css
    assert cleaned.removed


def test_library_and_data_pictures_stay() -> None:
    data = "data:image/png;base64,iVBORw0KGgo="
    cleaned = clean_css(
        f"body {{ background: url({PICTURE}); }} p {{ background: url('{data}'); }}"
    )
    assert f'url("{PICTURE}")' in cleaned.css and f'url("{data}")' in cleaned.css
    assert cleaned.removed == ()
    assert allowed_picture(PICTURE) and allowed_picture(data)
    assert not allowed_picture("/api/images/../chats.png")
    assert not allowed_picture("data:text/html,<script>")


def test_script_hooks_and_closing_tags_are_taken_out() -> None:
    cleaned = clean_css("p { width: expression(alert(1)); -moz-binding: x; } </style><script>")
    assert "expression(" not in cleaned.css and "-moz-binding" not in cleaned.css
    assert "</style" not in cleaned.css


def test_a_comment_cannot_hide_a_load() -> None:
    cleaned = clean_css("body { background: url(/* */https://evil.example/a.png); }")
    assert "evil" not in cleaned.css


def test_past_the_limit_the_text_is_cut_and_said() -> None:
    cleaned = clean_css("p{}" + " " * MAX_CSS)
    assert len(cleaned.css) <= MAX_CSS and cleaned.removed


def test_a_theme_file_gives_its_colours_and_css() -> None:
    theme = read_theme(
        json.dumps(
            {
                "name": "Night",
                "main_text_color": "rgba(220, 220, 210, 1)",
                "chat_tint_color": "rgba(23, 23, 23, 0)",
                "user_mes_blur_tint_color": "#2a2a44",
                "border_color": "red; } body { background: url(x)",
                "custom_css": ".mes { border-radius: 0; }",
                "blur_strength": 10,
            }
        ),
        file="Night.json",
    )
    assert theme.name == "Night"
    assert theme.custom_css == ".mes { border-radius: 0; }"
    assert theme.colours == {
        "--text": "rgba(220, 220, 210, 1)",
        "--bg": "rgba(23, 23, 23, 0)",
        "--user": "#2a2a44",
    }  # the border "colour" is not a colour: passed over


def test_a_file_that_is_not_a_theme_is_refused() -> None:
    with pytest.raises(FormatError):
        read_theme(b'{"entries": {}}', file="book.json")
    with pytest.raises(FormatError):
        read_theme(b"[1]", file="x.json")
    assert read_theme(b'{"custom_css": ""}', file="x.json", name="From file").name == "From file"
