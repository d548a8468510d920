"""The sample store in ``data/``: a small, fixed, byte-for-byte reproducible store directory
that the notebooks and examples read.

``make data`` (or ``python -m rmqlab.lab.sample``) deletes ``data/generated/sample-store/``,
rebuilds it with :func:`build_sample_store` and compares every file's SHA-256 with the committed
manifest ``data/MANIFEST.sha256`` (``sha256sum`` format, paths relative to the store root), and
fails when they differ. ``python -m rmqlab.lab.sample --write-manifest`` rewrites the manifest on
purpose (after a deliberate change to the sample or to the format code that writes it).

What it holds (:data:`SAMPLE_WORKLOAD` and :data:`SAMPLE_STORE_OPTIONS`; the numbers are
checked by ``tests/lab/test_sample.py``):

* three producer topics with unequal shares, plus ``SCHEDULE_TOPIC_XXXX`` for delayed sends;
* keys: Zipf-distributed hot keys (``USER_<rank>``), unique order ids, several tokens per
  message, some keyless messages, and ``ORDER_Aa<i>`` / ``ORDER_BB<i>`` pairs whose
  ``String.hashCode`` collide (the broker returns one for the other);
* the broker clock stepping back a few times (out-of-order store times), short bursts,
  transactional half messages with commit / rollback records, delayed messages delivered inside
  the store's span, and IPv6 producers;
* a small index geometry (1024 slots, 8192 entries a file) so the index rolls over to a new
  file many times, and 1 MiB CommitLog files so the CommitLog rolls too. Index files are named
  by the store time of the message that creates them, in UTC, so the names (and bytes) do not
  depend on the machine's clock or time zone.

Determinism: the bytes are a function of :data:`SAMPLE_WORKLOAD`, :data:`SAMPLE_STORE_OPTIONS`
and the format code (workload generator, CommitLog writer, dispatch). A change to any of them
that changes the bytes makes ``make data`` fail until the manifest is rewritten on purpose.

>>> SAMPLE_WORKLOAD.seed, len(SAMPLE_WORKLOAD.topics), SAMPLE_STORE_OPTIONS["index_num"]
(20240610, 3, 8192)
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmqlab.formats import storepaths
from rmqlab.formats.storepaths import StorePaths
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store

__all__ = [
    "SAMPLE_WORKLOAD",
    "SAMPLE_STORE_OPTIONS",
    "DEFAULT_ROOT",
    "DEFAULT_MANIFEST",
    "build_sample_store",
    "sample_store",
    "SampleStoreMismatchError",
    "manifest",
    "format_manifest",
    "read_manifest",
    "write_manifest",
    "compare_manifests",
    "main",
]

#: Where ``make data`` puts the store and finds the manifest (relative to the repository root).
DEFAULT_ROOT = Path("data") / "generated" / "sample-store"
DEFAULT_MANIFEST = Path("data") / "MANIFEST.sha256"

#: The sample's producers. About 30,000 sends over a minute of broker time.
SAMPLE_WORKLOAD = Workload(
    seed=20240610,
    messages=30_000,
    start_ms=1_718_000_000_000,          # 2024-06-10 06:13:20 UTC
    timezone="UTC",
    drain=True,                           # decisions and deliveries after the last send are written too
    rate=500.0,
    pattern="bursts",
    burst_interval_s=15.0,
    burst_duration_s=2.0,
    burst_factor=4.0,
    producers=8,
    topics=("Orders", "Payments", "Inventory"),
    topic_weights=(0.5, 0.3, 0.2),
    queues_per_topic=4,
    ipv6_fraction=0.25,                   # 2 of the 8 producers
    network_delay_ms=1.0,
    producer_clock_skew_ms=5.0,
    broker_clock_steps=3,
    broker_clock_step_ms=1500,
    keyless_fraction=0.1,
    keys_per_message=1.6,
    max_keys_per_message=4,
    hot_key_fraction=0.3,
    hot_keys=200,
    zipf_s=1.2,
    collision_pairs=12,
    collision_fraction=0.02,
    body_median=120,
    body_sigma=0.6,
    body_max=2048,
    transaction_fraction=0.03,
    commit_fraction=0.8,
    rollback_fraction=0.15,
    decision_delay_ms=200.0,
    delay_fraction=0.02,
    delay_levels=(1, 2, 3),               # 1 s, 5 s, 10 s: delivered inside the store's span
)

#: Store geometry: small index files (1024 slots, 8191 keys each) and 1 MiB CommitLog files, so
#: both roll over; UTC index file names.
SAMPLE_STORE_OPTIONS: dict[str, Any] = {
    "hash_slot_num": 1024,
    "index_num": 8192,
    "commitlog_file_size": 1 << 20,
    "tz": _dt.UTC,
}

_STORE_ENTRIES = {storepaths.COMMITLOG, storepaths.CONSUMEQUEUE, storepaths.INDEX, storepaths.CHECKPOINT}


def build_sample_store(root: str | os.PathLike, *, workload: Workload = SAMPLE_WORKLOAD,
                       **overrides) -> Store:
    """Write the sample store into `root` (which must not hold a CommitLog yet) and return its
    :class:`rmqlab.store.directory.Store`. `workload` / `overrides` (store options) are for experiments:
    only the defaults match the committed manifest. Cost: one :func:`generate_store` of the
    sample workload, O(its messages)."""
    options = {**SAMPLE_STORE_OPTIONS, **overrides}
    return generate_store(root, workload, **options)


def sample_store(root: str | os.PathLike | None = None) -> Store:
    """The sample store, opened read-only with its geometry; built first if it is not there.

    `root` defaults to ``data/generated/sample-store`` in the repository this package was
    installed from (editable install), so notebooks find it whatever their working folder.
    A missing store is built with :func:`build_sample_store`. An existing one is reused only
    when its files match the committed manifest (``data/MANIFEST.sha256``); a store that does
    not (edited, damaged, or built by older code) is deleted and built again, and when the
    fresh build does not match either, :class:`SampleStoreMismatchError` says which files differ.
    Installed without its repository (no manifest beside the package), the store is built
    when missing and reused unchecked. Cost: one SHA-256 pass over the store (about 10 MiB)
    the first time a process opens it; later calls compare file sizes and times only.

    >>> sample_store().info()["index_files"]
    10
    """
    root = Path(root) if root is not None else _REPOSITORY / DEFAULT_ROOT
    expected = _committed_manifest()
    if StorePaths(root).commitlog.is_dir():
        if expected is None or _matches(root, expected):
            return Store(root, **SAMPLE_STORE_OPTIONS)
    _build_in_place(root)
    if expected is not None and not _matches(root, expected):
        problems = compare_manifests(expected, manifest(root))
        raise SampleStoreMismatchError(
            f"rmqlab.lab.sample: a fresh build at {root} does not match {_MANIFEST_PATH} "
            f"({len(problems)} files, e.g. {problems[0].strip()}); if the change is intended, "
            "rewrite the manifest with `python -m rmqlab.lab.sample --write-manifest`")
    return Store(root, **SAMPLE_STORE_OPTIONS)


class SampleStoreMismatchError(RuntimeError):
    """A freshly built sample store does not match the committed manifest: the code that
    writes it changed the bytes."""


#: The manifest committed beside the package (absent when installed without the repository).
#: the repository checkout this package runs from (data/ and the manifest are beside rmqlab/)
_REPOSITORY = Path(__file__).resolve().parents[2]
_MANIFEST_PATH = _REPOSITORY / DEFAULT_MANIFEST
#: Stores this process has hashed and found matching, by their files' (size, mtime) stamps.
_verified: dict[Path, tuple] = {}


def _committed_manifest() -> dict[str, str] | None:
    return read_manifest(_MANIFEST_PATH) if _MANIFEST_PATH.is_file() else None


def _stamps(root: Path) -> tuple:
    return tuple(sorted((p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns)
                        for p in root.rglob("*") if p.is_file() for st in [p.stat()]))


def _matches(root: Path, expected: dict[str, str]) -> bool:
    key, stamps = root.resolve(), _stamps(root)
    if _verified.get(key) == stamps:
        return True
    ok = manifest(root) == expected
    if ok:
        _verified[key] = stamps
    else:
        _verified.pop(key, None)
    return ok


def _build_in_place(root: Path) -> None:
    _clear(root)                      # a stale store, or what an interrupted build left
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.parent / f".{root.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    build_sample_store(tmp)
    try:
        os.rename(tmp, root)          # readers see no store or a whole one, never half of one
    except OSError:                   # another process finished first: keep its store
        shutil.rmtree(tmp, ignore_errors=True)


def manifest(root: str | os.PathLike) -> dict[str, str]:
    """``{relative path: sha256 hex}`` of every file under `root`, sorted by path; paths use
    ``/`` whatever the OS."""
    root = Path(root)
    out = {}
    for p in sorted(root.rglob("*"), key=lambda q: q.relative_to(root).as_posix()):
        if p.is_file():
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            out[p.relative_to(root).as_posix()] = h.hexdigest()
    return out


def format_manifest(digests: dict[str, str]) -> str:
    """The ``sha256sum`` text of a manifest: ``<hex>  <path>`` lines, sorted by path."""
    return "".join(f"{digests[p]}  {p}\n" for p in sorted(digests))


def read_manifest(path: str | os.PathLike) -> dict[str, str]:
    """Parse a ``sha256sum``-format file (``<hex>  <path>`` or binary mode ``<hex> *<path>``).
    Blank lines and ``#`` comments are skipped; anything else malformed raises ValueError."""
    out = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, sep, name = line.partition(" ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) \
                or name[:1] not in (" ", "*") or not name[1:]:
            raise ValueError(f"{path}:{n}: not a sha256sum line: {line!r}")
        name = name[1:]
        if name in out:
            raise ValueError(f"{path}:{n}: {name} listed twice")
        out[name] = digest
    return out


def write_manifest(root: str | os.PathLike, path: str | os.PathLike) -> dict[str, str]:
    """Write the manifest of the store at `root` to `path`; returns it."""
    digests = manifest(root)
    Path(path).write_text(format_manifest(digests), encoding="utf-8")
    return digests


def compare_manifests(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """The differences, one line each (empty when the two agree exactly)."""
    out = []
    for p in sorted(set(expected) | set(actual)):
        if p not in actual:
            out.append(f"missing:   {p}")
        elif p not in expected:
            out.append(f"unexpected: {p}")
        elif expected[p] != actual[p]:
            out.append(f"differs:   {p} (expected {expected[p][:12]}..., got {actual[p][:12]}...)")
    return out


def _clear(root: Path) -> None:
    """Delete a previous sample store at `root`; refuse a folder holding anything else."""
    if not root.exists():
        return
    if not root.is_dir():
        raise ValueError(f"rmqlab.lab.sample: {root} is not a folder")
    other = sorted(p.name for p in root.iterdir() if p.name not in _STORE_ENTRIES)
    if other:
        raise ValueError(f"rmqlab.lab.sample: {root} holds files that are not a store ({', '.join(other[:5])}); "
                         "refusing to delete it")
    shutil.rmtree(root)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rmqlab.lab.sample``: rebuild the sample store and check it against the manifest
    (exit 1 when they differ), or rewrite the manifest with ``--write-manifest``."""
    p = argparse.ArgumentParser(prog="python -m rmqlab.lab.sample", description=main.__doc__)
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                   help=f"where to build the store (deleted first; default {DEFAULT_ROOT})")
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST,
                   help=f"the sha256sum manifest (default {DEFAULT_MANIFEST})")
    p.add_argument("--write-manifest", action="store_true",
                   help="rewrite the manifest from this build instead of checking against it")
    p.add_argument("--no-build", action="store_true",
                   help="check (or with --write-manifest, record) the store already at --root; do not rebuild it")
    args = p.parse_args(argv)

    if args.no_build:
        if not StorePaths(args.root).commitlog.is_dir():
            print(f"rmqlab.lab.sample: error: no store at {args.root} (run without --no-build to build it)",
                  file=sys.stderr)
            return 1
        store, what = Store(args.root, **SAMPLE_STORE_OPTIONS), "existing"
    else:
        try:
            _clear(args.root)
        except ValueError as e:
            raise SystemExit(str(e)) from None
        t0 = time.perf_counter()
        store = build_sample_store(args.root)
        what = f"built in {time.perf_counter() - t0:.1f} s"
    info = store.info()
    digests = manifest(args.root)
    print(f"sample store: {args.root}: {info['messages']:,} messages in {info['commitlog_files']} CommitLog files, "
          f"topics {', '.join(info['topics'])}, {info['consume_queue_units']:,} ConsumeQueue units, "
          f"{info['index_files']} index files ({info['index_keys']:,} keys); {what}")
    if args.write_manifest:
        args.manifest.parent.mkdir(parents=True, exist_ok=True)
        args.manifest.write_text(format_manifest(digests), encoding="utf-8")
        print(f"wrote {args.manifest} ({len(digests)} files)")
        return 0
    if not args.manifest.exists():
        print(f"rmqlab.lab.sample: error: no manifest at {args.manifest} "
              "(run `python -m rmqlab.lab.sample --write-manifest` to create it)", file=sys.stderr)
        return 1
    problems = compare_manifests(read_manifest(args.manifest), digests)
    if problems:
        print(f"rmqlab.lab.sample: error: the sample store does NOT match {args.manifest}: "
              f"{len(problems)} of {len(digests)} files", file=sys.stderr)
        for line in problems[:20]:
            print(f"  {line}", file=sys.stderr)
        if len(problems) > 20:
            print(f"  ... and {len(problems) - 20} more", file=sys.stderr)
        print("If the change is intended, rewrite the manifest with "
              "`python -m rmqlab.lab.sample --write-manifest` and commit it.", file=sys.stderr)
        return 1
    print(f"OK: all {len(digests)} files match {args.manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
