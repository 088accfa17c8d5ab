#!/usr/bin/python3
"""A WHEP subscriber on aiortc (Debian python3-aiortc 1.4 + python3-aiohttp), Playout's independent
test client for the built-in publisher's WHEP endpoint.

POSTs an aiortc offer (recvonly video and audio, BUNDLE, vanilla ICE) to URL, expects 201 Created
with an answer and a Location, receives and decodes for --duration seconds, sends DELETE to the
session URL, and reports what it decoded.

stdout carries one JSON object per line:
  {"event": "answered", "status": 201, "location": "/whep/session/…", "codecs": {...}}
  {"event": "connected", "after": 0.31}                     ICE and DTLS up (seconds after the POST)
  {"event": "result", "frames": {"video": N, "audio": M}, "span": {"video": s, "audio": s},
   "firstFrame": {"video": s, "audio": s}, "rtp": {"video": {"packetsReceived": P, "packetsLost": L}, ...},
   "packetsAfterDelete": K, "width": W, "height": H, "deleteStatus": 200, "state": "closed"}
"frames" counts every frame decoded (a loaded machine decodes some after the DELETE: they were
received before it); "span" is the media time from the first to the last decoded frame, so
frames / (span x rate) tells whether any are missing; "rtp" is aiortc's inbound-rtp at the
DELETE, and "packetsAfterDelete" what arrived in the --after-delete seconds after it.
  {"event": "error", "reason": "..."}                       and exit status 1

Run with Debian's interpreter: /usr/bin/python3 aiortc_whep_client.py http://127.0.0.1:8889/whep --duration 5
"""
import argparse
import asyncio
import json
import sys
import time
import urllib.parse

import aioice.ice
from aiohttp import ClientSession, ClientTimeout
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError


def emit(**fields):
    print(json.dumps(fields), flush=True)


async def consume(track, counts, first, sizes, started, times):
    """Counts the decoded frames of one track until it ends, and their media time span."""
    kind = track.kind
    while True:
        try:
            frame = await track.recv()
        except MediaStreamError:
            return
        counts[kind] += 1
        if kind not in first:
            first[kind] = round(time.monotonic() - started, 3)
        if frame.pts is not None and frame.time_base is not None:
            seconds = float(frame.pts * frame.time_base)
            low, high = times.get(kind, (seconds, seconds))
            times[kind] = (min(low, seconds), max(high, seconds))
        if kind == "video":
            sizes["width"], sizes["height"] = frame.width, frame.height


async def run(arguments):
    started = time.monotonic()
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    if not arguments.no_audio:
        pc.addTransceiver("audio", direction="recvonly")
    counts = {"video": 0, "audio": 0}
    first = {}
    sizes = {}
    times = {}
    consumers = []
    connected = asyncio.Event()

    @pc.on("track")
    def on_track(track):
        consumers.append(asyncio.ensure_future(consume(track, counts, first, sizes, started, times)))

    @pc.on("connectionstatechange")
    async def on_state():
        if pc.connectionState == "connected":
            emit(event="connected", after=round(time.monotonic() - started, 3))
            connected.set()

    await pc.setLocalDescription(await pc.createOffer())  # gathers every candidate: vanilla ICE
    timeout = ClientTimeout(total=10)
    async with ClientSession(timeout=timeout) as http:
        async with http.post(arguments.url, data=pc.localDescription.sdp, headers={"Content-Type": "application/sdp"}) as response:
            body = await response.text()
            if response.status != 201:
                emit(event="error", reason=f"POST answered {response.status}: {body.strip()[:200]}", status=response.status)
                await pc.close()
                return 1
            location = response.headers.get("Location")
            if not location:
                emit(event="error", reason="201 without Location")
                await pc.close()
                return 1
        session_url = urllib.parse.urljoin(arguments.url, location)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
        codecs = {}
        for transceiver in pc.getTransceivers():
            chosen = transceiver._codecs[0].mimeType if getattr(transceiver, "_codecs", None) else None
            codecs[transceiver.kind] = chosen
        emit(event="answered", status=201, location=location, codecs=codecs)
        try:
            await asyncio.wait_for(connected.wait(), timeout=10)
        except asyncio.TimeoutError:
            emit(event="error", reason=f"not connected within 10 s (state {pc.connectionState})")
        await asyncio.sleep(max(0.0, arguments.duration - (time.monotonic() - started)))
        async with http.delete(session_url) as response:
            delete_status = response.status
        rtp = await inbound(pc)
        # After DELETE the endpoint stops the session's media: count what still arrives.
        await asyncio.sleep(arguments.after_delete)
        later = await inbound(pc)
        after = sum(later[kind]["packetsReceived"] - rtp[kind]["packetsReceived"] for kind in rtp if kind in later)
    await pc.close()
    for consumer in consumers:
        consumer.cancel()
    span = {kind: round(high - low, 3) for kind, (low, high) in times.items()}
    emit(
        event="result", frames=counts, span=span, firstFrame=first, rtp=rtp, packetsAfterDelete=after,
        width=sizes.get("width"), height=sizes.get("height"), deleteStatus=delete_status, state=pc.connectionState,
    )
    return 0


async def inbound(pc):
    """aiortc's inbound-rtp counters per kind."""
    counters = {}
    for transceiver in pc.getTransceivers():
        report = await transceiver.receiver.getStats()
        for stats in report.values():
            if stats.type == "inbound-rtp":
                counters[transceiver.kind] = {"packetsReceived": stats.packetsReceived, "packetsLost": stats.packetsLost}
    return counters


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the WHEP endpoint, e.g. http://127.0.0.1:8889/whep")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds from the POST to the DELETE")
    parser.add_argument("--after-delete", type=float, default=1.0, help="seconds to keep counting after the DELETE")
    parser.add_argument("--no-audio", action="store_true", help="ask for video only")
    parser.add_argument("--loopback", action="store_true", help="offer 127.0.0.1 host candidates (aioice skips loopback)")
    arguments = parser.parse_args()
    if arguments.loopback:
        original = aioice.ice.get_host_addresses
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: (["127.0.0.1"] if use_ipv4 else []) + original(use_ipv4, use_ipv6)
    try:
        return asyncio.run(run(arguments))
    except Exception as error:  # report, never a traceback on stdout
        emit(event="error", reason=f"{type(error).__name__}: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
