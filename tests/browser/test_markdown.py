"""The page's markdown renderer in a real browser: formatting works and nothing from the text becomes HTML."""

from __future__ import annotations

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
