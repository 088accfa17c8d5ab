#!/usr/bin/env bash
# live-subscribe.sh — what a live receiver costs: Playout against FFmpeg and GStreamer on one stream.
#
# One run sends the same 20 s 720p30 H.264 clip (libx264 veryfast/zerolatency, GOP 60, no B-frames,
# one slice) in real time over loopback, SRTP AES_CM_128_HMAC_SHA1_80, once per receiver, each
# receiver started first on the same port:
#   playout-srtp     playout subscribe x.sdp --json (renders on its clock, 230 ms playout delay)
#   ffmpeg-srtp      ffmpeg -i x.sdp -f null -       (decoder threads: FFmpeg's default, auto)
#   ffmpeg-srtp-t1   the same with -threads 1        (one decoder thread, as Playout decodes)
#   gst-srtp         udpsrc ! srtpdec ! rtpjitterbuffer latency=230 ! rtph264depay ! avdec_h264
#                    ! fakesink sync=true            (a clocked sink like a video sink's, 20 ms lateness)
#   playout-rtp      playout on the same clip over plain RTP, for the cost of SRTP
#   playout-ref-srtp with --reference BINARY: another Playout build (an earlier commit) as
#                    playout-srtp, for before/after in the same rounds
# For each, GNU time gives the receiver's CPU (user+sys) and peak RSS.
#
# Reading the table: "frames" is what the receiver rendered (Playout: the summary's
# video.framesRendered; GStreamer: buffers the sink rendered) or, for FFmpeg, decoded (it has no
# clock); "sent" is the clip's frame count. "CPU ms/frame" = CPU time / frames, so idle time
# before and after the stream costs almost nothing. Ratios below 1 mean Playout is cheaper.
# Expect frames == sent on an idle machine; fewer means loss or late frames, and the ratios lie.
#
# Rounds: CPU speed on a shared VM drifts by ±10 % within minutes, so with --rounds N every
# receiver runs N times, the receivers' order rotating per round; the table gives each receiver's
# median and the ratios are medians of per-round ratios (each round's receivers run minutes apart,
# not hours).
#
# Usage: Benchmarks/live-subscribe.sh [--rounds N] [--duration SECONDS] [--port PORT] [--keep]
#                                     [--reference BINARY]
#   --rounds    how many times each receiver runs (default 1; 3 takes ≈ 7 minutes)
#   --duration  how long each clocked receiver runs (default 25; the clip is 20 s)
#   --port      the UDP port (default 5004)
#   --keep      keep the run's directory (SDPs, receivers' logs) and print where it is
#   --reference a second playout binary run as playout-ref-srtp (e.g. one built from an earlier
#               commit with `swift build -c release --scratch-path DIR`)
# Env: PLAYOUT (default .build/release/playout, relative to the repo root; built when missing
# if it ends in release/playout), PLAYOUT_BENCH_CACHE (where the clip is kept between runs).
set -euo pipefail

duration=25 port=5004 keep=0 rounds=1 reference=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2%s}; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --reference) reference=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
clip_seconds=20
[ "$duration" -ge $((clip_seconds + 3)) ] || { echo "--duration must be at least $((clip_seconds + 3))" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]?$ ]] || { echo "--rounds must be 1 to 99" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PLAYOUT=${PLAYOUT:-.build/release/playout}
cache=${PLAYOUT_BENCH_CACHE:-${TMPDIR:-/tmp}/playout-live-subscribe}
log() { printf '%s\n' "live-subscribe: $*" >&2; }

# 1. Debian packages, installed only when one is missing.
packages=(ffmpeg gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
          gstreamer1.0-plugins-bad gstreamer1.0-libav time)
missing=()
command -v python3 >/dev/null || missing+=(python3)
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Playout itself, built when missing (into the scratch path its location names).
if [ ! -x "$PLAYOUT" ]; then
  case "$PLAYOUT" in
    */release/playout) log "building $PLAYOUT"
      swift build -c release --product playout --scratch-path "${PLAYOUT%/release/playout}" >&2 ;;
    *) log "$PLAYOUT not found"; exit 1 ;;
  esac
fi
"$PLAYOUT" subscribe --help >/dev/null 2>&1 || { log "$PLAYOUT has no working 'subscribe'"; exit 1; }

# 2. The clip, made once. Every ffmpeg and gst call runs under timeout; lavfi has its duration.
mkdir -p "$cache"
clip="$cache/testsrc2-720p30-${clip_seconds}s.mp4"
if [ ! -s "$clip" ]; then
  log "encoding $clip"
  timeout 300 ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=$clip_seconds" \
    -c:v libx264 -preset veryfast -tune zerolatency -g 60 -bf 0 -pix_fmt yuv420p \
    -x264-params sliced-threads=0:slices=1 -an "$clip.part.mp4"
  mv "$clip.part.mp4" "$clip"
fi
sent=$(timeout 60 ffprobe -v error -count_packets -select_streams v:0 \
  -show_entries stream=nb_read_packets -of csv=p=0 "$clip")

