#!/usr/bin/python3
"""A WHEP server on aiortc (Debian python3-aiortc 1.4 + python3-aiohttp), Playout's test peer.

POST /whep (application/sdp offer) -> 201 Created, the SDP answer, Location: /whep/<id>;
DELETE /whep/<id> -> 200 and the session closes. The server sends a generated test video
(VP8 or H.264, 30 fps, a moving gradient) and Opus audio (a 440 Hz tone).

stdout carries one JSON object per line:
  {"event": "ready", "port": P}                        once listening
  {"event": "created", "id": ID, "codecs": {...}}      per accepted offer
  {"event": "deleted", "id": ID, "frames": {"video": N, "audio": M}, "garbage": G}   per DELETE
  {"event": "error", "status": S, "reason": "..."}     per refused request

--bad-fingerprint answers with a fingerprint that is not its certificate's (the subscriber must
refuse the session); --garbage N sprays N garbage datagrams a second at the offer's candidates
while the session lasts (the subscriber must count and drop them, playing on).

Run with Debian's interpreter: /usr/bin/python3 aiortc_whep.py --port 0 --video vp8
"""
import argparse
import asyncio
import fractions
import json
import math
import os
import random
import re
import socket
import struct
import sys
import uuid

import aioice.ice
import av
import numpy
from aiohttp import web
from aiortc import RTCPeerConnection, RTCRtpSender, RTCSessionDescription, VideoStreamTrack
from aiortc.mediastreams import AudioStreamTrack


def emit(**fields):
    print(json.dumps(fields), flush=True)


class TestVideo(VideoStreamTrack):
    """A 320x240 moving gradient at 30 fps (VideoStreamTrack paces it)."""

    def __init__(self):
        super().__init__()
        self.frames = 0

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        shade = (self.frames * 4) % 256
        image = numpy.full((240, 320, 3), shade, dtype=numpy.uint8)
        image[:, (self.frames * 3) % 320, :] = 255
        frame = av.VideoFrame.from_ndarray(image, format="bgr24")
        frame.pts = pts
        frame.time_base = time_base
        self.frames += 1
        return frame


