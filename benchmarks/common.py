"""What every benchmark records about the machine it ran on."""
from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

import numpy as np
import pyarrow as pa


def machine() -> str:
    """CPU model, cores, memory, kernel and the library versions that matter for the numbers."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, pyarrow {pa.__version__}")


RESULTS = Path(__file__).resolve().with_name("RESULTS.md")


def publish(text: str, record: bool) -> None:
    """Print a result section; with `record` (the benchmarks' --record), also append it to
    RESULTS.md, which keeps every run with its date and machine."""
    print(text)
    if record:
        with open(RESULTS, "a") as fh:
            fh.write("\n" + text.strip() + "\n")
        print(f"appended to {RESULTS}")


def sha256_of(path: Path) -> str:
    """The file's SHA-256, hex, read 4 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