run=$(mktemp -d "${TMPDIR:-/tmp}/live-subscribe.XXXXXX")
receiver_pid=""
cleanup() {
  # End a receiver still running (its `timeout`, by id), then drop the run's files unless --keep.
  if [ -n "$receiver_pid" ] && kill -0 "$receiver_pid" 2>/dev/null; then
    for child in $(pgrep -P "$receiver_pid" || true); do kill -TERM "$child" 2>/dev/null || true; done
  fi
  if [ "$keep" = 1 ]; then log "kept $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 3. One key and SSRC for the run. ffmpeg's SDP has the key (a=crypto) but no SSRC, and srtpdec
# takes keys from caps only with an ssrc field (else it asks through a signal gst-launch cannot
# answer), so the sender pins the SSRC with -ssrc and GStreamer's caps name it.
key=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(30)).decode())')
key_hex=$(python3 -c 'import base64, sys; print(base64.b64decode(sys.argv[1]).hex())' "$key")
ssrc=$(python3 -c 'import random; print(random.randrange(1, 2**31))')
srtp_out=(-f rtp -ssrc "$ssrc" -srtp_out_suite AES_CM_128_HMAC_SHA1_80 -srtp_out_params "$key"
          "srtp://127.0.0.1:$port")
rtp_out=(-f rtp -ssrc "$ssrc" "rtp://127.0.0.1:$port")
# The SDPs, written by ffmpeg itself from one frame sent before any receiver listens.
timeout 30 ffmpeg -nostdin -hide_banner -loglevel error -i "$clip" -frames:v 1 -c copy \
  "${srtp_out[@]}" -sdp_file "$run/srtp.sdp" >/dev/null
timeout 30 ffmpeg -nostdin -hide_banner -loglevel error -i "$clip" -frames:v 1 -c copy \
  "${rtp_out[@]}" -sdp_file "$run/rtp.sdp" >/dev/null
# SPS/PPS are only in the SDP (the MP4's avcC), not in-band: GStreamer needs them in its caps.
sprop=$(sed -n 's/.*sprop-parameter-sets=\([^;[:space:]]*\).*/\1/p' "$run/srtp.sdp")

# receive NAME SENDER_ARGS_ARRAY -- COMMAND...: the receiver under GNU time, then the clip in real time.
receive() {
  local name=$1 out=$2; shift 3
  local -n sender_args=$out
  log "$name"
  /usr/bin/time -f '%U %S %M' -o "$run/$name.time" "$@" >"$run/$name.out" 2>"$run/$name.err" &
  receiver_pid=$!
  sleep 1.5  # the receiver binds the port before the first packet
  timeout $((clip_seconds + 30)) ffmpeg -nostdin -hide_banner -loglevel error -re -i "$clip" \
    -c copy "${sender_args[@]}" >/dev/null 2>"$run/$name.sender.err" || log "$name: sender failed"
  local status=0
  wait "$receiver_pid" || status=$?
  receiver_pid=""
  echo "$status" >"$run/$name.status"
}
guard=$((duration + 15))  # receivers end by themselves; this ends one that does not
# run_receiver NAME: one receiver's run, its files named NAME (the round's suffix included).
run_receiver() {
  local name=$1
  case "$name" in
    # a/e. Playout stops after --duration and prints its summary last.
    playout-srtp*) receive "$name" srtp_out -- timeout -s INT -k 10 "$guard" "$PLAYOUT" subscribe \
      "$run/srtp.sdp" --json --duration "${duration}s" ;;
    playout-ref-srtp*) receive "$name" srtp_out -- timeout -s INT -k 10 "$guard" "$reference" subscribe \
      "$run/srtp.sdp" --json --duration "${duration}s" ;;
    playout-rtp*) receive "$name" rtp_out -- timeout -s INT -k 10 "$guard" "$PLAYOUT" subscribe \
      "$run/rtp.sdp" --json --duration "${duration}s" ;;
    # b/c. FFmpeg's SDP input ignores one SIGINT while it waits for packets, so it ends by itself
    # 3 s after the last one (-listen_timeout) and -progress holds its final frame count.
    ffmpeg-srtp*)
      local thread_args=()
      [[ "$name" == ffmpeg-srtp-t1* ]] && thread_args=(-threads 1)
      receive "$name" srtp_out -- timeout -s INT -k 10 "$guard" ffmpeg -nostdin -hide_banner -nostats \
        -progress "$run/$name.progress" -listen_timeout 3 "${thread_args[@]}" \
        -protocol_whitelist file,udp,rtp,srtp -i "$run/srtp.sdp" -fps_mode passthrough -f null - ;;
    # d. GStreamer: no EOS comes over UDP, so SIGINT after --duration and -e turns it into one.
    # Frames are counted from the sink's last-message (silent=false, printed by -v): one "chain"
    # line per rendered buffer, exact, unlike fpsdisplaysink whose last report lags up to 0.5 s.
    gst-srtp*) receive "$name" srtp_out -- timeout -s INT -k 10 "$duration" gst-launch-1.0 -e -v \
      udpsrc port="$port" caps="$caps" ! srtpdec ! rtpjitterbuffer latency=230 ! rtph264depay \
      ! avdec_h264 ! fakesink name=sink sync=true qos=true max-lateness=20000000 silent=false ;;
  esac
}
caps="application/x-srtp, media=(string)video, payload=(int)96, clock-rate=(int)90000"
caps+=", encoding-name=(string)H264, sprop-parameter-sets=(string)\"$sprop\", ssrc=(uint)$ssrc"
caps+=", srtp-key=(buffer)$key_hex, srtp-cipher=(string)aes-128-icm, srtp-auth=(string)hmac-sha1-80"
caps+=", srtcp-cipher=(string)aes-128-icm, srtcp-auth=(string)hmac-sha1-80, roc=(uint)0"
receivers=(playout-srtp ffmpeg-srtp ffmpeg-srtp-t1 gst-srtp playout-rtp)
if [ -n "$reference" ]; then
  "$reference" subscribe --help >/dev/null 2>&1 || { log "$reference has no working 'subscribe'"; exit 1; }
  receivers+=(playout-ref-srtp)
