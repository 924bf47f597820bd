"""The scripted model's running count of a conversation agrees with a full recount."""

from __future__ import annotations

from engine.providers.scripted import _message_chars, _Tally, turn_index
from engine.vocabulary.state import Message


def _full(messages: list[Message]) -> tuple[int, int]:
    return sum(map(_message_chars, messages)), turn_index(messages)


def test_tally_extends_and_recounts_when_the_prefix_changes() -> None:
    tally = _Tally()
    conv = [Message("system", "sys"), Message("user", "task")]
    assert tally.update(conv) == _full(conv) == (7, 0)
    for i in range(5):
        conv = [*conv, Message("assistant", f"turn {i}"), Message("tool", "x" * i)]
        assert tally.update(conv) == _full(conv)
    assert tally.update(conv)[1] == 5
    # compression: the early turns become one summary standing for four calls
    summary = Message("user", "summary of four turns", meta={"summary": True, "calls": 4})
    compressed = [conv[0], summary, *conv[-2:]]
    assert tally.update(compressed) == _full(compressed)
    assert tally.update(compressed)[1] == 5
    shorter = conv[:3]
    assert tally.update(shorter) == _full(shorter) == (len("systaskturn 0"), 1)


def test_a_view_with_stubs_in_place_is_recounted() -> None:
    """Stubbing changes messages inside the prefix without changing its length or its last
    message: the tally sees it (the whole prefix is compared, not its ends)."""
    tally = _Tally()
    conv: tuple[Message, ...] = (Message("system", "sys"), Message("user", "task"))
    for i in range(4):
        conv = (*conv, Message("assistant", f"turn {i}"), Message("tool", "y" * 900))
    assert tally.update(conv) == _full(list(conv))
    stub = Message("tool", "[tool output elided]", meta={"stub_of": 3})
    stubbed = (*conv[:3], stub, *conv[4:])
    assert len(stubbed) == len(conv) and stubbed[-1] is conv[-1]
    assert tally.update(stubbed) == _full(list(stubbed)) != _full(list(conv))
    grown = (*stubbed, Message("assistant", "turn 4"))
    assert tally.update(grown) == _full(list(grown))


def test_a_list_conversation_counts_like_a_tuple() -> None:
    tally = _Tally()
    conv = [Message("system", "sys"), Message("user", "task"), Message("assistant", "a")]
    assert tally.update(conv) == _full(conv)
    conv.append(Message("tool", "out"))  # the caller's list changes after the call
    assert tally.update(conv) == _full(conv)
    conv[1] = Message("user", "another task")
    assert tally.update(conv) == _full(conv)
