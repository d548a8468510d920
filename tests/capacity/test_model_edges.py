"""The capacity model's keys a message without UNIQ_KEY, by hand: IndexService.buildIndex puts
one key for a UNIQ_KEY only when the message has one, plus its KEYS tokens, so a plan with
uniq_key false, 10 % keyless messages and one key a keyed message gives 0.9 keys a message (the
default plan's 1.9 less the UNIQ_KEY), and the one-off order ids a full file holds follow."""
from __future__ import annotations

import pytest

from rmqlab.capacity import estimate, parse_plan


def test_no_uniq_key_means_one_key_less_a_message() -> None:
    e = estimate(parse_plan({"keys": {"uniq_key": False, "keyless_fraction": 0.1}}), sample=False)
    assert e.index_keys_per_message == pytest.approx(0.9)
    e = estimate(parse_plan({"keys": {"uniq_key": True, "keyless_fraction": 0.1}}), sample=False)
    assert e.index_keys_per_message == pytest.approx(1.9)


def test_without_uniq_key_or_hot_keys_every_key_of_a_file_is_an_order_id() -> None:
    """A full index file of 1,000 keys: with no UNIQ_KEY and no hot keys every key is a one-off
    order id, so the file holds 1,000 of them; with UNIQ_KEY (one a message beside 0.9 order ids)
    it holds 1,000 x 0.9 / 1.9."""
    from rmqlab.capacity.model import _order_ids_per_file

    keys = {"keyless_fraction": 0.1, "hot_key_fraction": 0.0}
    assert _order_ids_per_file(parse_plan({"keys": keys | {"uniq_key": False}}), 1000) == 1000
    assert _order_ids_per_file(parse_plan({"keys": keys | {"uniq_key": True}}), 1000) == round(1000 * 0.9 / 1.9)
