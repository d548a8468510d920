"""An S3-compatible server for the tests of rmqlab.spark: moto_server (the dev extra), started on
127.0.0.1 for the session and stopped by its PID; the test bucket's URIs and uploads to it."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import oracles
import pyarrow.fs as pafs

BUCKET = "rmqlab-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_s3(folder: Path) -> Iterator[str]:
    """An S3-compatible server (moto_server from the dev extra) on a free port of 127.0.0.1, its
    log in `folder`, the test bucket made; dummy credentials in the environment. Yields its
    endpoint ``host:port``; stopped by its PID after. Raises RuntimeError when it does not start."""
    exe = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    if exe is None:
        oracles.missing("moto_server, an S3-compatible server", "pip install -e '.[dev]' (moto[server])")
    port = _free_port()
    log = folder / "moto-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                            "AWS_EC2_METADATA_DISABLED")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"moto_server did not start: {tail}") from None
                time.sleep(0.2)
        endpoint = f"127.0.0.1:{port}"
        pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir(BUCKET)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def s3_uri(endpoint: str, key: str) -> str:
    """The URI of `key` in the test bucket. The query string carries the endpoint, and the user
    info the dummy credentials, to every executor (pyarrow.fs.FileSystem.from_uri reads both):
    Spark's Python workers keep the environment of the JVM, which may have started before
    this module set AWS_ACCESS_KEY_ID, and without credentials the S3 client sends unsigned
    chunked uploads that moto stores with their chunk framing."""
    return f"s3://testing:testing@{BUCKET}/{key}?endpoint_override={endpoint}&scheme=http&region=us-east-1"


def upload(local: Path, uri: str) -> str:
    """Every file under folder `local` copied to `uri` (a folder of the test bucket, as
    :func:`s3_uri` makes it); returns `uri`. One signed PUT a file on eight threads (boto3, which
    moto brings): a broker store of 145 files and 406 MB took 4.1 s so, 19.1 s through
    pyarrow.fs.copy_files, whose S3 file system asks about each parent folder first."""
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import parse_qs, urlsplit

    import boto3

    parts = urlsplit(uri)
    assert parts.scheme == "s3" and parts.hostname == BUCKET.lower(), uri
    endpoint = parse_qs(parts.query)["endpoint_override"][0]
    client = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    prefix = parts.path.strip("/")
    files = sorted(p for p in Path(local).rglob("*") if p.is_file())

    def put(path: Path) -> None:
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/{path.relative_to(local).as_posix()}", Body=path.read_bytes())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))
    return uri
