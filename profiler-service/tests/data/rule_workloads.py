"""Python workloads for the seed detection rules' golden captures
(tests/rule_captures.rs): each mode spends nearly all its CPU in the
standard library code one `py-*` rule is about, except `burn`, which
touches none of it.

    python3 rule_workloads.py MODE SECONDS

Modes:
  re-compile  re.compile on patterns never seen before, so every call
              misses re's cache and compiles
  re-cached   re.compile of a few patterns in the hot path, each call
              answered from re's cache
  deepcopy    copy.deepcopy of a nested document
  json        json.dumps and json.loads of a document
  logging     records formatted by a logging.Formatter (time, level,
              %-style arguments) into a handler that discards the text
  burn        integer arithmetic only
  threading-wait  (for wall profiles) four workers taking turns on one
              threading.Semaphore, each holding it for a millisecond of
              work: three of them wait in Semaphore.acquire at any time
"""

import copy
import json
import logging
import re
import sys
import threading
import time


def document(n):
    return {
        "id": n,
        "name": f"item-{n}",
        "tags": ["a", "b", "c", str(n)],
        "price": n * 1.25,
        "stock": {"warehouse": n % 7, "shelf": [n, n + 1, n + 2]},
    }


def compile_patterns(start):
    # A new pattern each call: re's cache never has it.
    for i in range(start, start + 50):
        re.compile(rf"(?P<key>[a-z]{{{i % 9 + 1}}})_{i}\s*=\s*(?P<value>\d+|'[^']*')")
    return start + 50


LINES = ["alpha=1", "beta: 22", "gamma-333", "delta 4444"]
PATTERNS = [r"(\w+)=(\d+)", r"(\w+):\s*(\d+)", r"(\w+)-(\d+)", r"(\w+)\s+(\d+)"]


def match_lines(found):
    # Compiled on every use: re's cache has it, but looking it up is
    # most of the work.
    for i in range(1000):
        if re.compile(PATTERNS[i % 4]).match(LINES[i % 4]):
            found += 1
    return found


def copy_documents(docs):
    return len(copy.deepcopy(docs))


def round_trip(docs):
    return len(json.loads(json.dumps(docs)))


class Discard(logging.Handler):
    """Formats each record, as a real handler does, and drops the text."""

    def emit(self, record):
        self.format(record)


def logger():
    log = logging.getLogger("rule_workloads")
    handler = Discard()
    handler.setFormatter(
        logging.Formatter(
            "%(asctime)s.%(msecs)03d %(levelname)-8s %(name)s %(module)s:%(funcName)s:%(lineno)d"
            " [%(threadName)s] %(message)s"
        )
    )
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    return log


ORDER = {"sku": "A-1001", "qty": 3, "tags": ["gift", "express"], "address": {"city": "Lyon"}}


def log_records(log, n):
    for i in range(100):
        log.info("order %d of %s: %r at %.2f", n + i, "customer", ORDER, i * 0.5)
    return n + 100


def burn(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def take_turns(slot, end):
    while time.monotonic() < end:
        with slot:
            burn(2_000)


def threading_wait(seconds):
    slot = threading.Semaphore(1)
    end = time.monotonic() + seconds
    workers = [
        threading.Thread(target=take_turns, args=(slot, end), name=f"worker-{i}")
        for i in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    if mode == "threading-wait":
        threading_wait(seconds)
        return
    docs = [document(n) for n in range(50)]
    log = logger()
    steps = {
        "re-compile": compile_patterns,
        "re-cached": match_lines,
        "deepcopy": lambda n: copy_documents(docs),
        "json": lambda n: round_trip(docs),
        "logging": lambda n: log_records(log, n),
        "burn": lambda n: burn(20_000),
    }
    step = steps[mode]
    end = time.monotonic() + seconds
    state = 0
    while time.monotonic() < end:
        state = step(state)
    print(state)


if __name__ == "__main__":
    main()
