"""index.interval.bytes read off a segment's offset entries (``rmqlab kafka verify`` without the
topic's setting). Judged by a brute force of LogSegment.append's rule written here with the
standard library: for every interval from 0 to past the segment's size, the entries it writes;
the fit must be exactly the intervals that write the entries on disk."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.kafka.rebuild import INDEX_INTERVAL_BYTES, fit_index_interval, interval_from_entries


def appended_entries(sizes: list[int], interval: int) -> list[int]:
    """LogSegment.append, one run from an empty segment: before a batch is appended, an offset
    entry for it when the bytes since the last entry exceed the interval (Kafka 2.x-4.x)."""
    return appended_entries_in_runs(sizes, interval, set())


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=40), interval=st.integers(0, 2000))
def test_the_fit_is_every_interval_that_writes_the_same_entries(sizes, interval):
    on_disk = appended_entries(sizes, interval)
    positions = np.cumsum([0] + sizes[:-1])
    fit = fit_index_interval(positions, np.array(on_disk, np.int64))
    same = [j for j in range(sum(sizes) + 2) if appended_entries(sizes, j) == on_disk]
    if not on_disk:
        assert fit is None          # no entry: nothing to judge (a lost index looks the same)
        return
    assert fit is not None and interval in range(fit[0], fit[1] + 1)
    assert same == list(range(fit[0], fit[1] + 1))


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(1, 300), min_size=3, max_size=40), interval=st.integers(0, 600),
       data=st.data())
def test_entries_no_interval_writes_fit_none(sizes, interval, data):
    """An entry dropped, or one moved to another batch, fits no interval unless some interval
    writes exactly that list (checked by the brute force)."""
    on_disk = appended_entries(sizes, interval)
    positions = np.cumsum([0] + sizes[:-1])
    if len(on_disk) < 2:
        return
    i = data.draw(st.integers(0, len(on_disk) - 1))
    if data.draw(st.booleans()):
        damaged = on_disk[:i] + on_disk[i + 1:]
    else:
        others = [int(p) for p in positions[1:] if p not in on_disk]
        if not others:
            return
        damaged = sorted(on_disk[:i] + on_disk[i + 1:] + [data.draw(st.sampled_from(others))])
    fit = fit_index_interval(positions, np.array(damaged, np.int64))
    writers = [j for j in range(sum(sizes) + 2) if appended_entries(sizes, j) == damaged]
    assert (fit is None) == (not writers)
    if fit is not None:
        assert writers == list(range(fit[0], fit[1] + 1))


def test_the_default_is_kept_when_it_fits_and_named_when_not():
    sizes = [170] * 400
    positions = np.cumsum([0] + sizes[:-1])
    assert interval_from_entries(positions, np.array(appended_entries(sizes, 4096))) == (INDEX_INTERVAL_BYTES, "")
    interval, note = interval_from_entries(positions, np.array(appended_entries(sizes, 512)))
    assert interval == 512 and "fit 510 to 679 bytes, not the default 4,096: judged with 512" in note
    # entries no one interval writes (a restart counts again from its batch): the first entry's
    # interval, and the rest is judged with it
    interval, note = interval_from_entries(positions, np.array([680, 1360, 1870, 2550]))
    assert interval == 512 and "the first 2 offset entries fit 510 to 679 bytes" in note
    assert interval_from_entries(positions, np.array([4250, 4420])) == (INDEX_INTERVAL_BYTES, "")


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=40), interval=st.integers(0, 2000),
       rest=st.lists(st.integers(1, 300), max_size=20))
def test_the_first_entry_alone_fits_the_intervals_of_the_first_run(sizes, interval, rest):
    """Only the entries up to the first are judged (whole=False): every interval that writes
    that entry first, whatever comes after it."""
    on_disk = appended_entries(sizes + rest, interval)
    if not on_disk:
        return
    positions = np.cumsum([0] + (sizes + rest)[:-1])
    fit = fit_index_interval(positions, np.array(on_disk[:1], np.int64), whole=False)
    firsts = [j for j in range(sum(sizes + rest) + 2) if appended_entries(sizes + rest, j)[:1] == on_disk[:1]]
    assert fit is not None and firsts == list(range(fit[0], fit[1] + 1))


def call_entries(sizes: list[int], call_sizes: list[int], interval: int) -> list[tuple[int, int]]:
    """LogSegment.append called with several batches at once (a v0/v1 producer's message set,
    a follower's fetch, the cleaner's chunk): one run from an empty segment, each call of
    `call_sizes` batches; an entry (the call's last batch number, its first position) when the
    bytes since the last entry exceed the interval, the call's bytes then counted whole."""
    entries, batch, position, since = [], 0, 0, 0
    for n in call_sizes:
        size = sum(sizes[batch:batch + n])
        if since > interval:
            entries.append((batch + n - 1, position))
            since = 0
        since += size
        position += size
        batch += n
    return entries


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=40), interval=st.integers(0, 2000), data=st.data())
def test_entries_of_several_batch_calls_fit_call_by_call(sizes, interval, data):
    """Entries the broker made per call of several batches: read off with the calls they imply
    (append_calls), the interval chosen is one under which those calls write exactly the
    entries on disk, and the fit holds the interval the broker used (brute force above)."""
    from rmqlab.kafka.rebuild import append_calls, batch_table

    call_sizes, left = [], len(sizes)
    while left:
        call_sizes.append(data.draw(st.integers(1, min(left, 8))))
        left -= call_sizes[-1]
    on_disk = call_entries(sizes, call_sizes, interval)
    positions = np.cumsum([0] + sizes[:-1])
    batches = batch_table(positions=positions, sizes=sizes, base_offsets=range(len(sizes)),
                          last_offsets=range(len(sizes)), max_timestamps=[-1] * len(sizes))
    entries = np.array(on_disk, np.int64).reshape(-1, 2)
    calls = append_calls(batches, entries)
    assert calls is not None
    at = entries[:, 1]
    chosen, note = interval_from_entries(positions, at, call_positions=lambda: calls["position"].to_numpy(np.int64))
    merged = np.diff(np.searchsorted(positions, np.append(calls["position"].to_numpy(), sum(sizes)))).tolist()
    if not on_disk:
        assert (chosen, note) == (INDEX_INTERVAL_BYTES, "")
        return
    assert call_entries(sizes, merged, chosen) == on_disk, note
    fit = fit_index_interval(calls["position"].to_numpy(np.int64), at)
    if fit_index_interval(positions, at) is None:
        assert fit is not None and fit[0] <= interval <= fit[1]
        assert [j for j in range(fit[0], fit[1] + 1) if call_entries(sizes, merged, j) != on_disk] == []


