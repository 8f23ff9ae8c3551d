"""The group scheduler: properties over random groups, and fixed cases."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.engine.group import (
    ActivationStrategy,
    GroupTurn,
    Member,
    mentioned,
    next_speakers,
    round_seed,
)

NAMES = ["Alice", "Bob", "小雪", "Élodie", "Дмитрий", "Mary Jane", "Kenji", "Zoë"]

members_st = st.lists(
    st.builds(
        Member,
        name=st.sampled_from(NAMES),
        talkativeness=st.floats(min_value=0, max_value=1),
        muted=st.booleans(),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda m: m.name,
).map(tuple)

turns_st = st.builds(
    GroupTurn,
    members=members_st,
    strategy=st.sampled_from(list(ActivationStrategy)),
    allow_self_responses=st.booleans(),
    last_text=st.lists(st.sampled_from([*NAMES, "hello", "。", " ", "和", "the"])).map("".join),
    last_speaker=st.none() | st.sampled_from(NAMES),
    user_input=st.booleans(),
    seed=st.integers(min_value=0, max_value=2**64 - 1),
)


@given(turns_st)
def test_muted_members_never_speak_and_nobody_twice(turn: GroupTurn) -> None:
    speakers = next_speakers(turn)
    muted = {m.name for m in turn.members if m.muted}
    assert not muted & set(speakers)
    assert len(speakers) == len(set(speakers))
    assert set(speakers) <= {m.name for m in turn.members}


@given(turns_st)
def test_same_seed_same_speakers(turn: GroupTurn) -> None:
    assert next_speakers(turn) == next_speakers(replace(turn))


@given(turns_st.filter(lambda t: t.strategy is ActivationStrategy.NATURAL))
def test_natural_order_a_mentioned_active_member_always_speaks_first(turn: GroupTurn) -> None:
    speakers = next_speakers(turn)
    active = [m for m in turn.members if not m.muted]
    if active:
        assert speakers  # at least one
    banned = None if turn.user_input or turn.allow_self_responses else turn.last_speaker
    named = mentioned(turn.last_text, [m.name for m in active if m.name != banned])
    # every mentioned active member speaks, before anyone the dice chose
    assert list(speakers[: len(named)]) == named
    assert banned not in speakers or banned is None or not any(m.name != banned for m in active)


@given(members_st, st.integers(min_value=0, max_value=2**32))
def test_a_mention_speaks_even_when_nobody_is_talkative(
    members: tuple[Member, ...], seed: int
) -> None:
    quiet = tuple(replace(m, talkativeness=0.0, muted=False) for m in members)
    target = quiet[-1].name
    turn = GroupTurn(members=quiet, last_text=f"我想问{target}一个问题", seed=seed)
    assert next_speakers(turn)[0] == target


@given(members_st, st.integers(min_value=0, max_value=2**32), st.integers(1, 40))
@settings(max_examples=60)
def test_pooled_never_repeats_before_all_spoke(
    members: tuple[Member, ...], seed: int, rounds: int
) -> None:
    active = [m.name for m in members if not m.muted]
    spoken: list[str] = []
    for position in range(rounds):
        turn = GroupTurn(
            members=members,
            strategy=ActivationStrategy.POOLED,
            last_speaker=spoken[-1] if spoken else None,
            user_input=position % 3 == 0,
            spoken=tuple(spoken),
            seed=round_seed("chat", position),
        )
        speakers = next_speakers(turn)
        if not active:
            assert speakers == ()
            return
        assert len(speakers) == 1
        spoken.append(speakers[0])
    for start in range(0, len(spoken), len(active)):
        cycle = spoken[start : start + len(active)]
        assert len(cycle) == len(set(cycle)), spoken


def test_list_order_is_every_active_member_in_order() -> None:
    members = (Member("A"), Member("B", muted=True), Member("C"))
    turn = GroupTurn(members=members, strategy=ActivationStrategy.LIST)
    assert next_speakers(turn) == ("A", "C")


def test_manual_waits_for_the_person_and_auto_mode_picks_one() -> None:
    members = (Member("A"), Member("B"))
    manual = GroupTurn(members=members, strategy=ActivationStrategy.MANUAL)
    assert next_speakers(manual) == ()
    auto = replace(manual, user_input=False, seed=7)
    assert len(next_speakers(auto)) == 1


def test_the_last_speaker_does_not_answer_itself_unless_allowed() -> None:
    members = (Member("A", talkativeness=1.0), Member("B", talkativeness=1.0))
    turn = GroupTurn(members=members, last_text="A: hi", last_speaker="A", user_input=False)
    for seed in range(30):
        assert "A" not in next_speakers(replace(turn, seed=seed))
    allowed = replace(turn, allow_self_responses=True)
    assert "A" in next_speakers(allowed)


def test_the_seed_is_the_chat_and_position() -> None:
    members = tuple(Member(n, talkativeness=0.5) for n in NAMES)
    draws = {next_speakers(GroupTurn(members=members, seed=round_seed("c1", p))) for p in range(20)}
    assert len(draws) > 1  # the rolls differ from position to position
    assert round_seed("c1", 3) == round_seed("c1", 3)
    assert round_seed("c1", 3) != round_seed("c2", 3)


filler = st.text(alphabet="我你他在和的了吗，。！？、 \n", max_size=12)


@given(members_st, st.data(), filler, filler, st.integers(min_value=0, max_value=2**32))
def test_a_named_active_member_speaks_whatever_surrounds_the_name(
    members: tuple[Member, ...], data: st.DataObject, before: str, after: str, seed: int
) -> None:
    active = [m for m in members if not m.muted]
    if not active:
        return
    target = data.draw(st.sampled_from(active))
    spelled = data.draw(st.sampled_from([target.name, target.name.upper(), target.name.lower()]))
    turn = GroupTurn(members=members, last_text=before + spelled + after, seed=seed)
    assert target.name in next_speakers(turn)
