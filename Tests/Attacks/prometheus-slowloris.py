#!/usr/bin/env python3
"""Scrape latency of `playout demo --telemetry prometheus:PORT` behind slow clients (issue 26, item 7).

Opens N connections that send half a request head and then nothing (slowloris), then times one
`GET /metrics`. Before the fix the endpoint served one connection at a time, so the scrape waited
out every slow client's 2 s request timeout (or timed out itself at 10 s).

    Tests/Attacks/prometheus-slowloris.py .build/debug/playout --slow 10
"""
import argparse
import socket
import subprocess
import sys
import time


def free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("playout")
    parser.add_argument("--slow", type=int, default=10)
    arguments = parser.parse_args()
    port = free_port()
    demo = subprocess.Popen([arguments.playout, "demo", "--duration", "30s", "--size", "320x240", "--json", "--port", str(free_port() // 4 * 4 % 60000 + 1024),
                             "--telemetry", f"prometheus:127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        slow = []
        for _ in range(arguments.slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(s)
        start = time.monotonic()
        scrape = socket.create_connection(("127.0.0.1", port), timeout=15)
        scrape.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        response = b""
        try:
            while True:
                chunk = scrape.recv(65536)
                if not chunk:
                    break
                response += chunk
        except socket.timeout:
            pass
        latency = time.monotonic() - start
        status = response.split(b"\r\n", 1)[0].decode(errors="replace") or "(no answer)"
        print(f"binary: {arguments.playout}\nslow clients: {arguments.slow}\nscrape: {status}, {latency * 1000:.1f} ms")
    finally:
        demo.terminate()
        demo.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
