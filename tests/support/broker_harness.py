"""What every real-broker oracle shares: Maven-resolved jars, drivers compiled once, a cache
outside the checkout, servers on 127.0.0.1 started and stopped by PID.

The brokers themselves judge rmqlab: a RocketMQ or Kafka release, resolved from Maven Central
with its own dependencies, writes a store or a partition, and its own code answers the queries.
Everything built is cached under :data:`CACHE` (``$RMQLAB_BROKER_CACHE``, else
``~/.cache/rmqlab/brokers``): the first run downloads and builds, later runs reuse. A cache entry
is keyed by what made it (the driver sources, the release, the scenario), so a changed driver
builds anew and an old entry is never mistaken for a new one.

Java or Maven missing: the test fails when CI is "true" and skips with the reason elsewhere
(:func:`oracles.missing`), as every other oracle does.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import oracles

#: the cache root: jars, compiled drivers, stores written by real brokers (never in the checkout)
CACHE = Path(os.environ.get("RMQLAB_BROKER_CACHE") or Path.home() / ".cache" / "rmqlab" / "brokers")
#: the Maven projects and Java drivers of the harness
BROKERS_DIR = Path(__file__).resolve().parents[1] / "brokers"

NO_MAVEN = ("Maven (`mvn` on PATH) to resolve the broker releases from Maven Central",
            "apt-get install maven")


#: the broker matrices: "core" checks every release once and every scenario on the releases whose
#: code for it differs, so that an empty cache builds within CI's 45 minutes on two cores beside the
#: rest of the suite; "all" checks every release with every scenario it has (on an empty cache about
#: 80 min of builds, more than CI allows: run it where the cache is kept)
MATRICES = ("core", "all")


def broker_matrix() -> str:
    """The matrix the broker tests build and read: ``$RMQLAB_BROKER_MATRIX``, else "core" (see
    :data:`MATRICES`)."""
    matrix = os.environ.get("RMQLAB_BROKER_MATRIX", "").strip() or "core"
    if matrix not in MATRICES:
        raise ValueError(f"RMQLAB_BROKER_MATRIX={matrix!r}: one of {', '.join(MATRICES)}")
    return matrix


class HarnessError(RuntimeError):
    """A broker or driver run failed: the message names the command and the tail of its log."""


def require_java_and_maven() -> None:
    """Fail (CI) or skip (elsewhere) the calling test when `java` or `mvn` is missing."""
    if shutil.which("java") is None:
        oracles.missing(*oracles.NO_JAVA)
    if shutil.which("mvn") is None:
        oracles.missing(*NO_MAVEN)


def digest(*parts: str | bytes | Path) -> str:
    """A short hash of `parts` (a Path counts by its bytes): the cache key of what they make."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            part = part.read_bytes()
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (a lock file beside the entry), so two processes building the
    same cache entry (make and a test run, or two test workers) build it once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached(entry: Path, build: Callable[[Path], None]) -> Path:
    """`entry` when a finished build is there; else ``build(tmp)`` into a sibling temporary
    folder, renamed to `entry` only when it returns, so an interrupted build leaves nothing
    that looks finished."""
    done = entry / ".done"
    if done.exists():
        return entry
    with locked(entry):
        if done.exists():
            return entry
        tmp = entry.with_name(entry.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(entry, ignore_errors=True)
        tmp.mkdir(parents=True)
        build(tmp)
        (tmp / ".done").write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
        tmp.rename(entry)
    return entry


def run(cmd: Sequence[str | os.PathLike], *, log: Path, timeout: float, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> None:
    """Run `cmd` to the end (stdout and stderr into `log`); :class:`HarnessError` with the log's
    tail when it fails or outlives `timeout` seconds (then it is killed, with its children: SIGTERM
    to its process group, so a harness can stop the servers it started in sessions of their own,
    then SIGKILL after 30 s)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc, timeout=30.0)
            raise HarnessError(f"timed out after {timeout:.0f} s: {_show(cmd)}\n{tail(log)}") from None
        except BaseException:   # interrupted (KeyboardInterrupt, SystemExit from a signal): no orphan
            stop(proc, timeout=30.0)
            raise
    if rc != 0:
        raise HarnessError(f"exit status {rc}: {_show(cmd)}\n{tail(log)}")


def start(cmd: Sequence[str | os.PathLike], *, log: Path, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a server in its own process group, output into `log`; stop it with :func:`stop`
    or :func:`kill_group` (by PID: never by name)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab")  # noqa: SIM115 - the child keeps writing after we return
    try:
        return subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                env=env, start_new_session=True)
    finally:
        out.close()


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Send `sig` (default SIGKILL, the ``kill -9`` of a crash) to the process group of `pid`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def stop(proc: subprocess.Popen, *, timeout: float = 60.0, stuck: Path | None = None) -> int:
    """A clean stop: SIGTERM (the brokers' shutdown hooks run), then SIGKILL after `timeout`
    seconds; before that kill, the JVM's threads (``jstack``) into `stuck` when given, to show
    where its shutdown hung. Returns the exit status."""
    if proc.poll() is None:
        kill_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if stuck is not None and shutil.which("jstack"):
                with open(stuck, "wb") as out, contextlib.suppress(subprocess.TimeoutExpired):
                    subprocess.run(["jstack", str(proc.pid)], stdout=out, stderr=subprocess.STDOUT, timeout=60,
                                   check=False)
            kill_group(proc.pid)
            proc.wait()
    return proc.returncode


def loopback_only() -> list[str]:
    """The command prefix that runs a program in a network namespace of its own whose only
    interface is the loopback (127.0.0.1 and ::1): every server a broker run starts is then
    reachable from this machine's loopback only, whatever address the release binds (RocketMQ
    4.x listens on every interface and has no setting for it), and its ports cannot collide
    with anything else running. Needs util-linux's ``unshare`` and iproute2's ``ip``; as root a
    plain network namespace, else a user namespace (``unshare -rn``).

    Everything inside must be started from the one prefixed process (the servers and the
    clients share the namespace); downloads happen before, outside it."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            oracles.missing(f"`{tool}` (a network namespace keeps the brokers on loopback)",
                            "apt-get install util-linux iproute2")
    flags = "-n" if os.geteuid() == 0 else "-rn"
    return ["unshare", flags, "sh", "-c", 'ip link set lo up && exec "$0" "$@"']


def free_port(span: int = 1) -> int:
    """A port on 127.0.0.1 such that it and the `span` - 1 ports above it look free now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + span >= 65535:
            continue
        if all(_port_free(base + i) for i in range(1, span)):
            return base
    raise HarnessError(f"no run of {span} free ports on 127.0.0.1")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, *, timeout: float = 90.0,
                  host: str = "127.0.0.1") -> None:
    """Return once `host`:`port` accepts a connection; :class:`HarnessError` with the log's tail
    when `proc` exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HarnessError(f"server exited with status {proc.returncode} before port {port} opened\n{tail(log)}")
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.settimeout(1.0)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise HarnessError(f"port {port} did not open within {timeout:.0f} s\n{tail(log)}")


def wait_for_line(logs: Sequence[Path], text: str, proc: subprocess.Popen, *, timeout: float = 60.0) -> None:
    """Return once one of `logs` holds a line containing `text`; :class:`HarnessError` with the
    logs' tails when `proc` exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(log.exists() and text in log.read_text(encoding="utf-8", errors="replace") for log in logs):
            return
        if proc.poll() is not None:
            raise HarnessError(f"server exited with status {proc.returncode} before {text!r} was logged\n"
                               + "\n".join(tail(log) for log in logs))
        time.sleep(0.2)
    raise HarnessError(f"{text!r} not logged within {timeout:.0f} s\n" + "\n".join(tail(log) for log in logs))


def maven_jars(pom: Path, properties: dict[str, str], into: Path, *, log: Path, timeout: float = 900.0) -> list[Path]:
    """The jars of `pom` and all its dependencies, with `properties` set (``-Dname=value``),
    copied into `into` by ``mvn dependency:copy-dependencies``: Maven's own cache (~/.m2) holds
    the downloads, `into` the copies a driver's class path names."""
    cmd = ["mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies", f"-DoutputDirectory={into}",
           "-DincludeScope=runtime"]
    cmd += [f"-D{k}={v}" for k, v in properties.items()]
    # one Maven at a time on this machine: Maven 3.8 does not lock its local repository, and
    # the builder resolves two releases at once (tests/brokers/build_all.py)
    with locked(CACHE / "maven"):
        run(cmd, log=log, timeout=timeout)
    jars = sorted(into.glob("*.jar"))
    if not jars:
        raise HarnessError(f"Maven resolved no jars for {pom} with {properties}\n{tail(log)}")
    return jars


def compile_java(sources: Sequence[Path], classpath: Sequence[Path], into: Path, *, log: Path) -> None:
    """``javac`` `sources` against `classpath` into `into` (release 8 bytecode is not needed:
    the drivers run on the JVM that compiles them)."""
    into.mkdir(parents=True, exist_ok=True)
    run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(map(str, classpath)), "-d", into,
         *sources], log=log, timeout=300)


def tail(log: Path, lines: int = 40) -> str:
    """The last `lines` lines of `log` (for error messages)."""
    try:
        text = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {log})"
    return "\n".join(text[-lines:])


def _show(cmd: Sequence[str | os.PathLike]) -> str:
    return " ".join(str(c) for c in cmd)
