"""rmqlab.store.transactions on stores real brokers wrote, judged by what the producer decided and
what the broker logged, never by rmqlab's own reading:

* the producer (RocketMQDriver's TransactionListener; LegacyTransactions' executer before 4.3)
  returned COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW for each transaction (sends.jsonl):
  rmqlab's state for each is committed, rolled back, or discarded / pending;
* the broker's check service logs each check it makes from 5.1 ("Check transaction.
  real_topic=T,uniqKey=U,offset=Q,commitLogOffset=P", the copy it put back): those are exactly
  rmqlab's check records; and before 5.1 each check either reached the producer (its
  checkLocalTransaction count, workload.json) or was logged "channel is null": the two together
  are never more than rmqlab's checks (a check in flight when the producer's JVM exits is neither)
  and never fewer than all but a round of them;
* each discard is logged ("checked too many times, so discard it", with the copy's UNIQ_KEY):
  exactly rmqlab's discarded copies.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import rocketmq_harness as rh

from rmqlab.store.directory import Store
from rmqlab.store.transactions import transaction_events, transactions

CASES = [(r, "clean") for r in rh.selected_releases() if rh.selected(r, "clean")] + [
    (r, "rocksdb-index") for r in rh.MESSAGE_ROCKSDB_RELEASES if rh.selected(r, "rocksdb-index")]

#: what rmqlab's state must be for each answer of the producer's TransactionListener
EXPECTED = {"COMMIT_MESSAGE": {"committed"}, "ROLLBACK_MESSAGE": {"rolled back"}, "UNKNOW": {"discarded", "pending"}}

CHECK_LINE = re.compile(r"Check transaction\. real_topic=[^,]*,uniqKey=([0-9A-F]+),offset=(\d+),commitLogOffset=(\d+)")
UNIQ_KEY = re.compile(r"UNIQ_KEY=([0-9A-F]+)")
NO_CHANNEL = re.compile(r"Check transaction failed, channel is null|checkProducerTransactionState failed, "
                        r"channel is null")


@pytest.fixture(scope="module", params=CASES, ids=[f"{r}-{s}" for r, s in CASES])
def written(request):
    release, scenario = request.param
    return rh.rocketmq_store(release, scenario)


def _broker_log(bs: rh.BrokerStore) -> str:
    """The broker's own logs: transaction.log from 5.1 (its logback), broker_logback.log before."""
    logs = [bs.folder / "logs" / "rocketmqlogs" / "transaction.log", bs.folder / "logs" / "broker_logback.log"]
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs if p.exists())


def _decisions(bs: rh.BrokerStore) -> dict[str, str]:
    """The producer's answer for each transaction it sent, by message id (UNIQ_KEY)."""
    out = {}
    for line in (bs.folder / "sends.jsonl").read_text(encoding="utf-8").splitlines():
        s = json.loads(line)
        if str(s.get("kind", "")).startswith("tx-") and s.get("transactionState"):
            out[s["msgId"]] = s["transactionState"]
    return out


def _read(bs: rh.BrokerStore):
    store = Store(bs.store, **bs.store_kwargs())
    events = transaction_events(store)
    return events, transactions(store, events=events)


def test_each_transaction_is_in_the_state_its_producer_decided(written):
    decided = _decisions(written)
    if not decided:
        pytest.skip(f"{written.release}: the workload sent no transaction ({written.skipped.get('transactions')})")
    _, got = _read(written)
    state = dict(zip(got["transaction_id"], got["state"], strict=True))
    assert set(state) == set(decided)
    wrong = {tid: (answer, state[tid]) for tid, answer in decided.items() if state[tid] not in EXPECTED[answer]}
    assert not wrong
    committed = got[got["state"] == "committed"]
    assert committed["commit_offset"].notna().all() and (committed["topic"] == "TopicTx").all()


def test_checks_are_the_ones_the_broker_made(written):
    decided = _decisions(written)
    if not decided:
        pytest.skip(f"{written.release}: no transaction")
    log = _broker_log(written)
    events, got = _read(written)
    checks = events[events["event"] == "check"]
    logged = CHECK_LINE.findall(log)
    if logged:   # 5.1+: each check named, with the copy it put back
        assert Counter(logged) == Counter(zip(checks["transaction_id"], checks["queue_offset"].astype(str),
                                              checks["phy_offset"].astype(str), strict=True))
        per_tx = Counter(u for u, _, _ in logged)
        assert {t: c for t, c in zip(got["transaction_id"], got["checks"], strict=True) if c} == dict(per_tx)
    workload = json.loads((written.folder / "workload.json").read_text(encoding="utf-8"))
    reached = int(workload.get("transaction_checks") or 0) + len(NO_CHANNEL.findall(log))
    total = int(got["checks"].sum())
    still_checked = int((got["state"].isin(["pending", "discarded"]) | got["discard_offset"].notna()).sum())
    # every check reached the producer or was logged channel-less, but those in flight at its exit (a round at most)
    assert reached <= total <= reached + still_checked


def test_discards_are_the_ones_the_broker_logged(written):
    if not _decisions(written):
        pytest.skip(f"{written.release}: no transaction")
    events, got = _read(written)
    discarded = events[events["event"] == "discard"]
    logged = [UNIQ_KEY.search(line)[1] for line in _broker_log(written).splitlines()
              if "checked too many times, so discard it" in line]
    assert Counter(logged) == Counter(discarded["transaction_id"])
    # a discard moves the copy checked transactionCheckMax (15) times
    assert (discarded["check_times"] == 15).all()


def test_the_command_line_counts_the_states(written, capsys):
    from rmqlab.cli import main

    if not _decisions(written):
        pytest.skip(f"{written.release}: no transaction")
    answers = Counter(_decisions(written).values())
    assert main(["store", "transactions", str(written.store)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    n = sum(answers.values())
    assert head.startswith(f"{n} transactions: {answers['COMMIT_MESSAGE']} committed, "
                           f"{answers['ROLLBACK_MESSAGE']} rolled back")


def test_a_store_without_transactions_has_none(tmp_path: Path):
    assert transactions(Store(tmp_path)).empty
