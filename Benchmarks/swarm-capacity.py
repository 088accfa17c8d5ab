#!/usr/bin/python3
"""swarm-capacity.py — how many viewers one machine holds: playout swarm against N playout subscribe
processes and N ffmpeg processes, on one stream fanned out by the built-in publisher.

The stream: `playout publish CLIP --fanout N --srtp` (720p30 H.264, 2.5 Mbit/s by default, no audio)
on 127.0.0.1, one stream sent as N SRTP streams, viewer i at the SDP's ports + i × stride
(Docs/Fanout.md). The publisher stands for a server that, in real use, runs on another machine; here it
shares the receivers' cores, so two things keep it from deciding what is measured:
  - CLIP is encoded once before the runs (ffmpeg's libx264 at the publisher's own settings: veryfast,
    zerolatency, a key frame every 60 frames), and the publisher only packetizes, protects and sends it,
    as an SFU forwards. `--source testsrc` encodes live instead (x264 takes ≈ 0.4 of a core).
  - It runs at a lower priority (`nice`, `--publisher-nice 10`): a sender late by a few milliseconds is
    absorbed by the receivers' playout delay, a receiver late by as many is a late frame (Docs/Swarm.md).
The receivers, each run alone against a fresh publisher:
  swarm:none       playout swarm x.sdp --viewers N --decode none        (one process)
  swarm:sample:20  … --decode sample:20
  swarm:all        … --decode all
  subscribe        N processes of playout subscribe viewer_i.sdp --no-decode (the one-viewer tool, N times)
  ffmpeg           N processes of ffmpeg -i viewer_i.sdp -f null -        (decodes every frame, no clock)
A count holds when every viewer rendered >= 99 % of its frames on time (renderedRatio min >= 0.99;
ffmpeg: decoded >= 99 % of the frames sent while it ran). For each receiver the counts are tried in
increasing order (--counts) until one fails; the table gives the largest that held, with the
receivers' CPU (cores, over the run) and resident memory per viewer.

Usage: Benchmarks/swarm-capacity.py [--counts 50,100,200,300,500] [--duration 20] [--receivers swarm:none,…]
                                    [--size 1280x720] [--bitrate 2500k] [--source clip|testsrc]
                                    [--publisher-nice 10]
       Benchmarks/swarm-capacity.py --reference OTHER_PLAYOUT [--rounds 3] [--counts 250] [--receivers swarm:none]
Env: PLAYOUT (default .build/release/playout, relative to the repo root).

With --reference, each swarm receiver at each count runs with PLAYOUT and with OTHER_PLAYOUT (a build of
another commit) in alternating order, --rounds times, against the same publisher binary (PLAYOUT's): the
swarm's CPU (the process's user + system over its run) of each, and their ratio per round — a change measured
against a reference in the same run, since this VM's speed drifts by ±10 % within minutes.
"""
import argparse
import base64
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYOUT = os.path.join(ROOT, os.environ.get("PLAYOUT", ".build/release/playout"))


def fanned_out(sdp, viewer, step):
    """Viewer `viewer`'s SDP, as SessionDescription.fannedOut(viewer:) makes it (Docs/Fanout.md):
    every m= port + viewer × step, every a=ssrc + viewer, the SRTP master salt's first six bytes
    XORed with the viewer number (big-endian)."""
    sdp = re.sub(r"^m=(\w+) (\d+)", lambda m: "m=%s %d" % (m.group(1), int(m.group(2)) + viewer * step), sdp, flags=re.M)
    sdp = re.sub(r"^a=ssrc:(\d+)", lambda m: "a=ssrc:%d" % ((int(m.group(1)) + viewer) % 2**32), sdp, flags=re.M)
    sdp = re.sub(r"^a=ssrc-group:(\S+) (.*)$", lambda m: "a=ssrc-group:%s %s" % (
        m.group(1), " ".join(str((int(x) + viewer) % 2**32) for x in m.group(2).split())), sdp, flags=re.M)

    def salted(match):
        material = bytearray(base64.b64decode(match.group(2)))
        for index in range(6):
            material[16 + index] ^= (viewer >> (8 * (5 - index))) & 0xFF
        return match.group(1) + base64.b64encode(bytes(material)).decode()
    return re.sub(r"(inline:)([A-Za-z0-9+/=]{40})", salted, sdp)


