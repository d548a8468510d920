"""rmqlab.store.transactions judged by a model broker: plain Python that plays the broker's
transaction rules (rocketmq-all-4.2.0's EndTransactionProcessor for prepared records;
TransactionalMessageServiceImpl.check, EndTransactionProcessor, TransactionalOpBatchService and
DefaultTransactionalMessageCheckListener of 4.3 to 5.3.3 for the half queue) over random
schedules of sends, producer decisions, op batches and check rounds, writes the records it
would write, and keeps the truth: what each producer decided, how often the broker asked, what
it discarded. rmqlab reads only the CommitLog (and the check service's committed offset) back.
Against the real brokers: tests/brokers/test_rocketmq_transactions.py."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rmqlab.formats.commitlog.encode import encode_message
from rmqlab.store.directory import Store
from rmqlab.store.transactions import parse_op_body, transactions

FILE_SIZE = 1 << 20
HALF, OP, MAXTIME = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC"


class ModelBroker:
    """The records a broker writes for transactions, in order, and the truth about each."""

    def __init__(self, *, legacy: bool, moves_discards: bool, batches_ops: bool, check_max: int):
        self.legacy, self.moves_discards, self.batches_ops = legacy, moves_discards, batches_ops
        self.check_max = check_max
        self.records: list[dict] = []          # topic, queue_id, queue_offset, sys_flag, props, body, prepared
        self.queue_len: dict[tuple[str, int], int] = {}
        self.half: list[dict] = []             # the half queue's records (queue 0)
        self.removed: set[int] = set()         # half queue offsets an op message has ended
        self.op_buffer: list[int] = []
        self.checked_to = 0                    # the check service's committed offset
        self.decision: dict[str, str] = {}    # as the store shows it: a rollback once its op is written
        self.ended: set[str] = set()           # the transactions the producer has ended
        self.checks: dict[str, int] = {}
        self.discarded: set[str] = set()
        self.known: dict[str, int] = {}        # the half record the producer would name (index into records)

    def _put(self, topic, queue_id, props, sys_flag=0, prepared=0, body=b"x") -> int:
        qo = self.queue_len.get((topic, queue_id), 0)
        self.queue_len[(topic, queue_id)] = qo + 1
        self.records.append({"topic": topic, "queue_id": queue_id, "queue_offset": qo, "sys_flag": sys_flag,
                             "props": dict(props), "body": body, "prepared": prepared})
        return len(self.records) - 1

    def send(self, tid: str) -> None:
        props = {"UNIQ_KEY": tid, "TRAN_MSG": "true", "PGROUP": "P"}
        self.checks[tid] = 0
        if self.legacy:
            self.known[tid] = self._put("Real", 1, props, sys_flag=0x4)
        else:
            self.known[tid] = self._put(HALF, 0, {**props, "REAL_TOPIC": "Real", "REAL_QID": "1"})
            self.half.append(self.records[self.known[tid]])

    def end(self, tid: str, commit: bool, stale: bool) -> None:
        """The producer's end request for the half record it knows (`stale`: the first one, as an
        answer to the send is; else the newest copy, as an answer to a check is)."""
        if tid in self.ended:
            return
        self.ended.add(tid)
        if commit or self.legacy:   # a commit record (or before 4.3 either record) is written at once
            self.decision[tid] = "committed" if commit else "rolled back"
        at = self.known[tid]
        if stale and not self.legacy:
            at = next(i for i, r in enumerate(self.records) if r["topic"] == HALF and r["props"]["UNIQ_KEY"] == tid)
        named = self.records[at]
        if self.legacy:
            self._put("Real", 1, named["props"], sys_flag=0x8 if commit else 0xC, prepared=at)
            return
        if commit:
            props = {k: v for k, v in named["props"].items() if k not in ("REAL_TOPIC", "REAL_QID")}
            self._put("Real", 1, props, sys_flag=0x8, prepared=at)
        self.op_buffer.append((named["queue_offset"], tid))
        if not self.batches_ops:
            self.flush_ops()

    def flush_ops(self) -> None:
        if not self.op_buffer:
            return
        if self.batches_ops:   # 5.1+: one op message, each offset followed by a comma
            self._put(OP, 0, {"TAGS": "d"}, body="".join(f"{qo}," for qo, _ in self.op_buffer).encode())
        else:
            for qo, _ in self.op_buffer:
                self._put(OP, 0, {"TAGS": "d"}, body=str(qo).encode())
        for qo, tid in self.op_buffer:   # a rollback is on disk only with its op message
            self.removed.add(qo)
            self.decision.setdefault(tid, "rolled back")
        self.op_buffer = []

    def check_round(self) -> None:
        """TransactionalMessageServiceImpl.check over the records present when it starts."""
        if self.legacy:
            return
        end = len(self.half)
        for i in range(self.checked_to, end):
            rec = self.half[i]
            if rec["queue_offset"] in self.removed:
                continue
            tid = rec["props"]["UNIQ_KEY"]
            times = int(rec["props"].get("TRANSACTION_CHECK_TIMES", "0"))
            if "TRANSACTION_CHECK_TIMES" in rec["props"] and times >= self.check_max:
                self.discarded.add(tid)
                if self.moves_discards:
                    self._put(MAXTIME, 0, rec["props"])
                continue
            copy = self._put(HALF, 0, {**rec["props"], "TRANSACTION_CHECK_TIMES": str(times + 1)})
            self.half.append(self.records[copy])
            self.known[tid] = copy
            self.checks[tid] += 1
        self.checked_to = end

    def write(self, root: Path) -> None:
        out, at = bytearray(), []
        for r in self.records:
            at.append(len(out))
            prepared = at[r["prepared"]] if r["sys_flag"] & 0xC in (0x8, 0xC) else 0
            out += encode_message(topic=r["topic"], queue_id=r["queue_id"], queue_offset=r["queue_offset"],
                                  phy_offset=len(out), sys_flag=r["sys_flag"], born_timestamp=1000 + len(at),
                                  store_timestamp=1000 + len(at), prepared_transaction_offset=prepared,
                                  properties=r["props"], body=r["body"])
        (root / "commitlog").mkdir(parents=True)
        (root / "commitlog" / f"{0:020d}").write_bytes(bytes(out) + bytes(FILE_SIZE - len(out)))
        (root / "config").mkdir()
        offsets = {"offsetTable": {f"{HALF}@CID_RMQ_SYS_TRANS": {"0": self.checked_to}}}
        (root / "config" / "consumerOffset.json").write_text(json.dumps(offsets))


@st.composite
def schedules(draw):
    legacy = draw(st.booleans())
    n = draw(st.integers(0, 5))
    steps = draw(st.lists(st.tuples(st.sampled_from(["send", "commit", "rollback", "flush", "check"]),
                                    st.integers(0, max(n - 1, 0)), st.booleans()), max_size=60))
    return legacy, n, steps, draw(st.booleans()), draw(st.booleans()), draw(st.integers(1, 4))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
@example((False, 2, [("send", 0, False), ("send", 1, False), ("commit", 1, True), ("check", 0, False),
                     ("check", 0, False), ("flush", 0, False), ("check", 0, False), ("check", 0, False)],
          False, True, 1))   # a 4.3/4.4 discard (passed, nothing moved) beside a commit whose op came late
def test_states_and_checks_are_the_model_brokers(schedule):
    legacy, n, steps, moves_discards, batches_ops, check_max = schedule
    broker = ModelBroker(legacy=legacy, moves_discards=moves_discards, batches_ops=batches_ops, check_max=check_max)
    sent = []
    for kind, i, stale in steps:
        tid = f"T{i:02d}"
        if kind == "send" and tid not in broker.checks:
            broker.send(tid)
            sent.append(tid)
        elif kind in ("commit", "rollback") and tid in broker.checks:
            broker.end(tid, kind == "commit", stale)
        elif kind == "flush":
            broker.flush_ops()
        elif kind == "check":
            broker.check_round()
    root = Path(tempfile.mkdtemp())
    broker.write(root)
    got = transactions(Store(root), check_max=check_max)
    assert sorted(got["transaction_id"]) == sorted(sent)
    for r in got.to_dict("records"):
        tid = r["transaction_id"]
        want = broker.decision.get(tid) or ("discarded" if tid in broker.discarded else "pending")
        assert r["state"] == want, (tid, r, broker.decision, broker.discarded)
        assert r["checks"] == broker.checks[tid]
        assert r["half_copies"] == 1 + broker.checks[tid]
        assert (r["topic"], r["queue_id"]) == ("Real", 1)
        newest = broker.records[broker.known[tid]]   # the record the check service holds, unless ended
        held = want == "pending" if legacy else (
            tid not in broker.discarded and newest["queue_offset"] not in broker.removed)
        assert bool(pd.notna(r["live_half_offset"])) is held, r
        if want == "pending" and not legacy:
            assert r["next"] == ("discarded at the next check" if broker.checks[tid] >= check_max else
                                 f"checked again (check {broker.checks[tid] + 1} of {check_max})")


def test_op_bodies_of_either_form():
    assert parse_op_body(b"12") == [12]
    assert parse_op_body(b"0,1,3,2,4,5,") == [0, 1, 3, 2, 4, 5]
    assert parse_op_body(b"") == [] and parse_op_body(None) == []


def test_hostile_properties_are_no_numbers():
    """A check count, real queue id or op offset that is no Java number (too long, not decimal)
    counts as absent, as the broker's parse would refuse it: no error from deep inside pandas."""
    broker = ModelBroker(legacy=False, moves_discards=True, batches_ops=True, check_max=15)
    broker.send("T00")
    broker.records[0]["props"].update({"TRANSACTION_CHECK_TIMES": "9" * 30, "REAL_QID": "1e3"})
    broker._put(HALF, 0, {**broker.records[0]["props"], "TRANSACTION_CHECK_TIMES": "-" * 3})
    root = Path(tempfile.mkdtemp())
    broker.write(root)
    got = transactions(Store(root))
    assert got["checks"].tolist() == [0] and got["state"].tolist() == ["pending"]
    assert got["queue_id"].isna().all()   # not the half queue's own id
