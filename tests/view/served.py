# SPDX-License-Identifier: MIT
"""`strata view` served on a trace for a test: its URL, its answers, and its end."""
import json
import subprocess
import urllib.error
import urllib.request


class View:
    """strata view TRACE ARGS..., from its first line of stdout (the URL)
    to close() (or the end of a `with`)."""

    def __init__(self, strata, trace, *args):
        # --wait: the URL once the model is ready, as the tests ask at once
        self.proc = subprocess.Popen([strata, "view", trace, "--wait", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def raw(self, path):
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return r.read()

    def get(self, path):
        return json.loads(self.raw(path))

    def status(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=60) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
