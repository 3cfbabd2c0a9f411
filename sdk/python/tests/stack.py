"""The stack the Python SDK tests run against, as e2e/harness.mjs starts it for
the npm SDK's: the simulator (cmd/aoaisim, also the local Entra ID issuer) and
the handler (cmd/handler, AUTH_MODE=entra against that issuer), built from
this checkout, on free ports of 127.0.0.1, with the same scaled-down clock.
Their JSON log lines are kept: the simulator writes one per upstream call
("aoai request"), the handler one per request ("request"). Every process is
ours and is stopped by its pid."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "sdk" / "python" / "artifacts"

# The handler's clock and the simulator's latency model, as e2e/harness.mjs has them.
BUDGET = "6s"
THRESHOLD = "3s"
SIM_TTFT = "500ms"
SIM_PER_TOKEN = "10ms"

DEPLOYMENT = "gpt-4o-mini"
TENANT = "11111111-2222-4333-8444-555555555555"
AUDIENCE = "api://timebox-sdk-python"
SCOPE = "user_impersonation"
OID = "00000000-0000-4000-8000-00000000ad01"  # the local issuer's test user

# A bound on a broken test, not a measurement: every wait ends on the line it waits for.
WAIT_S = 20.0


class Proc:
    """A child process whose output lines are kept, and can be waited on."""

    def __init__(self, name: str, args: list[str], env: dict[str, str]):
        self.name = name
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.child = subprocess.Popen(
            args, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self.lines.append(f"[sdk] {self.name} exited: code {self.child.wait()}")
            self._cond.notify_all()

    def records(self, msg: str, start: int = 0) -> list[dict]:
        """The JSON lines from index start on whose msg is msg, parsed."""
        with self._cond:
            lines = self.lines[start:]
        out = []
        for line in lines:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if isinstance(j, dict) and j.get("msg") == msg:
                out.append(j)
        return out

    def wait_records(self, msg: str, count: int, start: int = 0) -> list[dict]:
        """Returns the records of msg from index start on once there are count of them."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.records(msg, start)) >= count or self.child.poll() is not None, WAIT_S):
                raise AssertionError(f"{self.name}: {count} {msg!r} lines not written within {WAIT_S} s")
        got = self.records(msg, start)
        if len(got) < count:
            raise AssertionError(f"{self.name} exited with {len(got)} of {count} {msg!r} lines")
        return got

    def stop(self) -> None:
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(5)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        self._reader.join(5)


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Stack:
    """The simulator and the handler; api is the handler's URL."""

    def __init__(self) -> None:
        self._bin = tempfile.TemporaryDirectory(prefix="timebox-sdk-python-")
        bin_dir = Path(self._bin.name)
        builds = [
            subprocess.Popen(["go", "build", "-o", str(bin_dir / name), f"./cmd/{name}"], cwd=REPO)
            for name in ("handler", "aoaisim")
        ]
        if any(b.wait() != 0 for b in builds):
            raise RuntimeError("go build failed")
        sim_port, api_port = free_ports(2)
        key = "sdk-python-key"
        base_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
        self.sim = f"http://127.0.0.1:{sim_port}"
        self.api = f"http://127.0.0.1:{api_port}"
        self.procs: list[Proc] = []
        try:
            self.simulator = self._start(
                "aoaisim",
                [str(bin_dir / "aoaisim"), "-addr", f"127.0.0.1:{sim_port}", "-api-key", key, "-deployments", DEPLOYMENT,
                 "-ttft", SIM_TTFT, "-per-token", SIM_PER_TOKEN, "-issuer"],
                base_env,
                "aoaisim listening",
            )
            self.handler = self._start(
                "handler",
                [str(bin_dir / "handler")],
                {
                    **base_env,
                    "FUNCTIONS_CUSTOMHANDLER_PORT": str(api_port),
                    "AZURE_OPENAI_ENDPOINT": self.sim,
                    "AZURE_OPENAI_DEPLOYMENT": DEPLOYMENT,
                    "AZURE_OPENAI_API_KEY": key,
                    "REQUEST_BUDGET": BUDGET,
                    "FAST_FAILURE_THRESHOLD": THRESHOLD,
                    "AUTH_MODE": "entra",
                    "AUTH_AUDIENCE": AUDIENCE,
                    "AUTH_TENANTS": TENANT,
                    "AUTH_REQUIRED_SCOPE": SCOPE,
                    "AZURE_AUTHORITY_HOST": self.sim,
                },
                "listening",
            )
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, args: list[str], env: dict[str, str], ready: str) -> Proc:
        p = Proc(name, args, env)
        self.procs.append(p)
        p.wait_records(ready, 1)
        return p

    def token(self) -> str:
        """An access token for this app from the local issuer, as Entra ID would mint it for the signed-in user."""
        body = urllib.parse.urlencode({"scope": f"{AUDIENCE}/{SCOPE}"}).encode()
        with urllib.request.urlopen(f"{self.sim}/{TENANT}/oauth2/v2.0/token", data=body, timeout=WAIT_S) as r:
            return json.load(r)["access_token"]

    def mark(self) -> tuple[int, int]:
        """Where the handler's and the simulator's logs are now, for counted()."""
        return len(self.handler.lines), len(self.simulator.lines)

    def counted(self, mark: tuple[int, int], requests: int = 1, upstream: int = 1) -> tuple[list[dict], list[dict]]:
        """The handler's request lines and the simulator's upstream lines since mark, once there are at least
        requests and upstream of them (a cancelled upstream call is logged when the simulator sees the
        cancellation, after the answer), and all that were written by the last request line."""
        self.handler.wait_records("request", requests, mark[0])
        up = self.simulator.wait_records("aoai request", upstream, mark[1])
        return self.handler.records("request", mark[0]), up

    def stop(self) -> None:
        for p in self.procs:
            p.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for p in self.procs:
            (ARTIFACTS / f"{p.name}.log").write_text("\n".join(p.lines) + "\n")
        self._bin.cleanup()
