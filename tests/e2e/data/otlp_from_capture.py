"""OTLP profiles from real captures, built with OpenTelemetry's own
generated classes (PyPI `opentelemetry-proto`), for the OTLP ingest tests
(tests/e2e/ingest_otlp.rs).

  otlp_from_capture.py capture DIR
      Profiles a small two-threaded Python program twice, with py-spy
      (`record --format raw`) and with perf (`record -e cpu-clock -F 99
      -g`, `perf script`), into DIR.
  otlp_from_capture.py build DIR SERVICE
      Writes DIR/SERVICE.pb (an ExportProfilesServiceRequest), the same
      request as OTLP/JSON (DIR/SERVICE.json, protobuf's JSON mapping with
      ids in hex as OTLP/JSON has them) and what the captures hold
      (DIR/SERVICE.expect.json), and spoiled copies beside a good profile
      (DIR/SERVICE.bad-CASE.pb).
  otlp_from_capture.py grpc FILE TARGET CA TOKEN [gzip]
      Sends the request in FILE to ProfilesService/Export at TARGET over
      TLS (trusting CA) with grpcio, and prints the answer as JSON.
"""

import base64
import json
import os
import re
import subprocess
import sys
import time

from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development import (
    profiles_service_pb2 as service_pb2,
)
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2

WORKLOAD = """
import ctypes, sys, threading, time
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def warm(n):
    return hot(n // 2)
def spin(seconds, name=None):
    if name:
        # The thread's name as the kernel (and so perf) knows it.
        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
    end = time.time() + seconds
    while time.time() < end:
        hot(20000)
        warm(20000)
seconds = float(sys.argv[1])
WORKER = "odp-worker"
worker = threading.Thread(target=spin, args=(seconds, WORKER))
worker.start()
spin(seconds)
worker.join()
"""
SECONDS = 3
PY_SPY_RATE = 100
PERF_HZ = 99
TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")
PROFILE_ID = bytes.fromhex("0123456789abcdef0123456789abcdef")


