"""The scripted model's running count of a conversation agrees with a full recount."""

from __future__ import annotations

from engine.models.scripted import _message_chars, _Tally, turn_index
from engine.state import Message


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