def stride(sdp):
    ports = [int(p) for p in re.findall(r"^m=\w+ (\d+)", sdp, flags=re.M)]
    return max(ports) - min(ports) + 2


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def encode_clip(args, directory):
    """The stream every publisher of the run sends (--source clip): encoded once, 10 s longer than a
    run, at the publisher's own x264 settings (FFmpegEncoder: veryfast, zerolatency, 30 fps, a key
    frame every 60 frames, the bit rate as the rate control's target and ceiling, half a second of
    buffer)."""
    path = os.path.join(directory, "stream.mkv")
    number = re.fullmatch(r"([0-9.]+)([kM]?)", args.bitrate)
    bits = int(float(number.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[number.group(2)])
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
         "-i", "testsrc2=size=%s:rate=30:duration=%d" % (args.size, args.duration + 10),
         "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "60", "-pix_fmt", "yuv420p",
         "-b:v", str(bits), "-maxrate", str(bits), "-bufsize", str(bits // 2), "-y", path],
        check=True)
    return path


def publisher(count, args, directory, port):
    sdp_path = os.path.join(directory, "x.sdp")
    if os.path.exists(sdp_path):
        os.unlink(sdp_path)
    process = subprocess.Popen(
        ["nice", "-n", str(args.publisher_nice), PLAYOUT, "publish", args.clip or "testsrc", "--to", "127.0.0.1:%d" % port, "--fanout", str(count), "--srtp", "--sdp", sdp_path,
         "--no-audio", "--size", args.size, "--bitrate", args.bitrate, "--duration", "%ds" % (args.duration + 6), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 20
    while not os.path.exists(sdp_path) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    with open(sdp_path) as handle:
        return process, handle.read(), sdp_path


def run_swarm(mode, count, args, directory, port, binary=PLAYOUT):
    pub, sdp, path = publisher(count, args, directory, port)
    cpu_before = children_cpu()
    started = time.time()
    result = subprocess.run(
        ["/usr/bin/time", "-f", "%M", binary, "swarm", path, "--viewers", str(count), "--decode", mode, "--duration", "%ds" % args.duration, "--json"],
        capture_output=True, text=True)
    process_cpu = (children_cpu() - cpu_before) / (time.time() - started)
    pub.kill()
    pub.wait()
    summary = next((json.loads(line) for line in reversed(result.stdout.splitlines()) if '"summary"' in line), None)
    if summary is None:
        return None, result.stderr[-500:]
    ratio = summary.get("renderedRatio", {})
    tester = summary.get("tester", {})
    # The swarm's own CPU, averaged over its intervals once every viewer joined (the summary's is the last interval's).
    loads = [json.loads(line)["tester"]["cpu"] for line in result.stdout.splitlines() if '"type":"swarm"' in line][2:]
    peak_kib = int((result.stderr.strip().splitlines() or ["0"])[-1] or 0)
    return {
        "held": summary.get("failed") == 0 and ratio.get("count") == count and ratio.get("min", 0) >= 0.99,
        "min": ratio.get("min"), "p50": ratio.get("p50"), "rated": ratio.get("count"), "failed": summary.get("failed"),
        "cpu": sum(loads) / len(loads) if loads else tester.get("cpu"),
        "memoryPerViewer": summary.get("memoryPerViewer"), "peakMiB": peak_kib / 1024,
        "saturated": tester.get("saturated"), "processCPU": process_cpu,
    }, ""


def compare(args, counts, directory):
    """--reference: PLAYOUT's swarm against the reference binary's, alternating, in rounds."""
    for receiver in [r for r in args.receivers.split(",") if r.startswith("swarm:")]:
        for count in counts:
            ratios = []
            for round_ in range(args.rounds):
                order = [("current", PLAYOUT), ("reference", args.reference)]
                if round_ % 2:
                    order.reverse()
                measured = {}
                for name, binary in order:
                    result, error = run_swarm(receiver[len("swarm:"):], count, args, directory, args.port, binary)
                    if result is None:
                        print("%s %s %d: no summary: %s" % (name, receiver, count, error), file=sys.stderr)
                        return
                    measured[name] = result
                    print(json.dumps({"receiver": receiver, "binary": name, "round": round_ + 1, "viewers": count, **result}), flush=True)
                ratios.append(measured["current"]["processCPU"] / measured["reference"]["processCPU"])
            print("%s %d viewers: current / reference swarm CPU per round %s, median %.3f" % (
                receiver, count, ", ".join("%.3f" % r for r in ratios), sorted(ratios)[len(ratios) // 2]), flush=True)


def run_processes(kind, count, args, directory, port):
    pub, sdp, _ = publisher(count, args, directory, port)
    step = stride(sdp)
    processes = []
    start = time.time()
    cpu_before = children_cpu()
    for viewer in range(count):
        path = os.path.join(directory, "viewer_%d.sdp" % viewer)
        with open(path, "w") as handle:
            handle.write(fanned_out(sdp, viewer, step))
        if kind == "subscribe":
            command = [PLAYOUT, "subscribe", path, "--no-decode", "--duration", "%ds" % args.duration, "--json"]
        else:
            command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-stats", "-protocol_whitelist", "file,udp,rtp,srtp", "-i", path,
                       "-t", str(args.duration), "-f", "null", "-"]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [process.communicate() for process in processes]
    wall = time.time() - start
    cpu = (children_cpu() - cpu_before) / wall
    pub.kill()
    pub.wait()
    ratios = []
    for out, err in outputs:
        if kind == "subscribe":
            summary = next((json.loads(line) for line in reversed(out.splitlines()) if '"summary"' in line), {})
            video = summary.get("video", {})
            # Frames not on time: rendered late, or arrived after their render time (the frames before a
            # viewer's first key frame, which it joined after, are not in its summary apart; leave them out).
            due = video.get("framesRendered", 0) + video.get("framesLate", 0)
            ratios.append((video.get("framesRendered", 0) - video.get("framesRenderedLate", 0)) / due if due else 0)
        else:
            frames = [int(x) for x in re.findall(r"frame=\s*(\d+)", err)]
            ratios.append(min(1.0, (frames[-1] if frames else 0) / (30 * args.duration)))
    return {"held": min(ratios) >= 0.99, "min": min(ratios), "p50": sorted(ratios)[len(ratios) // 2], "cpu": cpu,
            "memoryPerViewer": None, "peakMiB": None, "saturated": None}, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="50,100,200,300,500")
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--receivers", default="swarm:none,swarm:sample:20,swarm:all,subscribe,ffmpeg")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--bitrate", default="2500k")
    parser.add_argument("--port", type=int, default=20000)
    parser.add_argument("--reference", help="another playout binary: compare its swarm CPU with PLAYOUT's, alternating")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", choices=["clip", "testsrc"], default="clip",
                        help="clip: a stream encoded once, sent as is (default); testsrc: encoded live by the publisher")
    parser.add_argument("--publisher-nice", type=int, default=10, help="the publisher's nice value (0: the receivers' priority)")
    args = parser.parse_args()
    args.clip = None
    counts = [int(c) for c in args.counts.split(",")]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    with tempfile.TemporaryDirectory(prefix="swarm-capacity-") as directory:
        if args.source == "clip":
            args.clip = encode_clip(args, directory)
        if args.reference:
            compare(args, counts, directory)
            return
        for receiver in args.receivers.split(","):
            best = None
            for count in counts:
                if receiver.startswith("swarm:"):
                    result, error = run_swarm(receiver[len("swarm:"):], count, args, directory, args.port)
                else:
                    result, error = run_processes(receiver, count, args, directory, args.port)
                if result is None:
                    print("%s %d: no summary: %s" % (receiver, count, error), file=sys.stderr)
                    break
                print(json.dumps({"receiver": receiver, "viewers": count, **result}), flush=True)
                if not result["held"]:
                    break
                best = (count, result)
            rows.append((receiver, best))
    print("\n| receiver | most viewers with every viewer >= 99 % on time | CPU (cores) | CPU per viewer (% of a core) | memory per viewer |")
    print("|---|---|---|---|---|")
    for receiver, best in rows:
        if best is None:
            print("| %s | fewer than %d | | | |" % (receiver, counts[0]))
            continue
        count, result = best
        memory = "%.2f MiB" % (result["memoryPerViewer"] / 1048576) if result.get("memoryPerViewer") else "–"
        print("| %s | %d | %.2f | %.2f | %s |" % (receiver, count, result["cpu"] or 0, 100 * (result["cpu"] or 0) / count, memory))


if __name__ == "__main__":
    main()
