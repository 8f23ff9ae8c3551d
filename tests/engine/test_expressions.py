"""The expression classifier: a reply's emotion read by keywords, in English and Chinese."""

from __future__ import annotations

import pytest

from taverna.engine.expressions import FAMILY, KEYWORDS, LABELS, classify, sprite_for


def test_the_labels_are_the_28_of_sillytaverns_classifier_each_with_cues_in_both_languages() -> (
    None
):
    assert len(LABELS) == len(set(LABELS)) == 28
    assert set(KEYWORDS) == set(LABELS)
    for label in LABELS:
        english, chinese = KEYWORDS[label]
        if label != "neutral":
            assert english and chinese, label
    assert set(FAMILY) <= set(LABELS) and set(FAMILY.values()) <= set(LABELS)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("She laughs and grins at you, teasing.", "amusement"),
        ('He slams the table, furious. "How dare you!"', "anger"),
        ("Tears run down her cheeks; she sobs quietly, so sad.", "sadness"),
        ("She gasps, eyes widening in shock.", "surprise"),
        ("Thank you, truly. I am grateful.", "gratitude"),
        ("I'm so sorry. Forgive me, it was my fault.", "remorse"),
        ("She smiles, happy and glad to see you.", "joy"),
        ("He trembles, terrified of the dark.", "fear"),
        ("她开心地笑了起来，很高兴见到你。", "joy"),
        ("他愤怒地瞪着你，咬牙切齿。", "anger"),
        ("“对不起……”她低下头，眼泪落了下来，十分伤心。", "sadness"),
        ("她惊讶地瞪大了眼睛：“竟然是你？”", "surprise"),
        ("她的脸一下子红了，害羞地别过头去。", "embarrassment"),
        ("谢谢你，真的很感谢。", "gratitude"),
        ("The door opens. The hall is quiet.", "neutral"),
        ("门开了，走廊里静悄悄的。", "neutral"),
    ],
)
def test_a_reply_reads_as_its_emotion(text: str, label: str) -> None:
    assert classify(text).label == label


def test_a_negated_cue_does_not_count() -> None:
    assert classify("I am not happy about this.").label == "neutral"
    assert classify("我不开心。").label == "neutral"
    assert classify("I am happy about this.").label == "joy"


def test_a_cue_is_a_word_not_part_of_one() -> None:
    # "madder" / "sadden" are not "mad" / "sad"; "careful" is not "care"
    assert classify("A careful, saddled horse.").label == "neutral"
    assert classify("Her eyes! Yes.").label == "neutral"  # "eyes!" holds "yes!"


def test_how_a_reply_ends_weighs_more() -> None:
    # one cue of each: the later one wins
    assert classify("She was angry at first. Many words later, she was happy.").label == "joy"
    assert classify("She was happy at first. Many words later, she was angry.").label == "anger"


def test_ties_go_to_the_label_listed_first() -> None:
    reading = classify("happy angry")
    assert reading.scores["joy"] == reading.scores["anger"]
    assert reading.label == "anger"  # listed before joy


def test_a_pack_without_the_label_shows_the_nearest_it_has() -> None:
    pack = {"joy", "sadness", "neutral"}
    assert sprite_for("joy", pack) == "joy"
    assert sprite_for("amusement", pack) == "joy"
    assert sprite_for("grief", pack) == "sadness"
    assert sprite_for("anger", pack) == "neutral"
    assert sprite_for("embarrassment", {"fear"}) == "fear"  # embarrassment -> nervousness -> fear
    assert sprite_for("anger", {"joy"}) is None
    assert sprite_for("my-own", {"my-own"}) == "my-own"
