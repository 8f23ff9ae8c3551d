"""Writes the STscript oracle inputs: `_base/` and one `script/NAME/case.json` per case.

The cases are recorded by SillyTavern 1.12.6 with the capture harness (see README.md);
re-running this file rewrites the inputs (never the recorded `expected.json`).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
BASE = HERE / "script" / "_base"

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mara",
        "description": "{{char}} keeps the lighthouse on Gull Point and talks to {{user}} about ships.",
        "personality": "patient, dry, watchful",
        "scenario": "A storm night at the lighthouse; {{user}} has come in from the rain.",
        "first_mes": "The lamp is lit, {{user}}. Close the door behind you.",
        "mes_example": "<START>\n{{user}}: Any ships tonight?\n{{char}}: Two, and both late.",
        "creator_notes": "Test card for script cases.",
        "system_prompt": "You are {{char}}, a lighthouse keeper.",
        "post_history_instructions": "Stay in character as {{char}}.",
        "alternate_greetings": ["Rain again, {{user}}."],
        "tags": ["test"],
        "creator": "taverna",
        "character_version": "2.5",
        "extensions": {},
    },
}

HEADER = {
    "user_name": "Sam",
    "character_name": "Mara",
    "create_date": "2024-10-01@12h00m00s",
    "chat_metadata": {
        "variables": {"mood": "calm", "count": "3", "list": "[1,2,3]", "obj": '{"a":1,"b":"two"}'}
    },
}


def _msg(
    name: str,
    text: str,
    *,
    user: bool = False,
    system: bool = False,
    extra: dict | None = None,
    swipes: list[str] | None = None,
) -> dict:
    row: dict = {
        "name": name,
        "is_user": user,
        "is_system": system,
        "send_date": "October 1, 2024 12:00pm",
        "mes": text,
        "extra": extra or {},
    }
    if swipes:
        row["swipes"] = swipes
        row["swipe_id"] = swipes.index(text)
        row["swipe_info"] = [{"send_date": row["send_date"], "extra": {}} for _ in swipes]
    return row


CHAT = [
    HEADER,
    _msg(
        "Mara",
        "The lamp is lit, Sam. Close the door behind you.",
        swipes=["The lamp is lit, Sam. Close the door behind you.", "Rain again, Sam."],
    ),
    _msg("Sam", "Any ships tonight?", user=True),
    _msg("Mara", "Two, and both late. The *Heron* and the *Dove*."),
    _msg("Sam", "I brought bread.", user=True, system=True),
    _msg("Mara", "Put it by the stove.", swipes=["Put it by the stove.", "Thank you, truly."]),
]

GLOBALS = {"gold": "10", "title": "Keeper", "arr": '["a","b"]'}

REGEX = [
    {
        "id": "r1",
        "scriptName": "shout",
        "findRegex": "/lamp/g",
        "replaceString": "LAMP",
        "trimStrings": [],
        "placement": [1, 2],
        "disabled": False,
        "markdownOnly": False,
        "promptOnly": False,
        "runOnEdit": True,
        "substituteRegex": 0,
        "minDepth": None,
        "maxDepth": None,
    },
    {
        "id": "r2",
        "scriptName": "swap",
        "findRegex": "/(\\w+) (\\w+)/",
        "replaceString": "$2 $1",
        "trimStrings": [],
        "placement": [1],
        "disabled": False,
        "markdownOnly": False,
        "promptOnly": False,
        "runOnEdit": True,
        "substituteRegex": 0,
        "minDepth": None,
        "maxDepth": None,
    },
    {
        "id": "r3",
        "scriptName": "off",
        "findRegex": "/a/g",
        "replaceString": "b",
        "trimStrings": [],
        "placement": [1],
        "disabled": True,
        "markdownOnly": False,
        "promptOnly": False,
        "runOnEdit": True,
        "substituteRegex": 0,
        "minDepth": None,
        "maxDepth": None,
    },
]

CASES: list[tuple[str, str] | tuple[str, str, dict]] = []


def case(name: str, script: str, **extra: object) -> None:
    CASES.append((name, script, extra))


# ---------------------------------------------------------------- pipes and basics
case("pass_plain", "/pass hello")
case("pass_empty", "/pass")
case("pass_pipe_chain", "/pass a | /pass b")
case("pipe_macro", "/pass one | /pass {{pipe}} two")
case("pipe_implicit", "/pass one | /echo")
case("pipe_to_setvar", "/pass sea | /setvar key=x | /getvar x")
case("return_alias", "/return hi")
case("pass_spaces", "/pass   lots   of   space  ")
case("pass_multiline", "/pass line1\nline2")
case("pipe_across_lines", "/pass a |\n/pass {{pipe}}b")
case("comment_double_slash", "// a comment | /pass after")
case("comment_hash", "/# note here | /pass x")
case("comment_only", "// nothing")
case("empty_script", "")
case("pipe_nothing_after", "/pass x |")
case("double_pipe", "/pass x || /pass y")
case("echo_returns", "/echo hi there")
case("echo_severity", "/echo severity=warning careful")
case("pipe_number", "/add 1 2 | /add {{pipe}} 3")
case("pipe_after_setvar", "/setvar key=a 5 |")
case("pipe_after_setvar_pass", "/setvar key=a 5 | /pass [{{pipe}}]")
case("help_returns", "/help pass | /len")
case("unknown_command", "/nosuchcommand hi")
case("unknown_after_set", "/setvar key=before 1 | /nosuchcommand | /setvar key=after 2")
case("text_without_slash", "hello world")
case("leading_spaces", "   /pass x")
case("slash_only", "/")
case("pass_pipe_literal", "/pass a\\|b")
case("pass_quoted_pipe", '/pass "a|b"')
case("breakpoint_ignored", "/pass a | /breakpoint | /pass {{pipe}}b")

# ---------------------------------------------------------------- chat variables
case("setvar_getvar", "/setvar key=x hello | /getvar x")
case("setvar_overwrite", "/setvar key=mood stormy | /getvar mood")
case("getvar_existing", "/getvar mood")
case("getvar_missing", "/getvar nope")
case("getvar_macro", "/pass {{getvar::count}}")
case("getvar_macro_missing", "/pass [{{getvar::nope}}]")
case("setvar_empty_value", "/setvar key=x | /getvar x")
case("setvar_no_key", "/setvar hello")
case("setvar_index_list", "/setvar key=list index=1 x | /getvar list")
case("setvar_index_new", "/setvar key=fresh index=0 x | /getvar fresh")
case("setvar_index_obj", "/setvar key=obj index=c 3 | /getvar obj")
case("getvar_index_list", "/getvar index=2 list")
case("getvar_index_obj", "/getvar index=b obj")
case("getvar_index_missing", "/getvar index=9 list")
case("addvar_number", "/addvar key=count 4 | /getvar count")
case("addvar_string", "/addvar key=mood y | /getvar mood")
case("addvar_new", "/addvar key=newv 5 | /getvar newv")
case("addvar_list", "/addvar key=list 4 | /getvar list")
case("addvar_negative", "/addvar key=count -10")
case("addvar_float", "/addvar key=count 0.5")
case("incvar", "/incvar count")
case("incvar_new", "/incvar brandnew")
case("incvar_string", "/incvar mood")
case("decvar", "/decvar count | /decvar count")
case("flushvar_missing", "/flushvar nothing")
case("setvar_as_number", "/setvar key=n as=number 0012 | /getvar n")
case("setvar_as_array", "/setvar key=l as=array 1 | /getvar l")
case("chat_aliases", "/setchatvar key=q 1 | /addchatvar key=q 2 | /incchatvar q | /getchatvar q")
case("setvar_unicode_name", "/setvar key=ключ значение | /getvar ключ")
case("setvar_spaces_in_key", '/setvar key="two words" v | /getvar "two words"')
case("var_name_with_dot", "/setvar key=a.b c | /pass {{getvar::a.b}}")
case("setvar_json_value", '/setvar key=j {"k": 1} | /getvar index=k j')
case("setvar_then_getvar_macro_same_line", "/setvar key=z 7 | /pass {{getvar::z}}")
case("setvar_macro_in_value", "/setvar key=w {{char}} and {{user}} | /getvar w")
case("setvar_pipe_value", "/pass piped | /setvar key=p | /getvar p")

# ---------------------------------------------------------------- global variables
case("setglobalvar", "/setglobalvar key=g1 v | /getglobalvar g1")
case("getglobalvar_existing", "/getglobalvar gold")
case("getglobalvar_macro", "/pass {{getglobalvar::title}}")
case("addglobalvar", "/addglobalvar key=gold 5 | /getglobalvar gold")
case("incglobalvar", "/incglobalvar gold")
case("decglobalvar", "/decglobalvar gold")
case("flushglobalvar", "/flushglobalvar title")
case("global_index", "/getglobalvar index=1 arr")
case("setglobalvar_index", "/setglobalvar key=arr index=0 z | /getglobalvar arr")
case(
    "global_vs_chat_same_name",
    "/setvar key=gold chatgold | /getvar gold | /pass {{pipe}}-{{getglobalvar::gold}}",
)
case("global_missing", "/getglobalvar nope")
case("addglobalvar_list", "/addglobalvar key=arr c | /getglobalvar arr")
case("flushglobalvar_all_missing", "/flushglobalvar")
case("flushvar_empty", "/flushvar")

# ---------------------------------------------------------------- scoped variables
case("let_var", "/let x 5 | /var x")
case("let_key", "/let key=x 5 | /var x")
case("let_pipe", "/pass p | /let x | /var x")
case("let_empty", "/let x | /var x")
case("var_set", "/let x 1 | /var x 2 | /var x")
case("var_key_set", "/let x 1 | /var key=x 3 | /var x")
case("var_undeclared_set", "/var y 2 | /var y")
case("var_undeclared_get", "/var nope")
case("let_twice", "/let x 1 | /let x 2 | /var x")
case("var_macro", "/let x 5 | /pass {{var::x}}")
case("var_macro_missing", "/pass [{{var::nope}}]")
case(
    "let_shadow_closure",
    "/let x outer | /let f {: /let x inner | /var x :} | /:f | /pass {{pipe}}-{{var::x}}",
)
case("var_set_in_closure", "/let x outer | /let f {: /var x inner :} | /:f | /var x")
case("let_not_chatvar", "/let mood scoped | /getvar mood")
case("var_index", "/let l [1,2,3] | /var index=1 l")
case("var_as_number", "/let n 0 | /var key=n as=number 7 | /var n")
case("let_closure_value", "/let f {: /pass from closure :} | /:f")
case("let_list_json", '/let x ["a","b"] | /var index=0 x')
case("var_vs_getvar_macro", "/let x scoped | /setvar key=x chat | /pass {{var::x}}/{{getvar::x}}")
case("let_unicode", "/let ё 1 | /var ё")

# ---------------------------------------------------------------- closures
case("closure_run", "/run {: /pass ran :}")
case("closure_immediate", "/pass {: /pass now :}()")
case("closure_as_value", "/let f {: /pass x :} | /var f")
case("closure_pipe_value", "/pass {: /pass x :} | /run")
case("closure_args", "/let f {: a=1 /pass {{var::a}} :} | /:f a=2")
case("closure_arg_default", "/let f {: a=1 /pass {{var::a}} :} | /:f")
case("closure_nested", "/run {: /run {: /pass deep :} | /pass {{pipe}}er :}")
case("closure_pipe_in", "/pass in | /let f {: /pass got {{pipe}} :} | /:f")
case("closure_unclosed", "/run {: /pass x")
case("closure_extra_close", "/pass x :}")
case("closure_multiline", "/let f {:\n  /pass a |\n  /pass {{pipe}}b\n:} | /:f")
case("closure_escape_macro", "/let f {: /pass {{pipe}} :} | /pass outer | /:f")
case("closure_serialize", "/closure-serialize {: /pass x :}")
case(
    "closure_serialize_deserialize",
    "/closure-serialize {: /pass round :} | /closure-deserialize | /run",
)
case("closure_deserialize_text", "/closure-deserialize {: /pass t :} | /run")
case("run_unknown", "/run nosuchthing")
case("run_varname", "/let f {: /pass byname :} | /run f")
case("colon_unknown", "/:nosuch")
case("closure_returns_last", "/run {: /pass a | /pass b :}")
case("closure_scope_setvar", "/run {: /setvar key=inner v :} | /getvar inner")
case("closure_arg_macro", "/let f {: x=0 /pass <{{var::x}}> :} | /:f x={{char}}")
case("closure_run_args", "/let f {: n=1 /mul {{var::n}} 2 :} | /run f n=21")
case(
    "closure_recursive_guard",
    "/let d 0 | /let f {: /incvar zz | /if left={{getvar::zz}} rule=lt right=3 {: /:f :} :} | /:f | /getvar zz",
)
case("closure_nested_scope_read", "/let a 1 | /run {: /run {: /var a :} :}")

# ---------------------------------------------------------------- flow: if
case("if_eq_true", "/if left=1 right=1 rule=eq {: /pass yes :}")
case("if_eq_false", "/if left=1 right=2 rule=eq {: /pass yes :}")
case("if_else", "/if left=1 right=2 rule=eq else={: /pass no :} {: /pass yes :}")
case("if_neq", "/if left=a right=b rule=neq {: /pass diff :}")
case("if_lt", "/if left=2 right=10 rule=lt {: /pass less :}")
case("if_lt_strings", "/if left=b right=a rule=lt else={: /pass notless :} {: /pass less :}")
case("if_gt", "/if left=10 right=2 rule=gt {: /pass more :}")
case("if_lte", "/if left=2 right=2 rule=lte {: /pass ok :}")
case("if_gte", "/if left=1 right=2 rule=gte else={: /pass nope :} {: /pass ok :}")
case("if_in", "/if left=lighthouse right=light rule=in {: /pass in :}")
case("if_nin", "/if left=lighthouse right=ship rule=nin {: /pass notin :}")
case("if_not", "/if left=0 rule=not {: /pass notted :}")
case("if_not_empty", '/if left="" rule=not {: /pass empty :}')
case("if_default_rule", "/if left=a right=a {: /pass same :}")
case("if_varname_left", "/if left=count right=3 rule=eq {: /pass byname :}")
case("if_varname_right", "/if left=calm right=mood rule=eq {: /pass byname :}")
case("if_macro_left", "/if left={{getvar::count}} right=3 rule=eq {: /pass macro :}")
case("if_bad_rule", "/if left=1 right=1 rule=weird {: /pass x :}")
case("if_no_closure", "/if left=1 right=1 rule=eq /pass x")
case("if_text_command", '/if left=1 right=1 rule=eq "/pass quoted"')
case("if_pipe_out_false", "/pass before | /if left=1 right=2 rule=eq {: /pass yes :}")
case("if_nested", "/if left=1 right=1 {: /if left=2 right=2 {: /pass both :} :}")
case("if_numeric_strings", "/if left=10 right=9 rule=gt else={: /pass no :} {: /pass yes :}")
case("if_eq_number_string", "/if left=1.0 right=1 rule=eq else={: /pass no :} {: /pass yes :}")
case("if_left_missing", "/if right=1 rule=eq {: /pass x :}")
case("if_sets_var", "/if left=1 right=1 {: /setvar key=flag on :} | /getvar flag")

# ---------------------------------------------------------------- flow: loops
case("times_basic", "/times 3 {: /addvar key=t 1 :} | /getvar t")
case("times_index", "/times 3 {: /addvar key=s {{timesIndex}} :} | /getvar s")
case("times_pipe", "/times 2 {: /pass {{timesIndex}} :}")
case("times_zero", "/pass before | /times 0 {: /pass in :}")
case(
    "times_break",
    "/times 5 {: /addvar key=t 1 | /if left={{timesIndex}} right=2 rule=eq {: /break :} :} | /getvar t",
)
case("times_break_value", "/times 5 {: /break stopped :}")
case("times_var", "/times count {: /incvar t :} | /getvar t")
case("times_guard", "/times 200 {: /incvar t :} | /getvar t")
case("times_guard_off", "/times 150 guard=off {: /incvar t :} | /getvar t")
case("times_text_command", '/times 2 "/incvar t" | /getvar t')
case("while_basic", "/setvar key=i 0 | /while left=i right=3 rule=lt {: /incvar i :} | /getvar i")
case("while_guard", "/setvar key=i 0 | /while left=1 right=1 {: /incvar i :} | /getvar i")
case(
    "while_guard_off",
    "/setvar key=i 0 | /while left=i right=120 rule=lt guard=off {: /incvar i :} | /getvar i",
)
case(
    "while_break",
    "/setvar key=i 0 | /while left=1 right=1 {: /incvar i | /if left=i right=4 rule=eq {: /break :} :} | /getvar i",
)
case("while_false_start", "/pass keep | /while left=1 right=2 rule=eq {: /pass loop :}")
case(
    "while_macro_left",
    "/setvar key=i 0 | /while left={{getvar::i}} right=3 rule=lt {: /incvar i :} | /getvar i",
)
case("while_pipe", "/setvar key=i 0 | /while left=i right=2 rule=lt {: /incvar i :}")
case("break_outside_loop", "/pass a | /break | /pass b")
case("break_value_outside", "/break out | /pass never")
case("break_in_closure_run", "/run {: /pass a | /break | /pass b :} | /pass after {{pipe}}")
case(
    "break_in_if_top", "/if left=1 right=1 {: /break | /setvar key=x inner :} | /setvar key=y after"
)
case("break_nested_loop", "/times 2 {: /times 3 {: /addvar key=c 1 | /break :} :} | /getvar c")
case("return_in_closure", "/run {: /return r | /pass not :}")
case("return_outside", "/return early | /setvar key=after 1")
case("return_in_loop", "/times 3 {: /incvar t | /return r :} | /getvar t")
case("abort_basic", "/setvar key=a 1 | /abort | /setvar key=b 2")
case("abort_reason", "/abort reason")
case("abort_quiet", "/abort quiet=true why")
case("abort_quiet_false", "/abort quiet=false why")
case("abort_in_closure", "/run {: /abort inner :} | /setvar key=after 1")
case("abort_in_loop", "/times 3 {: /incvar t | /abort :} | /setvar key=after 1")

# ---------------------------------------------------------------- math
case("add_two", "/add 1 2")
case("add_many", "/add 1 2 3 4.5")
case("add_varnames", "/add count gold")
case("add_list", "/add [1,2,3]")
case("add_list_var", "/add list")
case("add_strings", "/add a b")
case("add_one", "/add 7")
case("add_none", "/add")
case("sub", "/sub 10 3")
case("sub_many", "/sub 10 3 2")
case("sub_negative_result", "/sub 3 10")
case("mul", "/mul 2 3 4")
case("div", "/div 10 4")
case("div_zero", "/div 1 0")
case("div_zero_zero", "/div 0 0")
case("mod", "/mod 10 3")
case("mod_negative", "/mod -7 3")
case("pow", "/pow 2 10")
case("pow_fraction", "/pow 9 0.5")
case("max", "/max 3 9 1")
case("min", "/min 3 9 1")
case("max_list", "/max [4,8,2]")
case("sin", "/sin 0")
case("cos", "/cos 0")
case("log", "/log 1")
case("log_e", "/log 10")
case("abs", "/abs -5")
case("sqrt", "/sqrt 16")
case("sqrt_negative", "/sqrt -1")
case("round_down", "/round 2.4")
case("round_half", "/round 2.5")
case("round_negative_half", "/round -2.5")
case("float_sum", "/add 0.1 0.2")
case("big_mul", "/mul 99999999 99999999")
case("rand_fixed", "/rand from=5 to=5")
case("rand_round_fixed", "/rand from=3 to=3 round=floor")
case(
    "rand_in_range",
    "/rand from=1 to=6 round=round | /if left={{pipe}} right=1 rule=gte {: /pass ok :}",
)
case("math_pipe_chain", "/add 2 3 | /mul {{pipe}} 10 | /sub {{pipe}} 1")
case("math_var_missing", "/add nope 1")
case("math_exponent_string", "/add 1e3 1")
case("math_hex", "/add 0x10 1")
case("math_spaces_in_number", '/add " 5 " 1')
case("len_text", "/len hello")
case("len_list", "/len [1,2,3,4]")
case("len_object", '/len {"a":1,"b":2}')
case("len_var", "/len mood")
case("len_empty", "/len")
case("len_unicode", "/len héllo")
case("len_emoji", "/len 🐳x")
case("length_alias", "/length abc")

# ---------------------------------------------------------------- text commands
case("trimstart", "/trimstart   x  y  ")
case("trimend", "/trimend x. Then y")
case("trimend_complete", "/trimend It ended. It did not")
case("trimstart_sentence", "/trimstart fragment. Whole sentence.")
case("fuzzy_basic", '/fuzzy list=["ship","shore","lamp"] shp')
case("fuzzy_nomatch", '/fuzzy list=["ship","shore"] zzzz')
case("fuzzy_threshold", '/fuzzy list=["ship","shore"] threshold=0.1 shop')
case("fuzzy_mode_best", '/fuzzy list=["a lamp","lamp"] mode=best lamp')
case("fuzzy_in_text", '/fuzzy list=["storm","calm"] it is a calm night')
case("fuzzy_var_list", '/setvar key=opts ["red","green"] | /fuzzy list=opts gren')
case("regex_named", "/regex name=shout the lamp is lit", regex="scripts.json")
case("regex_swap", "/regex name=swap hello world", regex="scripts.json")
case("regex_disabled", "/regex name=off banana", regex="scripts.json")
case("regex_missing", "/regex name=nope text", regex="scripts.json")
case("regex_no_name", "/regex text", regex="scripts.json")
case("echo_macro", "/echo {{char}}")
case("setinput", "/setinput new text | /pass {{input}}")
case("input_macro", "/pass [{{input}}]", input="typed words")
case("trimtokens_end", "/trimtokens limit=2 direction=end one two three four five")
case("tokens_count", "/tokens hello")

# ---------------------------------------------------------------- quoting, escapes and parser flags
case("quote_unnamed", '/pass "quoted text"')
case("quote_unnamed_inner", '/pass say "hi" now')
case("quote_named", '/setvar key="k" "v v" | /getvar k')
case("quote_named_value", '/echo severity="info" x')
case("escape_pipe", "/pass a \\| b")
case("escape_backslash", "/pass a \\\\ b")
case("escape_brace", "/pass \\{: not a closure :\\}")
case("escape_macro", "/pass \\{\\{char\\}\\}")
case("escape_quote", '/pass \\"x\\"')
case("escape_n", "/pass a\\nb")
case("escape_in_quotes", '/pass "a \\" b"')
case("pipe_in_closure_text", "/run {: /pass a\\|b :}")
case("escape_strict_off", "/parser-flag STRICT_ESCAPING off | /pass a \\| b")
case("escape_strict_off_quote", '/parser-flag STRICT_ESCAPING off | /pass "a|b"')
case("escape_strict_on_quote_pipe", '/parser-flag STRICT_ESCAPING on | /pass "a|b"')
case("getvar_replaced_late", "/setvar key=x 1 | /setvar key=x 2 | /pass {{getvar::x}}")
case("getvar_after_set_same_cmd", "/pass {{getvar::x}} | /setvar key=x 9 | /pass {{getvar::x}}")
case(
    "replace_getvar_off",
    "/parser-flag REPLACE_GETVAR off | /setvar key=x {{getvar::mood}} | /getvar x",
)
case(
    "replace_getvar_on_macro_value",
    "/setvar key=m {{char}} | /setvar key=x {{getvar::m}} | /getvar x",
)
case("replace_getvar_value_with_macro", "/setvar key=x \\{\\{user\\}\\} | /pass {{getvar::x}}")
case(
    "replace_getvar_off_value_macro",
    "/parser-flag REPLACE_GETVAR off | /setvar key=x \\{\\{user\\}\\} | /pass {{getvar::x}}",
)
case("getvar_with_pipe_value", "/setvar key=x a|b | /pass {{getvar::x}}")
case("getvar_value_pipe_escaped", "/setvar key=x a\\|b | /pass [{{getvar::x}}]")
case("getglobalvar_in_closure", "/run {: /pass {{getglobalvar::gold}} :}")
case("getvar_in_closure_late", "/let f {: /pass {{getvar::late}} :} | /setvar key=late set | /:f")
case("getvar_upper", "/pass {{GETVAR::mood}}")
case("parser_flag_unknown", "/parser-flag NOPE on | /pass x")
case("parser_flag_no_state", "/parser-flag STRICT_ESCAPING | /pass a\\|b")
case("unnamed_then_named", "/pass x key=y")
case("named_after_unnamed", "/setvar x key=y")
case("named_unknown", "/pass foo=bar baz")
case("named_with_colon", "/pass a:b")
case("named_value_equals", "/setvar key=e a=b | /getvar e")
case("macro_in_named", "/setvar key={{char}} v | /getvar Mara")
case("closure_braces_in_text", "/pass {{char}}: {x}")
case("quoted_closure_text", '/pass "{: /pass x :}"')
case("pipe_escaped_in_quotes_off", '/parser-flag STRICT_ESCAPING off | /pass "a\\|b"')
case("trailing_backslash", "/pass abc\\")

# ---------------------------------------------------------------- writing to the chat
case("send_basic", "/send Hello there")
case("send_macro", "/send I am {{user}}, you are {{char}}")
case("send_pipe", "/pass piped text | /send")
case("send_at_0", "/send at=0 first!")
case("send_at_2", "/send at=2 middle")
case("send_at_negative", "/send at=-1 before last")
case("send_at_big", "/send at=99 far")
case("send_name", "/send name=Visitor knock knock")
case("send_returns", "/send x | /pass [{{pipe}}]")
case("send_empty", "/send")
case("send_twice", "/send a | /send b")
case("sendas_named", "/sendas name=Mara Hello")
case("sendas_other", "/sendas name=Stranger Who's there?")
case("sendas_no_name", "/sendas hello without name")
case("sendas_macro", "/sendas name={{char}} I am {{char}}")
case("sendas_at", "/sendas name=Mara at=1 inserted")
case("sendas_at_0", "/sendas name=Stranger at=0 first")
case("sendas_compact", "/sendas name=Mara compact=true short")
case("sendas_quoted_name", '/sendas name="Old Tom" ahoy')
case("sendas_empty", "/sendas name=Mara")
case("sendas_returns", "/sendas name=Mara x | /pass [{{pipe}}]")
case("sys_basic", "/sys The storm grows.")
case("sys_macro", "/sys {{char}} looks at {{user}}.")
case("sys_at", "/sys at=1 An aside.")
case("sys_at_0", "/sys at=0 Prologue")
case("sys_empty", "/sys")
case("sys_returns", "/sys x | /pass [{{pipe}}]")
case("nar_alias", "/nar narrated")
case("sysname_then_sys", "/sysname Narrator | /sys Night falls.")
case("sysname_reset", "/sysname Narrator | /sysname | /sys Night falls.")
case("sysname_returns", "/sysname Voice | /pass [{{pipe}}]")
case("comment_basic", "/comment a note")
case("comment_macro", "/comment {{user}} wrote this")
case("comment_at", "/comment at=2 mid note")
case("comment_at_0", "/comment at=0 top note")
case("comment_returns", "/comment x | /pass [{{pipe}}]")
case("addswipe_last", "/addswipe Another answer")
case("addswipe_returns", "/addswipe Another | /pass [{{pipe}}]")
case("addswipe_after_user", "/send question | /addswipe swipe on user")
case("addswipe_empty", "/addswipe")
case("delswipe_current", "/delswipe")
case("delswipe_index", "/delswipe 1")
case("delswipe_no_swipes", "/send q | /sendas name=Mara a | /delswipe")
case("hide_one", "/hide 1")
case("hide_range", "/hide 0-2")
case("hide_returns", "/hide 1 | /pass [{{pipe}}]")
case("unhide_one", "/unhide 3")
case("unhide_range", "/unhide 0-4")
case("hide_bad", "/hide foo")
case("hide_out_of_range", "/hide 50")
case("cut_one", "/cut 1")
case("cut_range", "/cut 1-2")
case("cut_returns", "/cut 4 | /pass [{{pipe}}]")
case("cut_last", "/cut 4")
case("cut_bad", "/cut x")
case("cut_out_of_range", "/cut 40")
case("del_one", "/del 1")
case("del_two", "/del 2")
case("del_too_many", "/del 50")
case("del_zero", "/del 0")
case("del_no_arg", "/del")
case("delname_sam", "/delname Sam")
case("delname_missing", "/delname Nobody")
case("messages_one", "/messages 2")
case("messages_range", "/messages 0-2")
case("messages_names", "/messages names=on 1")
case("messages_names_off", "/messages names=off 1")
case("messages_hidden_default", "/messages 2-4")
case("messages_hidden_on", "/messages hidden=on 2-4")
case("messages_hidden_off", "/messages hidden=off 2-4")
case("messages_role_user", "/messages role=user 0-4")
case("messages_role_assistant", "/messages role=assistant 0-4")
case("messages_role_system", "/sys narr | /messages role=system 0-5")
case("messages_out_of_range", "/messages 99")
case("messages_bad", "/messages abc")
case("messages_open_range", "/messages 3-")
case("messages_after_send", "/send new | /messages 5")
case("message_alias", "/message 0")
case("send_then_cut", "/send temp | /cut 5")
case("sendas_then_hide", "/sendas name=Mara hi | /hide 5")
case("chat_then_error", "/send kept | /nosuch | /send lost")
case("chat_then_abort", "/sys kept | /abort | /sys lost")
case("sendas_loop", "/times 2 {: /sendas name=Mara n{{timesIndex}} :}")
case("send_with_pipe_char", "/send a \\| b")
case("sys_multiline", "/sys line one\nline two")

# ---------------------------------------------------------------- errors and what they leave
case("error_after_setvar", "/setvar key=x 1 | /nosuch | /setvar key=y 2")
case("error_after_setglobal", "/setglobalvar key=gx 1 | /nosuch")
case("error_in_closure_after_set", "/run {: /setvar key=x 1 | /cut zz | /setvar key=y 2 :}")
case("error_runtime_after_set", "/setvar key=x 1 | /div a | /setvar key=y 2")
case("error_missing_required", "/setvar key=x 1 | /if")
case("error_run_missing_after_set", "/setvar key=x 1 | /run nothing_here | /setvar key=y 2")
case("error_in_loop_after_set", "/times 3 {: /incvar t | /run missing :} | /setvar key=y 2")
case("error_unclosed_quote", '/pass "abc')
case("error_bad_closure_nesting", "/run {: {: :}")
case("error_colon_missing", "/setvar key=x 1 | /:missing | /setvar key=y 2")
case("error_messages_bad_role", "/messages role=bogus 0")
case("error_while_no_closure", "/while left=1 right=2")
case("error_closure_deserialize_bad", "/closure-deserialize not a closure")
case("error_after_send", "/send kept message | /if left=1 rule=weird {: /pass :}")
case("error_member_outside_group", "/member-disable Mara")
case("error_unknown_flag_value", "/parser-flag STRICT_ESCAPING maybe | /pass x")
case("error_times_no_count", "/times {: /pass x :}")
case("error_let_no_name", "/let")
case("error_var_no_name", "/var")
case("error_fuzzy_no_list", "/fuzzy shp")
case("error_abort_then_set", "/setglobalvar key=ga 1 | /abort stop | /setglobalvar key=gb 2")

# ---------------------------------------------------------------- macros inside scripts
case("m_user", "/pass {{user}}")
case("m_char", "/pass {{char}}")
case("m_description", "/pass {{description}}")
case("m_personality", "/pass {{personality}}")
case("m_scenario", "/pass {{scenario}}")
case("m_persona", "/pass {{persona}}")
case("m_mesexamples", "/pass {{mesExamples}}")
case("m_mesexamplesraw", "/pass {{mesExamplesRaw}}")
case("m_charprompt", "/pass {{charPrompt}}")
case("m_charjailbreak", "/pass {{charJailbreak}}")
case("m_charversion", "/pass {{charVersion}}")
case("m_char_version_alias", "/pass {{char_version}}")
case("m_lastmessage", "/pass {{lastMessage}}")
case("m_lastmessageid", "/pass {{lastMessageId}}")
case("m_lastusermessage", "/pass {{lastUserMessage}}")
case("m_lastcharmessage", "/pass {{lastCharMessage}}")
case("m_firstincludedmessageid", "/pass [{{firstIncludedMessageId}}]")
case("m_currentswipeid", "/pass {{currentSwipeId}}")
case("m_lastswipeid", "/pass {{lastSwipeId}}")
case("m_group", "/pass {{group}}")
case("m_groupnotmuted", "/pass {{groupNotMuted}}")
case("m_notchar", "/pass {{notChar}}")
case("m_model", "/pass [{{model}}]")
case("m_newline", "/pass a{{newline}}b")
case("m_trim", "/pass a {{trim}} b")
case("m_noop", "/pass a{{noop}}b")
case("m_comment", "/pass a{{// hidden}}b")
case("m_input", "/pass {{input}}", input="from the box")
case("m_original", "/pass [{{original}}]")
case("m_charifnotgroup", "/pass {{charIfNotGroup}}")
case("m_chatstart", "/pass [{{chatStart}}]")
case("m_exampleseparator", "/pass [{{exampleSeparator}}]")
case("m_mesexamples_after_user", "/pass {{user}}|{{lastUserMessage}}")
case("m_lastmessage_after_send", "/send fresh | /pass {{lastMessage}}")
case("m_lastmessageid_after_send", "/send fresh | /pass {{lastMessageId}}")
case("m_roll_fixed", "/pass {{roll:1d1}}")
case("m_random_single", "/pass {{random::only}}")
case("m_pick_single", "/pass {{pick::only}}")
case("m_setvar_macro", "/pass {{setvar::mx::5}}[{{getvar::mx}}] | /getvar mx")
case("m_addvar_macro", "/pass {{addvar::count::2}}{{getvar::count}}")
case("m_incvar_macro", "/pass {{incvar::count}}")
case("m_decvar_macro", "/pass {{decvar::count}}")
case("m_setglobalvar_macro", "/pass {{setglobalvar::gm::x}}{{getglobalvar::gm}}")
case("m_incglobalvar_macro", "/pass {{incglobalvar::gold}}")
case("m_reverse", "/pass {{reverse:abc}}")
case("m_banned", '/pass a{{banned "x"}}b')
case("m_unknown_macro", "/pass {{nosuchmacro}}")
case("m_macro_case", "/pass {{CHAR}} {{User}}")
case("m_chat_scenario_override", "/pass {{scenario}}", chat="chat_scenario.jsonl")
case("m_persona_in_send", "/send {{persona}}")
case("m_description_in_setvar", "/setvar key=d {{description}} | /getvar d")
case("m_char_in_closure", "/run {: /pass {{char}} :}")
case("m_user_in_sendas", "/sendas name={{user}} as the persona")

# ---------------------------------------------------------------- other commands
case("delay_small", "/delay 10 | /pass after")
case("delay_pipe", "/pass kept | /delay 5")
case("delay_alias_wait", "/wait 5 | /pass waited")
case("delay_bad", "/delay abc | /pass after")
case("inject_returns", "/inject id=one hi | /pass [{{pipe}}]")
case("inject_flush", "/inject id=one hi | /flushinject one | /listinjects format=json")
case("inject_no_id", "/inject hello")
case("listinjects_empty", "/listinjects format=json")
case("stop_idle", "/stop")
case("qr_set_list", "/qr-set-list")
case("qr_list_missing", "/qr-list nosuchset")
case("tag_exists", "/tag-exists name=Mara test")
case("tag_list", "/tag-list name=Mara")
case("instruct_state", "/instruct-state")
case("sysprompt_state", "/sysprompt-state")
case("getentryfield_missing_book", "/getentryfield file=nobook field=content 1")
case("world_get", "/world | /pass [{{pipe}}]")
case("count_tokens", "/count")
case("help_unknown", "/help nosuchcommand")
case("random_empty", "/pass [{{random::}}]")
case("pass_list_json", "/pass [1, 2, 3]")
case("pass_object_json", '/pass {"a": 1}')
case("pass_number", "/pass 007")
case("pass_boolean", "/pass true")
case("if_list_in", "/if left=[1,2,3] right=2 rule=in {: /pass yes :}")
case("setvar_pipe_number", "/add 2 2 | /setvar key=n | /addvar key=n 1 | /getvar n")
case("var_in_loop_scope", "/let acc 0 | /times 3 {: /var key=acc {{timesIndex}} :} | /var acc")
case("let_in_loop", "/times 2 {: /let inner {{timesIndex}} :} | /var inner")
case(
    "while_with_var_scope",
    "/let i 0 | /while left={{var::i}} right=3 rule=lt {: /var key=i {{var::i}}1 :} | /var i",
)
case("abort_pipe", "/pass kept | /abort")
case("closure_abort_quiet", "/run {: /abort quiet=true :} | /pass after")
case("times_with_var_name_count", "/setvar key=k 2 | /times k {: /incvar t :} | /getvar t")
case("run_closure_args_pipe", "/pass p | /run {: /pass got {{pipe}} :}")
case("sendas_name_missing_char", "/sendas name=Nobody text")
case("sys_then_messages_role", "/sys narration | /messages role=system 5")
case("comment_then_messages", "/comment note | /messages 5")
case("hide_then_messages_hidden_off", "/hide 1 | /messages hidden=off 0-2")
case("cut_then_lastmessage", "/cut 4 | /pass {{lastMessage}}")
case("addswipe_then_currentswipe", "/addswipe third | /pass {{currentSwipeId}}/{{lastSwipeId}}")
case("delswipe_then_lastmessage", "/delswipe | /pass {{lastMessage}}")


# ---------------------------------------------------------------- tokens, the input, states and tags
case("tokens_sentence", "/tokens The lamp is lit, Sam.")
case("tokens_macro", "/tokens {{char}}")
case("tokens_empty_text", "/tokens | /pass [{{pipe}}]")
case("trimtokens_start", "/trimtokens limit=2 direction=start one two three four five")
case("trimtokens_short", "/trimtokens limit=10 direction=end short text")
case("trimtokens_zero", "/trimtokens limit=0 direction=end one two")
case("trimtokens_bad_limit", "/trimtokens limit=abc direction=end one two")
case("trimtokens_default_direction", "/trimtokens limit=1 one two three")
case("count_after_send", "/send extra words for the count | /count")
case("count_after_hide", "/hide 1 | /count")
case("setinput_pipe", "/setinput hello | /pass [{{pipe}}]")
case("setinput_over_typed", "/setinput other | /pass {{input}}", input="typed words")
case("setinput_empty", "/setinput | /pass [{{input}}]", input="typed words")
case("stop_pipe", "/stop | /pass [{{pipe}}]")
case("instruct_state_on", "/instruct-state on | /instruct-state")
case("instruct_state_on_returns", "/instruct-state on")
case("instruct_state_toggle", "/instruct-state toggle | /instruct-state")
case("sysprompt_state_off", "/sysprompt-state off | /sysprompt-state")
case("sysprompt_state_toggle_returns", "/sysprompt-state toggle")
case("tag_add_then_exists", "/tag-add name=Mara harbour | /tag-exists name=Mara harbour")
case("tag_add_returns", "/tag-add name=Mara harbour")
case("tag_add_then_list", "/tag-add name=Mara harbour | /tag-list name=Mara")
case(
    "tag_remove_added",
    "/tag-add name=Mara harbour | /tag-remove name=Mara harbour | /tag-list name=Mara",
)
case("tag_remove_missing", "/tag-remove name=Mara nosuch")
case("tag_exists_current_char", "/tag-add harbour | /tag-exists harbour")
case("world_unknown_silent", "/world silent=true nosuchbook | /pass [{{pipe}}]")
case("world_off_unknown", "/world state=off silent=true nosuchbook | /pass [{{pipe}}]")


def main() -> None:
    BASE.mkdir(parents=True, exist_ok=True)
    (BASE / "Mara.json").write_text(json.dumps(CARD, indent=2, ensure_ascii=False) + "\n")
    base = {
        "user_name": "Sam",
        "char_name": "Mara",
        "avatar": "Mara.png",
        "card": "Mara.json",
        "preserved_name": "Mara",
    }
    (BASE / "base.json").write_text(json.dumps(base, indent=2) + "\n")

    def jsonl(rows: list[dict]) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

    (BASE / "chat.jsonl").write_text(jsonl(CHAT))
    scenario_header = json.loads(json.dumps(HEADER))
    scenario_header["chat_metadata"]["scenario"] = "Override: calm sea at {{char}}'s pier."
    (BASE / "chat_scenario.jsonl").write_text(jsonl([scenario_header, *CHAT[1:]]))
    (BASE / "global_variables.json").write_text(json.dumps(GLOBALS, indent=2) + "\n")
    (BASE / "scripts.json").write_text(json.dumps(REGEX, indent=2) + "\n")
    names = set()
    for name, script, extra in CASES:
        if name in names:
            raise SystemExit(f"case {name} twice")
        names.add(name)
        doc = {
            "group": "script",
            "name": name,
            "script": script,
            "chat": "../_base/" + str(extra.get("chat", "chat.jsonl")),
            "global_variables": "../_base/global_variables.json",
        }
        if "regex" in extra:
            doc["regex_scripts"] = "../_base/" + str(extra["regex"])
        if "input" in extra:
            doc["input"] = extra["input"]
        folder = HERE / "script" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "case.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(f"{len(CASES)} cases")


if __name__ == "__main__":
    main()