fi
for round in $(seq "$rounds"); do
  for offset in "${!receivers[@]}"; do
    run_receiver "${receivers[$(( (offset + round - 1) % ${#receivers[@]} ))]}.r$round"
  done
done

# 4. Frames per receiver and round, then the table and the ratios.
frames() {
  case "$1" in
    playout-*) python3 -c 'import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print([l for l in lines if l.get("type") == "summary"][-1]["video"]["framesRendered"])' "$run/$1.out" ;;
    ffmpeg-*) sed -n 's/^frame=//p' "$run/$1.progress" | tail -n 1 ;;
    gst-*) grep -c 'GstFakeSink:sink: last-message = chain' "$run/$1.out" ;;
  esac
}
for round in $(seq "$rounds"); do
  for name in "${receivers[@]}"; do
    printf '%s %s %s %s %s\n' "$name" "$round" "$(frames "$name.r$round" 2>/dev/null || echo 0)" \
      "$(tail -n 1 "$run/$name.r$round.time")" "$(cat "$run/$name.r$round.status")"
  done
done >"$run/results"
python3 - "$run/results" "$sent" <<'PY'
import statistics, sys
from collections import defaultdict
runs, sent = defaultdict(dict), int(sys.argv[2])  # runs[name][round] = (ms per frame, MiB)
print(f"{'receiver':<16}{'round':>6}{'frames':>7}{'sent':>6}{'CPU s':>8}{'CPU ms/frame':>14}{'peak RSS MiB':>14}  exit")
for line in open(sys.argv[1]):
    name, round, frames, user, system, rss, status = line.split()
    frames, cpu, mib = int(frames), float(user) + float(system), int(rss) / 1024
    per = cpu * 1000 / frames if frames else float("nan")
    runs[name][round] = (per, mib)
    note = "" if status == "0" or (name.startswith("gst") and status == "124") else "  (unexpected)"
    print(f"{name:<16}{round:>6}{frames:>7}{sent:>6}{cpu:>8.2f}{per:>14.2f}{mib:>14.1f}  {status}{note}")
rounds = sorted(runs["playout-srtp"])
if len(rounds) > 1:
    print(f"\nmedian of {len(rounds)} rounds")
    for name, by_round in runs.items():
        print(f"{name:<16}{'':>27}{statistics.median(p for p, _ in by_round.values()):>14.2f}"
              f"{statistics.median(m for _, m in by_round.values()):>14.1f}")
def ratio(a, b, label):
    cpu = [runs[a][r][0] / runs[b][r][0] for r in rounds]
    rss = [runs[a][r][1] / runs[b][r][1] for r in rounds]
    each = "  (rounds: " + ", ".join(f"{c:.2f}" for c in cpu) + ")" if len(rounds) > 1 else ""
    print(f"{label:<34} CPU/frame {statistics.median(cpu):5.2f}x   peak RSS {statistics.median(rss):5.2f}x{each}")
print()
ratio("playout-srtp", "gst-srtp", "playout / GStreamer")
ratio("playout-srtp", "ffmpeg-srtp-t1", "playout / ffmpeg -threads 1")
ratio("playout-srtp", "ffmpeg-srtp", "playout / ffmpeg (auto threads)")
if "playout-ref-srtp" in runs:
    ratio("playout-srtp", "playout-ref-srtp", "playout / reference build")
    ratio("playout-ref-srtp", "gst-srtp", "reference build / GStreamer")
    ratio("playout-ref-srtp", "ffmpeg-srtp-t1", "reference build / ffmpeg -threads 1")
overhead = [(runs["playout-srtp"][r][0] / runs["playout-rtp"][r][0] - 1) * 100 for r in rounds]
print(f"{'SRTP overhead (playout)':<34} CPU/frame {statistics.median(overhead):+5.1f}%")
PY
