"""An HTTP server that answers 200 to every POST and keeps each request
(path, headers, body) as a JSON file in DIR, numbered in arrival order: a
real client's requests, captured to replay them. Writes its port to
DIR/port once it listens.

usage: capture_sink.py DIR
"""
import base64
import http.server
import json
import os
import sys

out = sys.argv[1]
count = 0


class Capture(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        count += 1
        record = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": base64.b64encode(body).decode(),
        }
        tmp = os.path.join(out, f".{count:04}.json")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(out, f"{count:04}.json"))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Capture)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
server.serve_forever()