def capture(out):
    os.makedirs(out, exist_ok=True)
    program = os.path.join(out, "workload.py")
    with open(program, "w") as f:
        f.write(WORKLOAD)
    started = time.time_ns()
    pyspy = subprocess.run(
        ["py-spy", "record", "--format", "raw", "-r", str(PY_SPY_RATE), "-o",
         os.path.join(out, "pyspy.txt"), "--", sys.executable, program, str(SECONDS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    ended = time.time_ns()
    # py-spy sometimes fails to reap the program it started ("No child
    # process") after it wrote its data: the capture is whole then.
    data = os.path.join(out, "pyspy.txt")
    written = os.path.exists(data) and os.path.getsize(data) > 0
    if pyspy.returncode != 0 and not (written and "No child process" in pyspy.stderr):
        sys.exit(f"py-spy failed ({pyspy.returncode}): {pyspy.stderr}")
    with open(os.path.join(out, "pyspy.times"), "w") as f:
        f.write(f"{started} {ended}\n")
    data = os.path.join(out, "perf.data")
    subprocess.run(
        ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_HZ), "-g", "-k",
         "CLOCK_REALTIME", "-o", data, "--", sys.executable, program, str(SECONDS)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with open(os.path.join(out, "perf.txt"), "w") as f:
        subprocess.run(
            ["perf", "script", "-i", data, "-F", "comm,pid,tid,time,ip,sym,dso"],
            check=True, stdout=f, stderr=subprocess.DEVNULL,
        )


class Dictionary:
    """A ProfilesDictionary filled as producers fill one: entry 0 of every
    table the zero value, every entry interned."""

    def __init__(self):
        self.d = profiles_pb2.ProfilesDictionary()
        for table in ("mapping_table", "location_table", "function_table",
                      "link_table", "attribute_table", "stack_table"):
            getattr(self.d, table).add()
        self.d.string_table.append("")
        self.index = {}

    def _intern(self, kind, key, make):
        if (kind, key) not in self.index:
            self.index[(kind, key)] = make()
        return self.index[(kind, key)]

    def string(self, s):
        def make():
            self.d.string_table.append(s)
            return len(self.d.string_table) - 1
        return self._intern("s", s, make)

    def function(self, name, filename=""):
        def make():
            self.d.function_table.add(name_strindex=self.string(name),
                                          filename_strindex=self.string(filename))
            return len(self.d.function_table) - 1
        return self._intern("f", (name, filename), make)

    def mapping(self, filename):
        def make():
            self.d.mapping_table.add(filename_strindex=self.string(filename))
            return len(self.d.mapping_table) - 1
        return self._intern("m", filename, make)

    def location(self, address=0, mapping=0, function=None, line=0):
        def make():
            loc = self.d.location_table.add(mapping_index=mapping, address=address)
            if function is not None:
                loc.lines.add(function_index=function, line=line)
            return len(self.d.location_table) - 1
        return self._intern("l", (address, mapping, function, line), make)

    def stack(self, leaf_first):
        def make():
            self.d.stack_table.add(location_indices=leaf_first)
            return len(self.d.stack_table) - 1
        return self._intern("st", tuple(leaf_first), make)

    def attribute(self, key, value):
        def make():
            self.d.attribute_table.add(key_strindex=self.string(key),
                                       value=common_pb2.AnyValue(string_value=value))
            return len(self.d.attribute_table) - 1
        return self._intern("a", (key, value), make)

    def link(self, trace_id, span_id):
        def make():
            self.d.link_table.add(trace_id=trace_id, span_id=span_id)
            return len(self.d.link_table) - 1
        return self._intern("k", (trace_id, span_id), make)

    def value_type(self, kind, unit):
        return profiles_pb2.ValueType(type_strindex=self.string(kind),
                                      unit_strindex=self.string(unit))


PY_SPY_FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")


def pyspy_profile(out, dictionary):
    """py-spy's folded counts as a cpu/nanoseconds profile: each sample
    one period of 1/rate seconds."""
    period = 1_000_000_000 // PY_SPY_RATE
    started, ended = map(int, open(os.path.join(out, "pyspy.times")).read().split())
    counts = {}
    functions = set()
    total = 0
    for line in open(os.path.join(out, "pyspy.txt")):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, count = line.rsplit(" ", 1)
        leaf_first = []
        for frame in reversed(stack.split(";")):
            m = PY_SPY_FRAME.match(frame)
            name, filename, lineno = (m.group(1), m.group(2), int(m.group(3) or 0)) if m else (frame, "", 0)
            functions.add(name)
            leaf_first.append(dictionary.location(function=dictionary.function(name, filename), line=lineno))
        s = dictionary.stack(leaf_first)
        counts[s] = counts.get(s, 0) + int(count)
        total += int(count)
    profile = profiles_pb2.Profile(
        sample_type=dictionary.value_type("cpu", "nanoseconds"),
        period_type=dictionary.value_type("cpu", "nanoseconds"),
        period=period,
        time_unix_nano=started,
        duration_nano=ended - started,
        profile_id=PROFILE_ID,
    )
    for s, count in counts.items():
        profile.samples.add(stack_index=s, values=[count * period])
    return profile, {"pyspy_total": total, "pyspy_functions": sorted(functions)}


PERF_HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+(\d+)\.(\d+):")
PERF_FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")


def perf_samples(out):
    samples = []
    current = None
    for line in open(os.path.join(out, "perf.txt")):
        line = line.rstrip("\n")
        header = PERF_HEADER.match(line)
        if header:
            comm, pid, tid, sec, frac = header.groups()
            ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
            current = {"comm": comm, "pid": int(pid), "tid": int(tid), "time": ns, "frames": []}
            samples.append(current)
            continue
        frame = PERF_FRAME.match(line)
        if frame and current is not None:
            current["frames"].append((int(frame.group(1), 16), frame.group(2), frame.group(3)))
    return [s for s in samples if s["frames"]]


def perf_profile(out, dictionary):
    """perf's samples as the OpenTelemetry eBPF profiler sends its own:
    samples/count, one timestamp per sample, the thread as attributes;
    samples of the capture's middle third linked to a trace."""
    samples = perf_samples(out)
    first = min(s["time"] for s in samples)
    last = max(s["time"] for s in samples)
    third = (last - first) / 3
    link = dictionary.link(TRACE_ID, SPAN_ID)
    grouped = {}
    functions = set()
    linked = 0
    for sample in samples:
        leaf_first = []
        for address, symbol, dso in sample["frames"]:
            mapping = dictionary.mapping(dso) if dso != "[unknown]" else 0
            if symbol == "[unknown]":
                leaf_first.append(dictionary.location(address=address, mapping=mapping))
            else:
                functions.add(symbol)
                leaf_first.append(dictionary.location(address=address, mapping=mapping,
                                                      function=dictionary.function(symbol)))
        attributes = (dictionary.attribute("thread.name", sample["comm"]),
                      dictionary.attribute("thread.id", str(sample["tid"])))
        in_trace = first + third <= sample["time"] < first + 2 * third
        linked += in_trace
        key = (dictionary.stack(leaf_first), attributes, link if in_trace else 0)
        grouped.setdefault(key, []).append(sample["time"])
    profile = profiles_pb2.Profile(
        sample_type=dictionary.value_type("samples", "count"),
        period_type=dictionary.value_type("cpu", "nanoseconds"),
        period=1_000_000_000 // PERF_HZ,
        time_unix_nano=first,
        duration_nano=last - first + 1,
    )
    for (stack, attributes, link_index), times in grouped.items():
        profile.samples.add(stack_index=stack, attribute_indices=attributes,
                            link_index=link_index, timestamps_unix_nano=sorted(times))
    return profile, {
        "perf_total": len(samples),
        "perf_linked": linked,
        "perf_functions": sorted(functions),
        "perf_threads": len({s["tid"] for s in samples}),
        "perf_by_thread_name": {comm: sum(s["comm"] == comm for s in samples)
                                for comm in {s["comm"] for s in samples}},
        "pid": samples[0]["pid"],
    }


def key_value(key, value):
    if isinstance(value, int):
        return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(int_value=value))
    return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value))


