"""Writes the macro and regex oracle inputs: `_base_macro/`, `macro/NAME/` and `regex/NAME/`.

The cases are recorded by SillyTavern 1.12.6 with the capture harness (see README.md);
re-running this file rewrites the inputs (never the recorded `expected.json`). The card
and the chats are written here; `_base_macro/settings.json` is what the harness's set-up
left in SillyTavern (the persona "Rowan" and its description), kept from the recording.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).parent

CHAR = "Mara"
AVATAR = "Mara.png"
CHAT_USER = "Wren"  # the chat file's user_name; the persona is another name

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "name": CHAR,
    "description": "{{char}} keeps the lighthouse at Gull Point. She distrusts {{user}}.",
    "personality": "stern, patient, dry-humoured",
    "scenario": "A winter night at the lighthouse; {{user}} arrives by boat.",
    "first_mes": 'The lamp turns. "You\'re late, {{user}}."',
    "mes_example": "<START>\n{{user}}: Is the lamp lit?\n{{char}}: Always.\n<START>\n{{user}}: Cold out.\n{{char}}: Colder at sea.",
    "creator_notes": "Notes for {{char}} by the maker.",
    "tags": ["lighthouse", "winter"],
    "creator": "oracle",
    "character_version": "2.3-beta",
    "alternate_greetings": ["Another night, {{user}}."],
    "system_prompt": "Write {{char}}'s next line. {{original}}",
    "post_history_instructions": "Keep {{char}} terse.",
    "extensions": {
        "talkativeness": "0.5",
        "fav": False,
        "world": "",
        "depth_prompt": {"prompt": "{{char}} hides a letter.", "depth": 4, "role": "system"},
    },
}
CARD_FILE = {**CARD, "data": dict(CARD)}
for k in ("spec", "spec_version"):
    CARD_FILE["data"].pop(k)

DATE = "2024-09-28@10h00m00s"


def header(scenario=None, variables=None, extra=None):
    meta = {
        "chat_id_hash": 424242,
        "variables": variables
        if variables is not None
        else {"mood": "calm", "count": 3, "list": "[1,2]", "obj": '{"a":1}'},
    }
    if scenario is not None:
        meta["scenario"] = scenario
    meta.update(extra or {})
    return {
        "user_name": CHAT_USER,
        "character_name": CHAR,
        "create_date": DATE,
        "chat_metadata": meta,
    }


def msg(user, text, *, hidden=False, swipes=None, swipe_id=None, name=None, n=0):
    m = {
        "name": name or (CHAT_USER if user else CHAR),
        "is_user": user,
        "is_system": hidden,
        "send_date": f"September 28, 2024 10:{n:02d}am",
        "mes": text,
        "extra": {},
    }
    if swipes:
        m["swipes"] = swipes
        m["swipe_id"] = swipe_id
        m["swipe_info"] = [{"send_date": m["send_date"], "extra": {}} for _ in swipes]
    return m


GREETING = msg(False, 'The lamp turns. "You\'re late, Rowan."', n=0)
MAIN = [
    GREETING,
    msg(True, "The boat nearly sank.", n=1),
    msg(False, "Then dry off by the stove.", n=2),
    msg(True, "I brought the letter you asked for.", hidden=True, n=3),
    msg(False, "Leave it on the table.", n=4),
    msg(True, "What is in it, {{char}}?", n=5),
    msg(
        False,
        "Swipe B: nothing you need.",
        swipes=["Swipe A: a map.", "Swipe B: nothing you need.", "Swipe C: a name."],
        swipe_id=1,
        n=6,
    ),
]
CHATS = {
    "main": [header(), *MAIN],
    "override": [header(scenario="Override: the storm has cut the causeway."), *MAIN],
    "user_last": [header(), *MAIN[:6]],
    "hidden_last": [header(), *MAIN[:5], msg(True, "A hidden last word.", hidden=True, n=7)],
    "one": [header(), GREETING],
    "greeting_swipes": [
        header(),
        msg(False, "Hello there.", swipes=["Hello there.", "Hi.", "Hey."], swipe_id=2, n=0),
    ],
}

GLOBALS = {"weather": "fog", "gcount": 10}

macro_cases = []


def mc(name, text, chat="main", input_="typed words", compare="exact", note=""):
    macro_cases.append((name, text, chat, input_, compare, note))


# identity and card fields
mc("char", "{{char}}")
mc("user_is_persona", "{{user}}", note="persona name, not the chat file's user_name")
mc("char_upper", "{{CHAR}}")
mc("user_mixed_case", "{{User}} and {{uSeR}}")
mc("legacy_user", "<USER>")
mc("legacy_bot", "<BOT>")
mc("legacy_char", "<CHAR>")
mc("legacy_lower_case", "<user> met <bot>")
mc("legacy_group", "<GROUP>")
mc("legacy_charifnotgroup", "<CHARIFNOTGROUP>")
mc("legacy_only_no_braces", "<USER> said hi")
mc("group_solo", "{{group}}")
mc("charifnotgroup_solo", "{{charIfNotGroup}}")
mc("description", "{{description}}")
mc("description_upper", "{{DESCRIPTION}}")
mc("personality", "{{personality}}")
mc("scenario", "{{scenario}}")
mc("scenario_chat_override", "{{scenario}}", chat="override")
mc("persona", "{{persona}}")
mc("mes_examples", "{{mesExamples}}")
mc("mes_examples_raw", "{{mesExamplesRaw}}")
mc("char_prompt", "{{charPrompt}}")
mc("system_prompt", "{{systemPrompt}}")
mc("default_system_prompt", "{{defaultSystemPrompt}}")
mc("char_jailbreak", "{{charJailbreak}}")
mc("char_instruction", "{{charInstruction}}")
mc("char_version", "{{charVersion}}")
mc("char_version_underscore", "{{char_version}}")
mc("char_depth_prompt", "{{charDepthPrompt}}")
mc("creator_notes", "{{creatorNotes}}")
mc("model", "{{model}}")
mc("max_prompt", "{{maxPrompt}}")
mc("card_fields_together", "{{user}} / {{char}} / {{personality}} / {{charVersion}}")
# chat state on several chats
for chat in ("main", "user_last", "hidden_last", "one", "greeting_swipes"):
    for macro in (
        "lastMessage",
        "lastUserMessage",
        "lastCharMessage",
        "lastMessageId",
        "firstIncludedMessageId",
        "currentSwipeId",
        "lastSwipeId",
    ):
        mc(f"{macro}_{chat}", "{{" + macro + "}}", chat=chat)
mc("last_message_lower", "{{lastmessage}}")
mc("last_message_id_upper", "{{LASTMESSAGEID}}")
mc("last_message_in_sentence", "Last: [{{lastMessage}}] id {{lastMessageId}}")
# instruct / context template
for macro in (
    "chatStart",
    "exampleSeparator",
    "instructInput",
    "instructOutput",
    "instructSystem",
    "instructSeparator",
    "instructStop",
    "instructUserFiller",
    "instructSystemPrompt",
    "instructFirstOutput",
    "instructLastInput",
):
    mc(f"instruct_{macro}", "[{{" + macro + "}}]")
# input, newline, trim, noop, original
mc("input", "{{input}}")
mc("input_empty", "[{{input}}]", input_="")
mc("input_with_macro", "{{input}}", input_="{{char}} waves")
mc("input_upper", "{{INPUT}}")
mc("newline", "a{{newline}}b")
mc("newline_upper", "a{{NEWLINE}}b")
mc("newline_double", "a{{newline}}{{newline}}b")
mc("trim", "a\n\n{{trim}}\n\nb")
mc("trim_crlf", "a\r\n{{trim}}\r\nb")
mc("trim_start", "{{trim}}\nx")
mc("noop", "a{{noop}}b")
mc("noop_upper", "a{{NOOP}}b")
mc("original_outside_override", "[{{original}}]")
# random, roll, pick
mc("random_single", "{{random::solo}}")
mc("random_single_colon", "{{random:solo}}")
mc("random_same_items", "{{random::x,x,x}}")
mc("random_double_colon_items", "{{random::one::one}}")
mc("random_escaped_comma", "{{random::x\\,y}}")
mc("random_space", "{{random solo}}")
mc("random_set", "{{random::a,b,c}}", compare="oneof:a|b|c")
mc("roll_1d1", "{{roll:1d1}}")
mc("roll_d1_plus", "{{roll:d1+4}}")
mc("roll_space", "{{roll 3d1}}")
mc("roll_number_only", "{{roll:1}}")
mc("roll_bad", "{{roll:abc}}")
mc("pick_seeded", "{{pick::a,b,c,d}}")
mc("pick_twice", "{{pick::a,b,c,d}} {{pick::a,b,c,d}}")
mc("pick_single", "{{pick::only}}")
mc("pick_escaped_comma", "{{pick::a\\,b}}")
# variables
mc("getvar", "{{getvar::mood}}")
mc("getvar_number", "{{getvar::count}}")
mc("getvar_missing", "[{{getvar::nope}}]")
mc("getvar_json_text", "{{getvar::list}} {{getvar::obj}}")
mc("getvar_upper", "{{GETVAR::mood}}")
mc("setvar_then_get", "{{setvar::mood::storm}}{{getvar::mood}}")
mc("setvar_new", "x{{setvar::fresh::1}}y")
mc("setvar_value_with_colons", "{{setvar::k::a::b}}{{getvar::k}}")
mc("setvar_empty_value", "{{setvar::e::}}[{{getvar::e}}]")
mc("setvar_with_char", "{{setvar::who::{{char}}}}{{getvar::who}}")
mc("setvar_multiline", "{{setvar::a::1}}\n{{getvar::a}}")
mc("addvar_number", "{{addvar::count::2}}{{getvar::count}}")
mc("addvar_float", "{{addvar::count::0.5}}{{getvar::count}}")
mc("addvar_string", "{{addvar::mood::y}}{{getvar::mood}}")
mc("addvar_new", "{{addvar::nn::5}}{{getvar::nn}}")
mc("addvar_list", "{{addvar::list::3}}{{getvar::list}}")
mc("incvar", "{{incvar::count}}")
mc("decvar", "{{decvar::count}}")
mc("incvar_missing", "{{incvar::zz}}")
mc("incvar_string", "{{incvar::mood}}")
mc("getglobalvar", "{{getglobalvar::weather}}")
mc("getglobalvar_missing", "[{{getglobalvar::none}}]")
mc("setglobalvar", "{{setglobalvar::weather::rain}}{{getglobalvar::weather}}")
mc("addglobalvar", "{{addglobalvar::gcount::5}}{{getglobalvar::gcount}}")
mc("incglobalvar", "{{incglobalvar::gcount}}")
mc("decglobalvar", "{{decglobalvar::gcount}}")
mc(
    "local_and_global_same_name",
    "{{setvar::weather::x}}{{getvar::weather}}/{{getglobalvar::weather}}",
)
mc("var_name_with_space", "{{setvar::my var::v}}{{getvar::my var}}")
# misc
mc("banned", 'x{{banned "foo"}}y')
mc("comment", "a{{// hidden note}}b")
mc("comment_multiline", "a{{// one\ntwo}}b")
mc("comment_with_macro", "a{{// {{char}} }}b")
mc("reverse", "{{reverse:abc}}")
mc("reverse_non_bmp", "{{reverse:ab\U0001f600c}}")
mc("reverse_of_char", "{{reverse:{{char}}}}")
mc("unknown_macro", "{{unknownMacro}}")
mc("unknown_with_args", "{{foo::bar}}")
mc("empty_braces", "[{{}}]")
mc("unclosed", "{{char")
mc("no_macros", "plain text")
mc("triple_braces", "{{{char}}}")
mc("nested_unknown", "{{foo{{char}}}}")
mc("sentence", "{{user}} meets {{char}}: {{scenario}}")
mc("quotes", "\"{{char}}\" said '{{user}}'")
mc("escaped_braces", "\\{\\{char\\}\\}")
mc("pipe_inside", "a | b {{char}}")
mc("backslash_n", "one\\ntwo {{char}}")
mc("summary_absent", "[{{summary}}]")
mc("outlet_absent", "[{{outlet::x}}]")
# clock-like: only non-empty
for macro in ("time", "date", "weekday", "isotime", "isodate", "idle_duration"):
    mc(f"clock_{macro}", "{{" + macro + "}}", compare="nonempty")
mc("clock_datetimeformat", "{{datetimeformat YYYY}}", compare="nonempty")
mc("clock_time_utc", "{{time_UTC+2}}", compare="nonempty")
mc("clock_timediff", "{{timeDiff::2024-01-01::2024-01-02}}")


# ---------------------------------------------------------------- regex
INPUT = "The quick brown fox jumps over the lazy dog. Mara waves at Rowan."


def script(
    find,
    repl="",
    *,
    name="s",
    placement=(2,),
    trim=(),
    disabled=False,
    md=False,
    prompt=False,
    sub=False,
    min_depth=None,
    max_depth=None,
):
    return {
        "id": f"id-{name}",
        "scriptName": name,
        "findRegex": find,
        "replaceString": repl,
        "trimStrings": list(trim),
        "placement": list(placement),
        "disabled": disabled,
        "markdownOnly": md,
        "promptOnly": prompt,
        "runOnEdit": True,
        "substituteRegex": sub,
        "minDepth": min_depth,
        "maxDepth": max_depth,
    }


regex_cases = []


def rc(name, scripts, input_=INPUT, placement=2, md=False, prompt=False, depth=None, note=""):
    params = {"isMarkdown": md, "isPrompt": prompt}
    if depth is not None:
        params["depth"] = depth
    regex_cases.append((name, scripts, input_, placement, params, note))


# placements
rc("placement_user_input", [script("/fox/g", "cat", placement=(1,))], placement=1)
rc("placement_user_input_not_ai", [script("/fox/g", "cat", placement=(1,))], placement=2)
rc("placement_ai_output", [script("/fox/g", "cat", placement=(2,))], placement=2)
rc("placement_slash_command", [script("/fox/g", "cat", placement=(3,))], placement=3)
rc("placement_world_info", [script("/fox/g", "cat", placement=(5,))], placement=5)
rc("placement_reasoning_unknown_in_126", [script("/fox/g", "cat", placement=(6,))], placement=6)
rc("placement_several", [script("/fox/g", "cat", placement=(1, 2, 3))], placement=3)
rc("placement_none", [script("/fox/g", "cat", placement=())], placement=2)
# flags
rc("flags_none_first_only", [script("/o/", "0")])
rc("flags_g", [script("/o/g", "0")])
rc("flags_i", [script("/THE/i", "A")])
rc("flags_gi", [script("/THE/gi", "A")])
rc("flags_m", [script("/^b/gm", "B")], input_="a\nb\nb")
rc("flags_no_m", [script("/^b/g", "B")], input_="a\nb\nb")
rc("flags_s", [script("/quick.+?dog/s", "X")], input_="The quick\nbrown dog.")
rc("flags_no_s", [script("/quick.+?dog/", "X")], input_="The quick\nbrown dog.")
rc("flags_u_escape", [script("/\\u{1F600}/gu", "smile")], input_="a \U0001f600 b \U0001f600")
rc("flags_y_not_allowed", [script("/The/y", "A")])
rc("flags_y_literal_match", [script("/fox/y", "A")], input_="a /fox/y b")
rc("flags_d_not_allowed", [script("/fox/d", "A")], input_="fox /fox/d")
rc("flags_x_allowed_but_invalid", [script("/fox/x", "A")])
rc("flags_duplicate", [script("/fox/gg", "A")], input_="fox /fox/gg fox")
rc("flags_upper_G", [script("/fox/G", "A")], input_="fox /fox/G")
rc("pattern_without_slashes", [script("fo+x", "cat")], input_="fox fooox")
rc("pattern_single_slash", [script("/fox", "cat")], input_="a /fox b fox")
rc("pattern_invalid", [script("/(/g", "cat")])
rc("pattern_empty", [script("", "cat")])
# replacement strings
G2 = "/(\\w+) (\\w+)/"
rc("repl_group_1", [script("/(quick) (brown)/", "$2 $1")])
rc("repl_group_0", [script("/quick/", "[$0]")])
rc("repl_match_macro", [script("/quick/g", "[{{match}}]")])
rc("repl_match_macro_upper", [script("/quick/g", "[{{MATCH}}]")])
rc("repl_dollar_ampersand", [script("/quick/", "[$&]")])
rc("repl_double_dollar", [script("/quick/", "[$$]")])
rc("repl_backtick", [script("/fox/", "[$`]")])
rc("repl_quote", [script("/fox/", "[$']")])
rc("repl_named_group", [script("/(?<animal>fox)/", "[$<animal>]")])
rc("repl_named_group_number", [script("/(?<animal>fox)/", "[$1]")])
rc("repl_group_past_last_offset_zero", [script("/(The)/", "[$2]")])
rc("repl_group_past_last_offset", [script("/(fox)/", "[$2]")])
rc("repl_group_past_last_input", [script("/(fox)/", "[$3]")], input_="a fox b")
rc("repl_group_far_past", [script("/(fox)/", "[$9]")])
rc("repl_group_two_digits", [script("/(f)(o)(x)/", "[$10]")])
rc("repl_group_leading_zero", [script("/(fox)/", "[$01]")])
rc("repl_unmatched_optional_group", [script("/(fox)(zzz)?/", "[$1|$2]")])
rc("repl_named_past_last_with_groups", [script("/(?<a>fox)/", "[$3]")], input_="a fox b")
rc("repl_char_macro", [script("/fox/", "{{char}}")])
rc("repl_user_macro", [script("/fox/", "{{user}}")])
rc("repl_group_holding_macro", [script("/\\[(.+?)\\]/", "$1")], input_="say [{{char}}] now")
rc("repl_empty_deletes", [script("/ fox/g", "")])
rc("repl_newline_text", [script("/fox/", "a\\nb")])
# trim strings
rc("trim_in_group", [script("/(brown fox)/", "[$1]", trim=("o",))])
rc("trim_not_in_literal", [script("/(fox)/", "[$1 wood]", trim=("o",))])
rc("trim_with_macro", [script("/(Mara waves)/", "[$1]", trim=("{{char}}",))])
rc("trim_match_macro", [script("/brown fox/", "[{{match}}]", trim=("brown ",))])
rc("trim_several", [script("/(quick brown)/", "[$1]", trim=("q", "b"))])
# depth
rc("depth_below_min", [script("/fox/", "cat", min_depth=2)], depth=1)
rc("depth_at_min", [script("/fox/", "cat", min_depth=2)], depth=2)
rc("depth_above_max", [script("/fox/", "cat", max_depth=1)], depth=2)
rc("depth_at_max", [script("/fox/", "cat", max_depth=1)], depth=1)
rc("depth_none_given", [script("/fox/", "cat", min_depth=2, max_depth=3)])
rc("depth_minus_one_bounds", [script("/fox/", "cat", min_depth=-1, max_depth=-1)], depth=5)
rc("depth_zero_max_zero", [script("/fox/", "cat", max_depth=0)], depth=0)
rc("depth_negative_given", [script("/fox/", "cat", min_depth=2)], depth=-1)
# markdown-only / prompt-only
rc("markdown_only_on_markdown", [script("/fox/", "cat", md=True)], md=True)
rc("markdown_only_not_markdown", [script("/fox/", "cat", md=True)])
rc("plain_script_on_markdown", [script("/fox/", "cat")], md=True)
rc("prompt_only_on_prompt", [script("/fox/", "cat", prompt=True)], prompt=True)
rc("prompt_only_not_prompt", [script("/fox/", "cat", prompt=True)])
rc("plain_script_on_prompt", [script("/fox/", "cat")], prompt=True)
rc("markdown_only_on_prompt", [script("/fox/", "cat", md=True)], prompt=True)
rc("both_only_flags_on_prompt", [script("/fox/", "cat", md=True, prompt=True)], prompt=True)
rc("both_only_flags_plain", [script("/fox/", "cat", md=True, prompt=True)])
# substituteRegex
rc("substitute_regex_off", [script("/{{char}}/g", "X", sub=False)], input_="Mara and {{char}}")
rc("substitute_regex_on", [script("/{{char}}/g", "X", sub=True)], input_="Mara and {{char}}")
rc("substitute_regex_1", [script("/{{char}}/g", "X", sub=1)], input_="Mara and {{char}}")
rc("substitute_regex_2", [script("/{{user}}./g", "X", sub=2)], input_="Rowan. Rowan!")
rc("substitute_regex_user", [script("/{{user}}/g", "X", sub=True)], input_="Rowan and Wren")
# outside the BMP
SMILE = "\U0001f600"
rc("non_bmp_dot_without_u", [script("/./g", "x")], input_=f"a{SMILE}b")
rc("non_bmp_dot_with_u", [script("/./gu", "x")], input_=f"a{SMILE}b")
rc("non_bmp_anchored_without_u", [script("/^.$/", "one")], input_=SMILE)
rc("non_bmp_anchored_with_u", [script("/^.$/u", "one")], input_=SMILE)
rc("non_bmp_class_without_u", [script(f"/[{SMILE}]/g", "x")], input_=f"a{SMILE}b")
rc("non_bmp_class_with_u", [script(f"/[{SMILE}]/gu", "x")], input_=f"a{SMILE}b")
rc("non_bmp_literal_without_u", [script(f"/{SMILE}/g", "x")], input_=f"a{SMILE}b{SMILE}")
rc("non_bmp_escape_without_u", [script("/\\u{1F600}/g", "x")], input_=f"{SMILE} u{{1F600}}")
rc("non_bmp_group_trim", [script(f"/(a{SMILE})/", "[$1]", trim=(SMILE,))], input_=f"a{SMILE}b")
# disabled and order
rc("disabled_script", [script("/fox/", "cat", disabled=True)])
rc("order_chain", [script("/fox/", "cat", name="a"), script("/cat/", "dog", name="b")])
rc("order_chain_reversed", [script("/cat/", "dog", name="b"), script("/fox/", "cat", name="a")])
rc(
    "order_disabled_middle",
    [
        script("/fox/", "cat", name="a"),
        script("/cat/", "cow", name="b", disabled=True),
        script("/cat/", "dog", name="c"),
    ],
)
rc(
    "order_mixed_placements",
    [
        script("/fox/", "cat", name="a", placement=(1,)),
        script("/dog/", "cow", name="b", placement=(2,)),
    ],
)
rc("empty_input", [script("/^/", "x")], input_="")
rc(
    "repl_macro_chain_second_sees_output",
    [script("/fox/", "{{char}}", name="a"), script("/Mara/g", "M", name="b")],
)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main(out: str) -> None:
    write_json(
        os.path.join(out, "_base_macro", "base.json"),
        {
            "user_name": "Rowan",
            "char_name": CHAR,
            "avatar": AVATAR,
            "card": "Mara.json",
            "preserved_name": "Mara",
            "chat_user_name": CHAT_USER,
        },
    )
    write_json(os.path.join(out, "_base_macro", "Mara.json"), CARD_FILE)
    names = set()
    for name, text, chat, input_, compare, note in macro_cases:
        assert name not in names, name
        names.add(name)
        d = os.path.join(out, "macro", name)
        case = {
            "group": "macro",
            "name": name,
            "text": text,
            "chat": "chat.jsonl",
            "chat_variant": chat,
            "global_variables": "global_variables.json",
            "input": input_,
            "compare": compare,
        }
        if note:
            case["note"] = note
        write_json(os.path.join(d, "case.json"), case)
        write_jsonl(os.path.join(d, "chat.jsonl"), CHATS[chat])
        write_json(os.path.join(d, "global_variables.json"), GLOBALS)
    names = set()
    for name, scripts, input_, placement, params, note in regex_cases:
        assert name not in names, name
        names.add(name)
        d = os.path.join(out, "regex", name)
        case = {
            "group": "regex",
            "name": name,
            "regex_scripts": "scripts.json",
            "input": input_,
            "placement": placement,
            "params": params,
            "chat": "chat.jsonl",
            "global_variables": "global_variables.json",
        }
        if note:
            case["note"] = note
        write_json(os.path.join(d, "case.json"), case)
        write_json(os.path.join(d, "scripts.json"), scripts)
        write_jsonl(os.path.join(d, "chat.jsonl"), CHATS["main"])
        write_json(os.path.join(d, "global_variables.json"), GLOBALS)
    print(len(macro_cases), "macro cases,", len(regex_cases), "regex cases")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE))
