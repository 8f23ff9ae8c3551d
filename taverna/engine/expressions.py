"""Which expression a character wears after a reply: a small offline classifier of the
reply's emotion by keywords, in English and Chinese.

The labels are the 28 of SillyTavern's classifier (the GoEmotions set); a sprite pack names
its pictures by them (`joy.png`, `anger.png`, ...). Each label has a list of cue words
(`KEYWORDS`): an English cue is a word, or a word's beginning when it ends in `*`; a
Chinese cue is matched anywhere in the text; emoticons and emoji count as cues too. A cue
right after a negation ("not happy", "不开心") does not count. Each cue found scores one
point, half as much again in the reply's last third (how a reply ends is how the
character is left); the label with the most points wins, ties going to the one listed
first. No cue at all: `neutral`.

A character whose pack has no picture for the label shows the nearest one it has
(`sprite_for`): the label's broad family (`FAMILY`: amusement -> joy, annoyance ->
anger ...), then `neutral`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

LABELS: tuple[str, ...] = (
    "admiration",
    "amusement",
    "anger",
    "annoyance",
    "approval",
    "caring",
    "confusion",
    "curiosity",
    "desire",
    "disappointment",
    "disapproval",
    "disgust",
    "embarrassment",
    "excitement",
    "fear",
    "gratitude",
    "grief",
    "joy",
    "love",
    "nervousness",
    "optimism",
    "pride",
    "realization",
    "relief",
    "remorse",
    "sadness",
    "surprise",
    "neutral",
)

# label -> (English cues, Chinese cues)
KEYWORDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "admiration": (
        (
            "admire*",
            "impressive",
            "impressed",
            "amazing",
            "magnificent",
            "brilliant",
            "wonderful",
            "incredible",
            "remarkable",
            "beautiful",
            "gorgeous",
            "stunning",
            "awe*",
        ),
        ("佩服", "敬佩", "钦佩", "了不起", "厉害", "真美", "好美", "美丽", "惊艳", "崇拜", "赞叹"),
    ),
    "amusement": (
        (
            "laugh*",
            "giggl*",
            "chuckl*",
            "snicker*",
            "funny",
            "hilarious",
            "amus*",
            "haha*",
            "lol",
            "grin",
            "grins",
            "grinn*",
            "smirk*",
            "tease*",
            "teasing",
            ":p",
            "xd",
            "😂",
            "🤣",
        ),
        ("哈哈", "嘻嘻", "呵呵", "好笑", "笑出", "大笑", "偷笑", "忍俊不禁", "逗你", "滑稽"),
    ),
    "anger": (
        (
            "angry",
            "anger",
            "furious",
            "fury",
            "rage*",
            "enrag*",
            "livid",
            "seeth*",
            "snarl*",
            "growl*",
            "shout*",
            "yell*",
            "glar*",
            "damn",
            "hate",
            "hatred",
            "clench*",
            "😠",
            "😡",
        ),
        (
            "愤怒",
            "生气",
            "发火",
            "怒吼",
            "怒视",
            "恼火",
            "气死",
            "混蛋",
            "可恶",
            "该死",
            "咬牙",
            "暴怒",
            "大怒",
            "怒",
        ),
    ),
    "annoyance": (
        (
            "annoy*",
            "irritat*",
            "bother*",
            "ugh",
            "sigh*",
            "eye-roll*",
            "rolls her eyes",
            "rolls his eyes",
            "tsk",
            "grumbl*",
            "impatien*",
            "exasperat*",
        ),
        ("好烦", "烦死", "烦人", "不耐烦", "啧", "讨厌", "无语", "翻白眼", "嫌弃", "唉"),
    ),
    "approval": (
        (
            "agree*",
            "approve*",
            "approval",
            "exactly",
            "indeed",
            "certainly",
            "nod*",
            "well done",
            "good job",
            "correct",
            "fine",
            "alright",
            "okay",
            "👍",
        ),
        ("同意", "赞同", "点头", "没错", "好的", "可以", "对的", "说得对", "认可", "好吧"),
    ),
    "caring": (
        (
            "care",
            "cares",
            "cared",
            "caring",
            "gentl*",
            "comfort*",
            "soothe*",
            "reassur*",
            "tender*",
            "protect*",
            "worried about you",
            "are you okay",
            "are you alright",
            "rest now",
            "hug*",
        ),
        (
            "关心",
            "照顾",
            "安慰",
            "温柔",
            "保护",
            "别担心",
            "没事吧",
            "还好吗",
            "抱住",
            "拥抱",
            "心疼",
        ),
    ),
    "confusion": (
        (
            "confus*",
            "puzzl*",
            "baffl*",
            "bewilder*",
            "perplex*",
            "huh",
            "what do you mean",
            "don't understand",
            "tilts her head",
            "tilts his head",
            "frown*",
            "🤔",
        ),
        ("困惑", "疑惑", "迷惑", "不明白", "不懂", "什么意思", "怎么回事", "歪头", "皱眉", "纳闷"),
    ),
    "curiosity": (
        (
            "curious*",
            "curiosity",
            "wonder",
            "wondered",
            "wondering",
            "wonders",
            "intrigu*",
            "interest*",
            "tell me more",
            "what is",
            "why",
            "how come",
            "lean* in",
            "peer*",
            "inquisitive",
        ),
        ("好奇", "想知道", "为什么", "感兴趣", "有趣", "打量", "探头", "究竟"),
    ),
    "desire": (
        (
            "desire*",
            "wants you",
            "crave*",
            "craving",
            "long* for",
            "yearn*",
            "lust*",
            "hunger*",
            "tempt*",
            "wish*",
            "need you",
        ),
        ("渴望", "想要", "欲望", "垂涎", "贪恋", "馋", "想你"),
    ),
    "disappointment": (
        (
            "disappoint*",
            "letdown",
            "let down",
            "shame",
            "pity",
            "unfortunately",
            "if only",
            "expected more",
            "deflat*",
        ),
        ("失望", "可惜", "遗憾", "扫兴", "泄气", "白费"),
    ),
    "disapproval": (
        (
            "disapprov*",
            "wrong",
            "shouldn't",
            "unacceptable",
            "no way",
            "refuse*",
            "i object",
            "objection",
            "frowns upon",
            "shake* her head",
            "shake* his head",
            "shook her head",
            "shook his head",
        ),
        ("不行", "不对", "反对", "不赞成", "摇头", "不可以", "胡闹", "不像话"),
    ),
    "disgust": (
        (
            "disgust*",
            "gross",
            "revolting",
            "repuls*",
            "nasty",
            "vile",
            "sicken*",
            "eww*",
            "yuck",
            "grimac*",
            "nause*",
            "🤢",
            "🤮",
        ),
        ("恶心", "厌恶", "作呕", "反胃", "呕", "真脏", "令人作呕"),
    ),
    "embarrassment": (
        (
            "embarrass*",
            "blush*",
            "flush*",
            "awkward*",
            "sheepish*",
            "mortif*",
            "ashamed",
            "fluster*",
            "stammer*",
            "shy",
            "😳",
        ),
        ("害羞", "脸红", "尴尬", "不好意思", "羞", "难为情", "窘"),
    ),
    "excitement": (
        (
            "excit*",
            "thrill*",
            "can't wait",
            "eager*",
            "yes!",
            "wow",
            "woo*",
            "hype*",
            "bounc*",
            "squeal*",
            "🎉",
        ),
        ("兴奋", "激动", "太棒了", "迫不及待", "耶", "好耶", "欢呼", "雀跃"),
    ),
    "fear": (
        (
            "afraid",
            "fear*",
            "scared",
            "scary",
            "terrif*",
            "frighten*",
            "horrif*",
            "panic*",
            "trembl*",
            "shiver*",
            "dread*",
            "flinch*",
            "😱",
            "😨",
        ),
        ("害怕", "恐惧", "可怕", "吓", "惊恐", "颤抖", "发抖", "毛骨悚然", "恐怖", "慌"),
    ),
    "gratitude": (
        ("thank*", "grateful", "gratitude", "appreciat*", "indebted", "much obliged"),
        ("谢谢", "感谢", "多谢", "感激", "谢了", "感恩"),
    ),
    "grief": (
        (
            "grief",
            "griev*",
            "mourn*",
            "funeral",
            "loss of",
            "passed away",
            "died",
            "dead",
            "sobb*",
            "wail*",
            "heartbroken",
            "heartbreak",
        ),
        ("悲痛", "哀悼", "去世", "死了", "痛哭", "嚎啕", "心碎", "悲恸", "节哀"),
    ),
    "joy": (
        (
            "happy",
            "happily",
            "happiness",
            "joy*",
            "delight*",
            "glad",
            "cheer*",
            "smil*",
            "beam*",
            "glee*",
            "pleased",
            ":)",
            ":d",
            "😊",
            "😄",
            "😀",
        ),
        ("开心", "高兴", "快乐", "愉快", "喜悦", "微笑", "笑着", "欢喜", "幸福", "快活"),
    ),
    "love": (
        (
            "love*",
            "loving",
            "adore*",
            "darling",
            "sweetheart",
            "my dear",
            "beloved",
            "kiss*",
            "cuddl*",
            "affection*",
            "❤",
            "😍",
            "🥰",
        ),
        ("爱", "喜欢你", "亲爱的", "宝贝", "亲吻", "吻", "爱你", "心动", "深情"),
    ),
    "nervousness": (
        (
            "nervous*",
            "anxious*",
            "anxiety",
            "worr*",
            "uneasy",
            "fidget*",
            "tense*",
            "jitter*",
            "gulp*",
            "swallow* hard",
            "bit* her lip",
            "bit* his lip",
            "sweat*",
        ),
        ("紧张", "不安", "焦虑", "担心", "忐忑", "手心出汗", "咽了口", "局促", "心慌"),
    ),
    "optimism": (
        (
            "hope*",
            "hopeful*",
            "optimis*",
            "surely",
            "things will",
            "it'll be fine",
            "we can do",
            "bright side",
            "someday",
            "believe in",
        ),
        ("希望", "相信", "一定会", "会好的", "乐观", "期待", "总有一天"),
    ),
    "pride": (
        (
            "proud*",
            "pride",
            "triumph*",
            "smug*",
            "boast*",
            "accomplish*",
            "puff* out",
            "chin up",
            "of course i",
            "as expected of me",
        ),
        ("骄傲", "自豪", "得意", "自信", "神气", "炫耀", "本小姐", "本大爷"),
    ),
    "realization": (
        (
            "realiz*",
            "realis*",
            "i see",
            "oh!",
            "aha",
            "understand now",
            "dawn* on",
            "it hit",
            "of course!",
            "so that's",
            "💡",
        ),
        ("原来", "明白了", "懂了", "恍然大悟", "意识到", "这样啊", "难怪"),
    ),
    "relief": (
        (
            "relie*",
            "phew",
            "thank goodness",
            "thank god",
            "at last",
            "finally",
            "safe now",
            "exhal*",
            "breath* out",
            "😌",
        ),
        ("松了口气", "终于", "还好", "幸好", "太好了", "安心", "放心", "呼——"),
    ),
    "remorse": (
        (
            "sorry",
            "apolog*",
            "regret*",
            "forgive me",
            "my fault",
            "remorse*",
            "guilt*",
            "ashamed of",
        ),
        ("对不起", "抱歉", "后悔", "原谅我", "都怪我", "愧疚", "内疚", "歉意"),
    ),
    "sadness": (
        (
            "sad",
            "sadly",
            "sadness",
            "sorrow*",
            "unhappy",
            "tear*",
            "cry",
            "cries",
            "crying",
            "weep*",
            "lonely",
            "melanchol*",
            "gloom*",
            "miserable",
            "depress*",
            "😢",
            "😭",
            ":(",
        ),
        ("难过", "伤心", "悲伤", "哭", "眼泪", "泪", "孤独", "寂寞", "忧郁", "沮丧", "落寞"),
    ),
    "surprise": (
        (
            "surpris*",
            "shock*",
            "astonish*",
            "startl*",
            "gasp*",
            "stunned",
            "what?!",
            "oh my",
            "no way!",
            "eyes widen*",
            "wide-eyed",
            "😮",
            "😲",
        ),
        ("惊讶", "吃惊", "震惊", "惊呆", "诧异", "竟然", "居然", "什么？", "瞪大", "天哪", "啊？"),
    ),
    "neutral": ((), ()),
}

# Each label's broad family: the sprite shown when a pack lacks the label's own picture.
FAMILY: Mapping[str, str] = {
    "admiration": "joy",
    "amusement": "joy",
    "approval": "joy",
    "caring": "love",
    "desire": "love",
    "excitement": "joy",
    "gratitude": "joy",
    "optimism": "joy",
    "pride": "joy",
    "relief": "joy",
    "love": "joy",
    "annoyance": "anger",
    "disapproval": "anger",
    "disgust": "anger",
    "disappointment": "sadness",
    "grief": "sadness",
    "remorse": "sadness",
    "embarrassment": "nervousness",
    "nervousness": "fear",
    "confusion": "surprise",
    "curiosity": "surprise",
    "realization": "surprise",
}

_NEGATIONS = frozenset({"not", "no", "never", "isn't", "wasn't", "don't", "didn't", "hardly"})
_ZH_NEGATIONS = "不没别未"
_WORD = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")
_LATE_WEIGHT = 1.5


@dataclass(frozen=True, slots=True)
class Reading:
    """The label a text is read as, with each label's points (only those that scored)."""

    label: str
    scores: Mapping[str, float]


