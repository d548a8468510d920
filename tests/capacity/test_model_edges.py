"""The capacity model's keys a message without UNIQ_KEY, by hand: IndexService.buildIndex puts
one key for a UNIQ_KEY only when the message has one, plus its KEYS tokens, so a plan with
uniq_key false, 10 % keyless messages and one key a keyed message gives 0.9 keys a message (the
default plan's 1.9 less the UNIQ_KEY)."""
from __future__ import annotations

import pytest

from rmqlab.capacity import estimate, parse_plan


def test_no_uniq_key_means_one_key_less_a_message() -> None:
    e = estimate(parse_plan({"keys": {"uniq_key": False, "keyless_fraction": 0.1}}), sample=False)
    assert e.index_keys_per_message == pytest.approx(0.9)
    e = estimate(parse_plan({"keys": {"uniq_key": True, "keyless_fraction": 0.1}}), sample=False)
    assert e.index_keys_per_message == pytest.approx(1.9)
