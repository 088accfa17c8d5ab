#!/usr/bin/env bash
# decode-vs-ffmpeg.sh — what `ffmpeg -f null` costs on the Decode benchmark's clips, to compare
# with `swift package benchmark --target Decode` (Playout and the C loop, in-process).
#
# For each clip (the same files, made with the same commands as Benchmarks/Decode/Decode.swift)
# runs `ffmpeg -benchmark -i CLIP -f null -` five times with -threads 1 and with ffmpeg's default
# threads, and prints the median CPU (user + sys) and wall time of the decode loop (ffmpeg's own
# `bench:` line, which excludes its start-up).
#
# Usage: Benchmarks/decode-vs-ffmpeg.sh [RUNS]
set -euo pipefail
runs=${1:-5}
dir=${TMPDIR:-/tmp}
dir=${dir%/}
make_clip() {  # NAME ARGS...: the clip as the Decode benchmark makes it, once
  local path="$dir/playout-bench-$1"; shift
  [ -s "$path" ] || timeout 300 ffmpeg -nostdin -hide_banner -loglevel error -y "$@" "$path"
  echo "$path"
}
declare -A clips
clips["720p H.264"]=$(make_clip 720p.mp4 -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libx264 -pix_fmt yuv420p)
clips["1080p H.264"]=$(make_clip 1080p.mp4 -f lavfi -i testsrc2=size=1920x1080:rate=30:duration=2 -c:v libx264 -pix_fmt yuv420p)
clips["720p VP8"]=$(make_clip 720p.webm -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libvpx -b:v 2M)

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-12s %-16s %12s %12s\n' clip threads "CPU ms" "wall ms"
for name in "720p H.264" "1080p H.264" "720p VP8"; do
  for threads in 1 default; do
    thread_args=(); [ "$threads" = 1 ] && thread_args=(-threads 1)
    cpu=(); wall=()
    for _ in $(seq "$runs"); do
      line=$(timeout 120 ffmpeg -nostdin -hide_banner -benchmark "${thread_args[@]}" -i "${clips[$name]}" -f null - 2>&1 | grep '^bench: utime')
      # bench: utime=0.307s stime=0.020s rtime=0.328s
      cpu+=("$(echo "$line" | sed -E 's/.*utime=([0-9.]+)s stime=([0-9.]+)s.*/\1 \2/' | awk '{ printf "%.0f", ($1 + $2) * 1000 }')")
      wall+=("$(echo "$line" | sed -E 's/.*rtime=([0-9.]+)s.*/\1/' | awk '{ printf "%.0f", $1 * 1000 }')")
    done
    printf '%-12s %-16s %12s %12s\n' "$name" "$threads" "$(printf '%s\n' "${cpu[@]}" | median)" "$(printf '%s\n' "${wall[@]}" | median)"
  done
done
