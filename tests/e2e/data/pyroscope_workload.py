"""A Python program profiled by Pyroscope's own SDK (pyroscope-io), which
pushes its profiles to SERVER: two functions, `hot` doing about twice the
work of `warm`. Prints the wall and CPU seconds its loop ran, and the wall
seconds the SDK ran (configure to shutdown): py-spy, the SDK's sampler,
samples the thread holding the GIL whether it is on a CPU or waiting for
one, so what the loop earned is its wall time times the rate, and what the
SDK can send at most is its own wall time times the rate.

usage: pyroscope_workload.py SERVER TOKEN APP SECONDS
"""
import inspect
import json
import os
import sys
import time

import pyroscope

server, token, app, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
options = dict(
    application_name=app,
    server_address=server,
    sample_rate=100,
    tags={"region": "eu-west"},
)
legacy = "upload_interval" not in inspect.signature(pyroscope.configure).parameters
if not legacy:
    # pyroscope-io 1.x: the push API; the token as a header.
    options.update(http_headers={"Authorization": f"Bearer {token}"}, upload_interval=2)
else:
    # pyroscope-io 0.8: the /ingest API, every 10 s.
    options.update(auth_token=token)
session_began = time.monotonic()
pyroscope.configure(**options)


def hot(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def warm(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


start = os.times()
began = time.monotonic()
end = time.time() + seconds
while time.time() < end:
    hot(200_000)
    warm(100_000)
used = os.times()
wall = time.monotonic() - began
pyroscope.shutdown()
session = time.monotonic() - session_began
if legacy:
    # 0.8's shutdown returns before its last upload is sent (in about 1 ms,
    # measured): a program that exits at once can lose it, and a 5 s run
    # that crossed no 10 s upload boundary then sent nothing (CI stop 35).
    time.sleep(2)
cpu = (used.user - start.user) + (used.system - start.system)
print(json.dumps({"cpu_seconds": cpu, "wall_seconds": wall, "session_seconds": session}))