def _cue_pattern(cue: str) -> re.Pattern[str]:
    """An English cue as a pattern: whole words, a word ending in `*` as its beginning."""
    if re.fullmatch(r"[a-z'*-]+(?: [a-z'*-]+)*", cue):
        words = [
            re.escape(word.rstrip("*")) + (r"[a-z'-]*" if word.endswith("*") else "")
            for word in cue.split(" ")
        ]
        return re.compile(r"(?<![a-z'])" + r"\s+".join(words) + r"(?![a-z'])")
    # an emoticon, an emoji or a cue with marks: as written, not inside a word
    lead = r"(?<![a-z'])" if cue[0].isalpha() else ""
    return re.compile(lead + re.escape(cue))


def _english_matchers() -> list[tuple[str, re.Pattern[str]]]:
    return [
        (label, _cue_pattern(cue))
        for label, (english, _chinese) in KEYWORDS.items()
        for cue in english
    ]


_ENGLISH = _english_matchers()
_CHINESE = [(label, cue) for label, (_english, zh) in KEYWORDS.items() for cue in zh]


def _negated_english(text: str, start: int) -> bool:
    before = _WORD.findall(text[max(0, start - 24) : start])
    return any(word in _NEGATIONS or word.endswith("n't") for word in before[-2:])


def classify(text: str) -> Reading:
    """The expression `text` reads as (see the module for how)."""
    lowered = text.lower()
    late = len(lowered) * 2 // 3
    scores: dict[str, float] = {}

    def score(label: str, at: int) -> None:
        scores[label] = scores.get(label, 0.0) + (_LATE_WEIGHT if at >= late else 1.0)

    for label, pattern in _ENGLISH:
        for match in pattern.finditer(lowered):
            if not _negated_english(lowered, match.start()):
                score(label, match.start())
    for label, cue in _CHINESE:
        at = lowered.find(cue)
        while at >= 0:
            if at == 0 or lowered[at - 1] not in _ZH_NEGATIONS:
                score(label, at)
            at = lowered.find(cue, at + len(cue))
    if not scores:
        return Reading("neutral", {})
    best = max(LABELS, key=lambda label: (scores.get(label, 0.0), -LABELS.index(label)))
    return Reading(best, scores)


def sprite_for(label: str, available: Collection[str]) -> str | None:
    """The sprite to show for `label` among those a pack has: its own, else its family's
    (following the family up), else `neutral`; None when the pack has none of them."""
    seen = set()
    current: str | None = label
    while current is not None and current not in seen:
        if current in available:
            return current
        seen.add(current)
        current = FAMILY.get(current)
    return "neutral" if "neutral" in available else None
