"""A brute-force model of RocketMQ 5.x's timer store for the tests, written from
TimerMessageStore.doEnqueue, TimerWheel and TimerLog.append (rocketmq-all-5.3.3) with plain Python
lists and struct: no rmqlab code. It enqueues messages as the broker does and writes the three files
(timerwheel, timerlog/, config/timercheck) byte for byte, so rmqlab's readers can be judged against
what the model knows it wrote."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from reference_model import java_hash as java_string_hash  # String.hashCode

SLOTS_TOTAL = 7 * 24 * 3600
UNIT_SIZE = 52
MIN_BLANK_LEN = 16
BLANK_MAGIC = struct.unpack(">i", struct.pack(">I", (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF))[0]


@dataclass
class Unit:
    pos: int
    prev_pos: int
    magic: int
    write_time: int
    delay_time: int
    offset_py: int
    size_py: int
    topic_hash: int


@dataclass
class TimerModel:
    precision_ms: int = 1000
    file_size: int = 4096
    roll_window_slots: int = 3600 * 24 * 2
    slots: dict[int, list[int]] = field(default_factory=dict)   # index -> [time/p, first, last, num, magic]
    units: list[Unit] = field(default_factory=list)
    blanks: list[tuple[int, int]] = field(default_factory=list)  # (pos, size)
    write_pos: int = 0

    def slot_index(self, t: int) -> int:
        return t // self.precision_ms % (SLOTS_TOTAL * 2)

    def get_slot(self, t: int) -> list[int]:
        s = self.slots.get(self.slot_index(t))
        if s is None or s[0] != t // self.precision_ms:
            return [-1, -1, -1, 0, 0]
        return s

    def _append(self) -> int:
        inside = self.write_pos % self.file_size
        if UNIT_SIZE + MIN_BLANK_LEN > self.file_size - inside:
            self.blanks.append((self.write_pos, self.file_size - inside))
            self.write_pos += self.file_size - inside
        pos = self.write_pos
        self.write_pos += UNIT_SIZE
        return pos

    def enqueue(self, write_time: int, delayed: int, offset_py: int, size_py: int, real_topic: str,
                delete: bool = False) -> Unit:
        """TimerMessageStore.doEnqueue: the roll decision, the unit, the slot update."""
        magic = 1
        if delayed - write_time >= self.roll_window_slots * self.precision_ms:
            magic |= 2
            if delayed - write_time - self.roll_window_slots * self.precision_ms < \
                    self.roll_window_slots // 3 * self.precision_ms:
                delayed = write_time + self.roll_window_slots // 2 * self.precision_ms
            else:
                delayed = write_time + self.roll_window_slots * self.precision_ms
        if delete:
            magic |= 4
        time_, first, last, num, smagic = self.get_slot(delayed)
        pos = self._append()
        u = Unit(pos, last, magic, write_time, delayed - write_time, offset_py, size_py, java_string_hash(real_topic))
        self.units.append(u)
        self.slots[self.slot_index(delayed)] = [delayed // self.precision_ms, pos if first == -1 else first, pos,
                                                num - 1 if delete else num + 1, smagic]
        return u

    def write(self, root: Path, *, last_read_time_ms: int = 0, queue_offset: int = 0) -> None:
        root.mkdir(parents=True, exist_ok=True)
        wheel = bytearray(SLOTS_TOTAL * 2 * 32)
        for i, (t, first, last, num, magic) in self.slots.items():
            struct.pack_into(">qqqii", wheel, i * 32, t, first, last, num, magic)
        (root / "timerwheel").write_bytes(bytes(wheel))
        log = root / "timerlog"
        log.mkdir(exist_ok=True)
        files = max(1, -(-self.write_pos // self.file_size))
        data = bytearray(files * self.file_size)
        for u in self.units:
            struct.pack_into(">iqiqiqiiq", data, u.pos, UNIT_SIZE, u.prev_pos, u.magic, u.write_time, u.delay_time,
                             u.offset_py, u.size_py, u.topic_hash, 0)
        for pos, size in self.blanks:
            struct.pack_into(">iqi", data, pos, size, 0, BLANK_MAGIC)
        for k in range(files):
            (log / f"{k * self.file_size:020d}").write_bytes(bytes(data[k * self.file_size:(k + 1) * self.file_size]))
        (root / "config").mkdir(exist_ok=True)
        cp = struct.pack(">7q", last_read_time_ms, self.write_pos, queue_offset, queue_offset, 0, 0, 0)
        (root / "config" / "timercheck").write_bytes(cp + bytes(4096 - len(cp)))

    def chain(self, t: int) -> list[int]:
        """dequeue's walk of the slot of `t`: last_pos back along prev_pos."""
        by_pos = {u.pos: u for u in self.units}
        out, pos = [], self.get_slot(t)[2]
        while pos != -1:
            out.append(pos)
            pos = by_pos[pos].prev_pos
        return out

    def all_num(self, start: int) -> int:
        """TimerWheel.getAllNum: the slots holding the lap of start + i slots, i < slotsTotal x 2."""
        return sum(s[3] for s in self.slots.values() if 0 <= s[0] - start // self.precision_ms < SLOTS_TOTAL * 2)
