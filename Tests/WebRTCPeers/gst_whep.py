#!/usr/bin/python3
"""A WHEP server on GStreamer webrtcbin (python3-gi, gstreamer1.0-nice), Playout's test peer.

The same HTTP surface as aiortc_whep.py (aiohttp): POST /whep (application/sdp offer) ->
201 Created, the SDP answer, Location: /whep/<id>; DELETE /whep/<id> -> 200. One pipeline per
session: videotestsrc (30 fps) -> VP8 (vp8enc) or H.264 (x264enc, constrained baseline) and
audiotestsrc -> Opus, into webrtcbin with bundle-policy max-bundle. Vanilla ICE: the answer is
sent once gathering is complete (libnice gathers on every interface but loopback, so the
candidates are the host's other addresses). The payload types are the ones Playout's offer uses (VP8 96,
H.264 42e01f 100, Opus 111).

stdout carries one JSON object per line, as aiortc_whep.py:
  {"event": "ready", "port": P}, {"event": "created", "id": ID},
  {"event": "deleted", "id": ID, "frames": {"video": N, "audio": M}}, {"event": "error", ...}

Run with Debian's interpreter: /usr/bin/python3 gst_whep.py --port 0 --video h264
"""
import argparse
import asyncio
import json
import sys
import threading
import time
import uuid

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
from gi.repository import Gst, GstSdp, GstWebRTC  # noqa: E402
from aiohttp import web  # noqa: E402


def emit(**fields):
    print(json.dumps(fields), flush=True)


VIDEO = {
    "vp8": "vp8enc deadline=1 keyframe-max-dist=60 name=venc ! rtpvp8pay pt=96 picture-id-mode=15-bit ! "
    "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000",
    "h264": "video/x-raw,format=I420 ! queue ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=60 name=venc ! "
    "video/x-h264,profile=constrained-baseline ! rtph264pay pt=100 config-interval=-1 aggregate-mode=zero-latency ! "
    "application/x-rtp,media=video,encoding-name=H264,payload=100,clock-rate=90000,packetization-mode=(string)1",
}


class Session:
    """One webrtcbin pipeline: counts the encoded video and audio frames it sends once connected
    (the frames encoded before DTLS connected never leave)."""

    def __init__(self, video):
        self.frames = {"video": 0, "audio": 0}
        self.connected = False
        self.lock = threading.Lock()
        description = (
            "webrtcbin name=w bundle-policy=max-bundle "
            f"videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert ! "
            "valve name=vvalve drop=true ! "
            f"{VIDEO[video]} ! w. "
            "audiotestsrc is-live=true wave=sine freq=440 ! audioconvert ! audioresample ! "
            "audio/x-raw,rate=48000,channels=2 ! valve name=avalve drop=true ! opusenc name=aenc ! rtpopuspay pt=111 ! "
            "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! w. "
        )
        self.pipeline = Gst.parse_launch(description)
        self.webrtc = self.pipeline.get_by_name("w")
        self.webrtc.connect("notify::connection-state", self.connection_changed)
        for name, kind in (("venc", "video"), ("aenc", "audio")):
            pad = self.pipeline.get_by_name(name).get_static_pad("src")
            pad.add_probe(Gst.PadProbeType.BUFFER, self.count, kind)
        self.pipeline.set_state(Gst.State.PLAYING)

    def connection_changed(self, webrtc, _):
        # Nothing is encoded before the connection (the valves drop the raw frames), so no
        # backlog leaves in a burst when it comes: frames leave as they are captured.
        if webrtc.get_property("connection-state") == GstWebRTC.WebRTCPeerConnectionState.CONNECTED:
            with self.lock:
                self.connected = True
            for name in ("vvalve", "avalve"):
                self.pipeline.get_by_name(name).set_property("drop", False)

    def count(self, pad, info, kind):
        with self.lock:
            if self.connected:
                self.frames[kind] += 1
        return Gst.PadProbeReturn.OK

    def negotiate(self, text):
        """set-remote-description, create-answer, set-local-description, wait for gathering."""
        result, message = GstSdp.SDPMessage.new_from_text(text)
        if result != GstSdp.SDPResult.OK:
            raise ValueError("the offer is not SDP")
        offer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.OFFER, message)
        promise = Gst.Promise.new()
        self.webrtc.emit("set-remote-description", offer, promise)
        promise.wait()
        promise = Gst.Promise.new()
        self.webrtc.emit("create-answer", None, promise)
        promise.wait()
        reply = promise.get_reply()
        answer = reply.get_value("answer") if reply is not None and reply.has_field("answer") else None
        if answer is None:
            error = reply.get_value("error") if reply is not None and reply.has_field("error") else "no answer"
            raise ValueError(f"webrtcbin made no answer: {error}")
        promise = Gst.Promise.new()
        self.webrtc.emit("set-local-description", answer, promise)
        promise.wait()
        deadline = time.monotonic() + 10
        while self.webrtc.get_property("ice-gathering-state") != GstWebRTC.WebRTCICEGatheringState.COMPLETE:
            if time.monotonic() > deadline:
                raise TimeoutError("ICE gathering did not complete within 10 s")
            time.sleep(0.02)
        return self.webrtc.get_property("local-description").sdp.as_text()

    def close(self):
        self.pipeline.set_state(Gst.State.NULL)
        with self.lock:
            return dict(self.frames)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port, reported in the ready line")
    parser.add_argument("--video", choices=["vp8", "h264"], default="vp8")
    parser.add_argument("--token", default=None, help="require Authorization: Bearer TOKEN")
    arguments = parser.parse_args()
    Gst.init(None)
    sessions = {}

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
        loop = asyncio.get_running_loop()
        session = await loop.run_in_executor(None, Session, arguments.video)
        try:
            answer = await loop.run_in_executor(None, session.negotiate, text)
        except Exception as error:
            await loop.run_in_executor(None, session.close)
            return refuse(400, f"bad offer: {error}")
        identifier = uuid.uuid4().hex[:12]
        sessions[identifier] = session
        emit(event="created", id=identifier, video=arguments.video)
        return web.Response(status=201, text=answer, content_type="application/sdp", headers={"Location": f"/whep/{identifier}"})

    async def delete(request):
        if not authorized(request):
            return refuse(401, "missing or wrong bearer token")
        identifier = request.match_info["id"]
        session = sessions.pop(identifier, None)
        if session is None:
            return refuse(404, f"no session {identifier}")
        frames = await asyncio.get_running_loop().run_in_executor(None, session.close)
        emit(event="deleted", id=identifier, frames=frames)
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
        emit(event="ready", port=port, stack="gstreamer", video=arguments.video)
        try:
            await asyncio.Event().wait()
        finally:
            for session in sessions.values():
                session.close()
            await runner.cleanup()

    try:
        asyncio.run(start())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
