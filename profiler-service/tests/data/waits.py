"""Threads that wait, for the Python wall profile's tests.

Three threads besides the main one, each known to spend its wall time one
way: `burn` computes, `wait_for_lock` blocks on a threading.Lock that
`hold_lock` keeps almost all the time (sleeping while it holds it), and
`nap` sleeps in time.sleep. In a CPU profile only `burn` shows; in a wall
profile each of the four threads holds about a quarter of the samples.
Runs for the number of seconds given as its first argument.
"""

import sys
import threading
import time

lock = threading.Lock()
stop = threading.Event()


def burn():
    total = 0
    while not stop.is_set():
        total += sum(i * i for i in range(1000))


def hold_lock():
    while not stop.is_set():
        with lock:
            time.sleep(0.2)
        time.sleep(0.0001)


def wait_for_lock():
    while not stop.is_set():
        with lock:
            pass


def nap():
    while not stop.is_set():
        time.sleep(0.05)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    for work in (burn, hold_lock, wait_for_lock, nap):
        threading.Thread(target=work, name=work.__name__, daemon=True).start()
    time.sleep(seconds)
    stop.set()


if __name__ == "__main__":
    main()