class TestAudio(AudioStreamTrack):
    """A 440 Hz tone, 20 ms frames at 48 kHz (AudioStreamTrack's pacing)."""

    def __init__(self):
        super().__init__()
        self.frames = 0
        self.sample = 0

    async def recv(self):
        frame = await super().recv()  # paces, sets pts/time_base/sample_rate
        count = frame.samples
        rate = frame.sample_rate
        tone = (numpy.sin(2 * math.pi * 440 * (numpy.arange(count) + self.sample) / rate) * 3000).astype(numpy.int16)
        self.sample += count
        out = av.AudioFrame.from_ndarray(tone.reshape(1, -1), format="s16", layout="mono")
        out.sample_rate = rate
        out.pts = frame.pts
        out.time_base = fractions.Fraction(1, rate)
        self.frames += 1
        return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port, reported in the ready line")
    parser.add_argument("--video", choices=["vp8", "h264"], default="vp8")
    parser.add_argument("--loopback", action="store_true", help="offer 127.0.0.1 host candidates (aioice skips loopback)")
    parser.add_argument("--token", default=None, help="require Authorization: Bearer TOKEN")
    parser.add_argument("--bad-fingerprint", action="store_true", help="answer with a fingerprint that is not our certificate's")
    parser.add_argument("--garbage", type=int, default=0, metavar="N",
                        help="also send N garbage datagrams a second (random, STUN-, DTLS- and RTP-looking) to the offer's candidates")
    arguments = parser.parse_args()

    if arguments.loopback:
        original = aioice.ice.get_host_addresses
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: (["127.0.0.1"] if use_ipv4 else []) + original(use_ipv4, use_ipv6)

    sessions = {}
    garbage_tasks = {}
    garbage_sent = {}

    async def spray(offer_text, per_second, session):
        """Garbage to every host candidate of the offer, from a socket of its own."""
        targets = []
        for line in offer_text.splitlines():
            words = line.split()
            if line.startswith("a=candidate:") and len(words) >= 6 and ":" not in words[4]:
                targets.append((words[4], int(words[5])))
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        kinds = [
            lambda: os.urandom(random.randint(1, 1400)),
            # STUN-looking: a Binding request with the magic cookie, a made-up USERNAME, no valid integrity.
            lambda: struct.pack("!HHI", 0x0001, 24, 0x2112A442) + os.urandom(12) + struct.pack("!HH", 0x0006, 20) + os.urandom(20),
            # DTLS-looking: a handshake record header and noise.
            lambda: bytes([22, 0xFE, 0xFD]) + os.urandom(random.randint(10, 300)),
            # RTP-looking: version 2, a payload type of ours, a stranger's SSRC.
            lambda: bytes([0x80, random.choice([96, 100, 111])]) + os.urandom(random.randint(10, 1200)),
        ]
        sent = 0
        try:
            while True:
                for target in targets:
                    try:
                        sock.sendto(random.choice(kinds)(), target)
                        sent += 1
                        garbage_sent[session] = sent
                    except OSError:
                        pass
                await asyncio.sleep(1 / per_second)
        finally:
            sock.close()

    mime = "video/VP8" if arguments.video == "vp8" else "video/H264"

    def refuse(status, reason):
        emit(event="error", status=status, reason=reason)
        return web.json_response({"title": reason}, status=status, content_type="application/problem+json")

    def authorized(request):
        return arguments.token is None or request.headers.get("Authorization") == f"Bearer {arguments.token}"

    async def offer(request):
        if not authorized(request):
            return refuse(401, "missing or wrong bearer token")
        if not request.content_type.startswith("application/sdp"):
            return refuse(415, "the offer must be application/sdp")
        text = await request.text()
        pc = RTCPeerConnection()
        # Transceivers first, with the codec preference: aiortc applies it while reading the offer.
        video, audio = TestVideo(), TestAudio()
        video_transceiver = pc.addTransceiver(video, direction="sendonly")
        video_transceiver.setCodecPreferences(
            [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType in (mime, "video/rtx")]
        )
        pc.addTransceiver(audio, direction="sendonly")
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=text, type="offer"))
        except Exception as error:  # a malformed offer, or no common codec
            await pc.close()
            return refuse(400, f"bad offer: {error}")
        answer = await pc.createAnswer()
        await pc.setLocalDescription(answer)
        session = uuid.uuid4().hex[:12]
        sessions[session] = (pc, video, audio)
        if arguments.garbage:
            garbage_tasks[session] = asyncio.ensure_future(spray(text, arguments.garbage, session))
        emit(event="created", id=session, video=arguments.video, kinds=sorted(t.kind for t in pc.getTransceivers()))
        answer_text = pc.localDescription.sdp
        if arguments.bad_fingerprint:
            answer_text = re.sub(r"(a=fingerprint:\S+ )([0-9A-Fa-f]{2})", lambda m: m.group(1) + ("00" if m.group(2) != "00" else "11"), answer_text)
        return web.Response(
            status=201,
            text=answer_text,
            content_type="application/sdp",
            headers={"Location": f"/whep/{session}", "Link": '<stun:stun.l.google.com:19302>; rel="ice-server"'},
        )

    async def delete(request):
        if not authorized(request):
            return refuse(401, "missing or wrong bearer token")
        session = request.match_info["id"]
        entry = sessions.pop(session, None)
        if entry is None:
            return refuse(404, f"no session {session}")
        pc, video, audio = entry
        task = garbage_tasks.pop(session, None)
        if task is not None:
            task.cancel()
        await pc.close()
        emit(event="deleted", id=session, frames={"video": video.frames, "audio": audio.frames}, garbage=garbage_sent.get(session, 0))
        return web.Response(status=200)

    async def start():
        app = web.Application()
        app.router.add_post("/whep", offer)
        app.router.add_delete("/whep/{id}", delete)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, arguments.host, arguments.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        emit(event="ready", port=port, stack="aiortc", video=arguments.video)
        try:
            await asyncio.Event().wait()
        finally:
            for pc, _, _ in sessions.values():
                await pc.close()
            await runner.cleanup()

    try:
        asyncio.run(start())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