def appended_entries_in_runs(sizes: list[int], interval: int, restarts: set[int]) -> list[int]:
    """:func:`appended_entries` where the broker restarted before each batch numbered in
    `restarts`: LogSegment's bytesSinceLastIndexEntry is 0 again when a broker loads the segment
    (and the batch it appends first gets no entry)."""
    entries, position, since = [], 0, 0
    for n, size in enumerate(sizes):
        if n in restarts:
            since = 0
        elif since > interval:
            entries.append(position)
            since = 0
        since += size
        position += size
    return entries


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(20, 300), min_size=2, max_size=60), interval=st.sampled_from([128, 256, 512, 1000]),
       data=st.data())
def test_a_segment_appended_over_restarts_gives_an_interval_that_writes_its_entries(sizes, interval, data):
    """A segment appended by several broker runs (each counts bytes from its first batch) and its
    restart points given: the interval read off its entries writes exactly those entries, run by
    run (the brute force above); a single run's fit over all of them could pick a value that
    writes others (a run's entries can happen to fit one count from position 0)."""
    restarts = set(data.draw(st.lists(st.integers(1, len(sizes) - 1), max_size=3)))
    on_disk = appended_entries_in_runs(sizes, interval, restarts)
    if not on_disk:
        return
    positions = np.cumsum([0] + sizes[:-1])
    chosen, _ = interval_from_entries(positions, np.array(on_disk, np.int64),
                                      run_starts=[int(positions[n]) for n in sorted(restarts)])
    assert appended_entries_in_runs(sizes, chosen, restarts) == on_disk