def request_of(service, dictionary, profiles, pid):
    request = service_pb2.ExportProfilesServiceRequest()
    request.dictionary.CopyFrom(dictionary.d)
    resource = request.resource_profiles.add()
    for key, value in [("service.name", service), ("host.name", "otlp-host"),
                       ("process.pid", pid), ("k8s.namespace.name", "shop"),
                       ("k8s.pod.name", f"{service}-pod-1"), ("k8s.container.name", "app"),
                       ("bad key/x", "dropped")]:
        resource.resource.attributes.append(key_value(key, value))
    scope = resource.scope_profiles.add()
    scope.scope.name = "odp-e2e"
    scope.profiles.extend(profiles)
    return request


def otlp_json(request):
    """Protobuf's JSON mapping, with ids in hex as OTLP/JSON has them."""
    document = json_format.MessageToDict(request)
    to_hex = lambda b64: base64.b64decode(b64).hex()
    for link in document.get("dictionary", {}).get("linkTable", []):
        for key in ("traceId", "spanId"):
            if key in link:
                link[key] = to_hex(link[key])
    for resource in document.get("resourceProfiles", []):
        for scope in resource.get("scopeProfiles", []):
            for profile in scope.get("profiles", []):
                if "profileId" in profile:
                    profile["profileId"] = to_hex(profile["profileId"])
    return json.dumps(document)


def spoiled(good, bad_profile, spoil):
    """A request of the good py-spy profile and a spoiled copy of the perf
    one, each on a dictionary of its own."""
    request = service_pb2.ExportProfilesServiceRequest()
    request.CopyFrom(good)
    profiles = request.resource_profiles[0].scope_profiles[0].profiles
    del profiles[1:]
    profiles.add().CopyFrom(bad_profile)
    spoil(request, profiles[1])
    return request


def build(out, service):
    dictionary = Dictionary()
    pyspy, expect_pyspy = pyspy_profile(out, dictionary)
    perf, expect_perf = perf_profile(out, dictionary)
    request = request_of(service, dictionary, [pyspy, perf], expect_perf["pid"])
    with open(os.path.join(out, f"{service}.pb"), "wb") as f:
        f.write(request.SerializeToString())
    with open(os.path.join(out, f"{service}.json"), "w") as f:
        f.write(otlp_json(request))
    expect = {**expect_pyspy, **expect_perf,
              "trace_id": TRACE_ID.hex(), "span_id": SPAN_ID.hex(), "profile_id": PROFILE_ID.hex()}
    with open(os.path.join(out, f"{service}.expect.json"), "w") as f:
        json.dump(expect, f)

    def out_of_range(request, profile):
        profile.samples[0].stack_index = len(request.dictionary.stack_table) + 5

    def nonzero_entry0(request, profile):
        request.dictionary.function_table[0].name_strindex = 1

    def deep(request, profile):
        table = request.dictionary.stack_table
        table.add(location_indices=list(table[profile.samples[0].stack_index].location_indices) * 5000)
        profile.samples[0].stack_index = len(table) - 1

    def mixed(request, profile):
        del profile.samples[0].timestamps_unix_nano[:]
        profile.samples[0].values.extend([1, 2])

    def outside(request, profile):
        profile.samples[0].timestamps_unix_nano[0] = profile.time_unix_nano + profile.duration_nano + 10**9

    for case, spoil in [("out-of-range", out_of_range), ("nonzero-entry0", nonzero_entry0),
                        ("deep", deep), ("mixed", mixed), ("outside", outside)]:
        bad = spoiled(request, perf, spoil)
        with open(os.path.join(out, f"{service}.bad-{case}.pb"), "wb") as f:
            f.write(bad.SerializeToString())


def send_grpc(path, target, ca, token, gzip=False):
    import grpc
    from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2_grpc
    request = service_pb2.ExportProfilesServiceRequest()
    request.ParseFromString(open(path, "rb").read())
    credentials = grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
    with grpc.secure_channel(target, credentials) as channel:
        stub = profiles_service_pb2_grpc.ProfilesServiceStub(channel)
        try:
            response = stub.Export(
                request, metadata=[("authorization", f"Bearer {token}")], timeout=60,
                compression=grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression)
        except grpc.RpcError as e:
            print(json.dumps({"code": e.code().name, "details": e.details()}))
            return
    print(json.dumps({"code": "OK", "response": json_format.MessageToDict(response)}))


def main():
    command = sys.argv[1]
    if command == "capture":
        capture(sys.argv[2])
    elif command == "build":
        build(sys.argv[2], sys.argv[3])
    elif command == "grpc":
        send_grpc(*sys.argv[2:6], gzip=len(sys.argv) > 6 and sys.argv[6] == "gzip")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
