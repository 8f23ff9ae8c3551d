"""The page's markdown renderer in a real browser: formatting works and nothing from the text becomes HTML."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from tests.browser.conftest import TavernaServer

pytestmark = pytest.mark.browser

HOSTILE = [
    "<script>window.pwned = 1</script>",
    '<img src=x onerror="window.pwned = 1">',
    "[click](javascript:window.pwned=1)",
    '[x](https://a.example/"onmouseover="window.pwned=1)',
    "<svg onload=window.pwned=1>",
    "```\n</code></pre><script>window.pwned=1</script>\n```",
    '"<iframe src=javascript:window.pwned=1>"',
    "**<b onclick=1>bold</b>**",
    "`<style>body{display:none}</style>`",
    "\u0000B0\u0000 <u>x</u>",
]


def test_renderer_escapes_everything_and_formats(chromium: object, taverna: TavernaServer) -> None:
    page = chromium.new_page()  # type: ignore[attr-defined]
    page.goto(taverna.url + "/")
    results = page.evaluate(
        """async (inputs) => {
            const { renderMarkdown } = await import('/js/markdown.js');
            const box = document.createElement('div');
            document.body.append(box);
            return inputs.map((text) => {
                box.innerHTML = renderMarkdown(text);
                const tags = [...box.querySelectorAll('*')].map((el) => el.tagName.toLowerCase());
                const attrs = [...box.querySelectorAll('*')].flatMap((el) => [...el.attributes].map((a) => a.name));
                const hrefs = [...box.querySelectorAll('a')].map((a) => a.getAttribute('href'));
                return { tags, attrs, hrefs, text: box.textContent };
            });
        }""",
        HOSTILE,
    )
    allowed_tags = {
        "p",
        "br",
        "em",
        "strong",
        "code",
        "pre",
        "blockquote",
        "del",
        "q",
        "ul",
        "ol",
        "li",
        "h3",
        "h4",
        "h5",
        "hr",
        "a",
    }
    for source, result in zip(HOSTILE, results, strict=True):
        assert set(result["tags"]) <= allowed_tags, (source, result)
        assert set(result["attrs"]) <= {"class", "href", "target", "rel"}, (source, result)
        for href in result["hrefs"]:
            assert href.startswith("https://") or href.startswith("http://"), (source, href)
            assert '"' not in href
    assert page.evaluate("window.pwned") is None
    formatted = page.evaluate(
        """async () => {
            const { renderMarkdown } = await import('/js/markdown.js');
            return renderMarkdown('*soft* **loud** "said" `x`\\n\\n> quoted\\n\\n- a\\n- b\\n\\n「你好」');
        }"""
    )
    assert "<em>soft</em>" in formatted and "<strong>loud</strong>" in formatted
    assert '<q class="speech">&quot;said&quot;</q>' in formatted
    assert "<blockquote>" in formatted and "<ul><li>a</li><li>b</li></ul>" in formatted
    assert '<q class="speech">「你好」</q>' in formatted
    page.close()


# What cards, display-only regex scripts and Quick Replies may now put in a message as HTML.
HOSTILE_HTML = [
    *HOSTILE,
    '<a href="javascript:window.pwned=1">x</a>',
    '<form action="/api/x"><input name=a><button>go</button></form>',
    '<img src="https://evil.example/p.png"><img src="data:text/html,<b>x</b>">',
    '<div style="background:url(https://evil.example/x.png);position:fixed;inset:0">cover</div>',
    "<style>@import url(https://evil.example/x.css); body { display: none } .message ~ * { color: red }</style>",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.pwned=1></style></mglyph></table></mtext></math>",
    '<details open ontoggle="window.pwned=1">x</details>',
    '<object data="javascript:window.pwned=1"></object><embed src="/x"><link rel=stylesheet href="/x">',
    '<meta http-equiv="refresh" content="0;url=javascript:window.pwned=1"><base href="https://evil.example/">',
    '<svg><a href="javascript:window.pwned=1"><text>x</text></a><use href="https://evil.example/s.svg#a"/></svg>',
    '<p id="view">clobber</p><div name="toast">x</div>',
]


def test_rich_messages_keep_html_but_nothing_that_runs_loads_or_escapes(
    chromium: object, taverna: TavernaServer
) -> None:
    page = chromium.new_page()  # type: ignore[attr-defined]
    page.goto(taverna.url + "/")
    results = page.evaluate(
        """async (inputs) => {
            const { renderRich } = await import('/js/rich.js');
            const box = document.createElement('div');
            document.body.append(box);
            return inputs.map((text) => {
                renderRich(box, text);
                const all = [...box.querySelectorAll('*')];
                return {
                    tags: all.map((el) => el.tagName.toLowerCase()),
                    attrs: all.flatMap((el) => [...el.attributes].map((a) => [a.name, a.value])),
                    css: [...box.querySelectorAll('style')].map((s) => s.textContent).join('\\n'),
                    ids: all.map((el) => el.id).filter(Boolean),
                };
            });
        }""",
        HOSTILE_HTML,
    )
    page.wait_for_timeout(300)
    origin = taverna.url
    for source, result in zip(HOSTILE_HTML, results, strict=True):
        banned = {"script", "iframe", "form", "input", "button", "object", "embed", "link"}
        banned |= {"meta", "base", "math", "use"}
        assert not banned & set(result["tags"]), (source, result)
        for name, value in result["attrs"]:
            assert not name.startswith("on"), (source, name)
            assert name not in {"action", "formaction", "srcset"}, (source, name)
            assert "javascript:" not in value.lower(), (source, value)
            if name == "src":  # loads: only this server's pictures or data images
                resolved = urljoin(origin + "/", value)
                assert value.startswith("data:image/") or resolved.startswith(origin + "/"), (
                    source,
                    value,
                )
            assert "evil.example" not in value or name == "href", (source, name, value)
            if name == "style":
                assert "url(" not in value and "fixed" not in value, (source, value)
        assert "@import" not in result["css"] and "evil.example" not in result["css"], source
        for rule in filter(None, (r.strip() for r in result["css"].split("}"))):
            selector = rule.split("{")[0].strip()
            assert not selector or selector.startswith("[data-scope="), (source, rule)
        assert all(i.startswith("user-content-") for i in result["ids"]), (source, result["ids"])
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    assert page.locator("#view").count() == 1  # the page's own element, not the message's
    page.close()
