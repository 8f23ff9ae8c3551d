"""llama.cpp's `/completion` stream says how much of the prompt its cache held: the last
chunk's `timings.cache_n`, or `tokens_evaluated` less `timings.prompt_n` (the tokens
computed this time) from a server that gives no `cache_n`."""

from __future__ import annotations

import json

from taverna.providers.builders import stream_parser
from taverna.providers.events import Usage
from taverna.providers.request import Api


def _usage(last: dict[str, object]) -> Usage:
    parser = stream_parser(Api.LLAMACPP)
    events = parser.feed("", json.dumps({"content": "Hi", "stop": False}))
    events += parser.feed("", json.dumps({"content": "", "stop": True, **last}))
    found = [e for e in events if isinstance(e, Usage)]
    assert len(found) == 1
    return found[0]


def test_the_reused_tokens_are_the_evaluated_less_those_computed() -> None:
    usage = _usage({"tokens_evaluated": 900, "tokens_predicted": 12, "timings": {"prompt_n": 35}})
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (900, 12, 865)


def test_cache_n_is_taken_as_the_server_gives_it() -> None:
    usage = _usage(
        {
            "tokens_evaluated": 900,
            "tokens_predicted": 12,
            "timings": {"prompt_n": 35, "cache_n": 865},
        }
    )
    assert usage.cached_tokens == 865


def test_a_server_that_gives_no_timings_reports_no_reuse() -> None:
    assert _usage({"tokens_evaluated": 900, "tokens_predicted": 12}).cached_tokens is None


def test_a_whole_response_reports_its_reuse_too() -> None:
    parser = stream_parser(Api.LLAMACPP)
    events = parser.parse_response(
        {
            "content": "Hi",
            "tokens_evaluated": 50,
            "tokens_predicted": 2,
            "timings": {"prompt_n": 50},
        }
    )
    usage = [e for e in events if isinstance(e, Usage)]
    assert [u.cached_tokens for u in usage] == [0]
