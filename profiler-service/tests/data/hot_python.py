"""A live Python workload for the agent's python plugin tests.

Its main thread spends about nine tenths of its CPU in crunch_numbers and
the rest in light_work; a second thread sleeps (idle, so left out of the
samples). Runs for the number of seconds given as its first argument.
"""

import sys
import threading
import time


def crunch_numbers(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def light_work(n):
    return sum(range(n))


def sleeper():
    while True:
        time.sleep(1)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
    end = time.monotonic() + seconds
    sink = 0
    while time.monotonic() < end:
        sink += crunch_numbers(200_000)
        sink += light_work(100_000)
    print(sink)


if __name__ == "__main__":
    main()
