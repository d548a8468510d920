"""Real Spark deployments for the tests, started from the pyspark package's own scripts and
stopped by process id: a standalone cluster (one master, two one-core workers with work
directories of their own) and a Spark Connect server. Everything binds to 127.0.0.1 and keeps
its logs and work directories under the folder it is given.

Both need rmqlab importable by the Python workers they start: the package's parent folder is
put first on their PYTHONPATH, and PYSPARK_PYTHON is this interpreter.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import rmqlab

STARTUP_SECONDS = 120


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env() -> dict[str, str]:
    """The environment of the Spark processes: local addresses, this interpreter, this rmqlab."""
    env = dict(os.environ)
    package_parent = str(Path(rmqlab.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [env.get("PYTHONPATH")])])
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARK_HOME"] = str(spark_home())
    for inherited in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT",
                      "PYSPARK_GATEWAY_SECRET"):
        env.pop(inherited, None)
    return env


def _stop(pid: int, timeout: float = 20.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `timeout` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:           # not our child: poll for its existence
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            done = 0
        if done:
            return
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class StandaloneCluster:
    """A master and `workers` workers of one core each, as ``spark-class`` runs them."""

    root: Path
    workers: int = 2
    master_url: str = ""
    pids: list[int] = field(default_factory=list)

    def start(self) -> StandaloneCluster:
        spark_class = str(spark_home() / "bin" / "spark-class")
        env = spark_env()
        port, ui = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)

        def launch(name: str, *args: str) -> None:
            with open(logs / f"{name}.log", "wb") as log:
                proc = subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=self.root)
            self.pids.append(proc.pid)

        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(ui))
        for w in range(self.workers):
            work = self.root / f"worker-{w}"
            work.mkdir(exist_ok=True)
            launch(f"worker-{w}", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                   "--cores", "1", "--memory", "2g", "--work-dir", str(work), "--webui-port", str(free_port()))
        deadline = time.monotonic() + STARTUP_SECONDS
        alive = 0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    alive = int(json.load(r).get("aliveworkers", 0))
            except (OSError, ValueError):
                alive = 0
            if alive >= self.workers:
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"standalone cluster: {alive} of {self.workers} workers alive after "
                           f"{STARTUP_SECONDS} s\n{_tail(logs / 'master.log')}")

    def stop(self) -> None:
        for pid in reversed(self.pids):             # workers first: they stop their executors
            _stop(pid)
        self.pids.clear()


@dataclass
class ConnectServer:
    """A Spark Connect server from ``sbin/start-connect-server.sh`` (which daemonizes and leaves
    its process id in a file under SPARK_PID_DIR), with a ``local[2]`` master."""

    root: Path
    url: str = ""
    pid: int | None = None

    def start(self) -> ConnectServer:
        port = free_port()
        self.url = f"sc://127.0.0.1:{port}"
        env = spark_env()
        for name in ("pid", "logs"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        env.update(SPARK_PID_DIR=str(self.root / "pid"), SPARK_LOG_DIR=str(self.root / "logs"),
                   SPARK_IDENT_STRING="rmqlab-tests")
        subprocess.run(
            [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", "local[2]",
             "--driver-memory", "2g",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
             "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=4",
             # progress reports often enough for the short jobs of the tests
             "--conf", "spark.connect.progress.reportInterval=100ms"],
            env=env, check=True, cwd=self.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        pid_files = list((self.root / "pid").glob("*.pid"))
        if len(pid_files) != 1:
            raise RuntimeError(f"Spark Connect server: pid files {pid_files}")
        self.pid = int(pid_files[0].read_text().split()[0])
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                break
        logs = sorted((self.root / "logs").glob("*.out"))
        self.stop()
        raise RuntimeError(f"Spark Connect server did not listen on {port}\n"
                           f"{_tail(logs[0]) if logs else '(no log)'}")

    def stop(self) -> None:
        if self.pid is not None:
            _stop(self.pid)
            self.pid = None


# -- what the tests build on both deployments, and the single-process truth -------------------

#: `rmqlab spark build` arguments of a small workload: five CommitLog files, so five tasks
GEOMETRY = ["--hash-slot-num", "61", "--index-num", "1000"]
WORKLOAD_ARGS = ["--workload", "--messages", "3000", "--seed", "5", "--commitlog-file-size", "262144",
                 "--collision-pairs", "2", "--utc", *GEOMETRY]


def cli_workload_source():
    """The WorkloadSource that `rmqlab spark build` makes of :data:`WORKLOAD_ARGS`."""
    from rmqlab.lab.workload import Workload
    from rmqlab.spark.sources import WorkloadSource

    w = Workload(messages=3000, seed=5, topics=("TopicTest",), rate=1000.0, pattern="steady", collision_pairs=2)
    return WorkloadSource(w, commitlog_file_size=262144)


def single_process_build(source, directory: Path) -> list[Path]:
    """rmqlab.store.indexservice.bulk_build of all of `source`'s keys, each file named by its first
    key's store time in UTC: what build_index_files writes for the same source."""
    import datetime

    import pyarrow as pa

    from rmqlab.spark.sources import KEY_SCHEMA
    from rmqlab.store.indexservice import ExpandedKeys, bulk_build

    t = pa.Table.from_batches([b for i in range(source.num_partitions) for b in source.keys(i)], schema=KEY_SCHEMA)
    keys = ExpandedKeys(t.column("key").combine_chunks(), t.column("phy_offset").to_numpy(),
                        t.column("store_timestamp").to_numpy())
    cap = 999
    times = [int(keys.store_timestamps[lo]) for lo in range(0, len(keys), cap)]
    return bulk_build(keys, directory, hash_slot_num=61, index_num=1000, clock=iter(times).__next__,
                      tz=datetime.UTC)


def index_files(directory: Path) -> list[Path]:
    from rmqlab.store.indexservice import is_index_file_name

    return sorted(p for p in directory.iterdir() if is_index_file_name(p.name))


def rmqlab_cli(*argv: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """`rmqlab ARGV` in a new Python process (its own JVM, if any) run in `cwd`."""
    return subprocess.run([sys.executable, "-m", "rmqlab", *argv], cwd=cwd, env=spark_env(),
                          capture_output=True, text=True, timeout=timeout)


def cli_json(*argv: str, cwd: Path) -> dict:
    r = rmqlab_cli(*argv, "--json", cwd=cwd)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.splitlines()[-1])
