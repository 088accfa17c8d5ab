#!/usr/bin/env bash
# decode-instructions.sh — instructions Playout's decode executes against the C loop and
# `ffmpeg -f null`, counted by callgrind: the same file decoded the same way gives the same count
# on every run, where CPU time on this VM drifts by ±10 %.
#
# For each of the Decode benchmark's clips and each decoder configuration (1 thread, 2 slice
# threads, 2 frame threads), counts instructions (callgrind's "I refs", every thread) of:
#   Playout    DecodeOnce playout CLIP …   Playout's demuxer + decoder, whole (open, probe, decode)
#   C loop     DecodeOnce c CLIP …         the C loop (Sources/CDecodeReference), whole
#   start-up   DecodeOnce none …           the process alone, subtracted from both
#   opening    DecodeOnce open CLIP …      what Playout opens before it decodes (input + decoder)
#   ffmpeg     ffmpeg -threads N -thread_type T -i CLIP -f null -,   minus the same with
#              -frames:v 0 (its start-up, input probe and decoder open)
# and prints, in millions: Playout and the C loop net of start-up and their ratio, then the decode
# loops after opening — Playout's and ffmpeg's — and their ratio. A ratio ≤ 1.031 is ≥ 0.97× the
# C loop's frames per instruction; below 1.000 is fewer instructions than ffmpeg.
# Valgrind runs threads one at a time, so counts are work done, not how it overlaps.
#
# Usage: Benchmarks/decode-instructions.sh [--threads 1|slice|frame]   (default: all three)
# Takes ≈ 7 minutes for all three (≈ 2.5 for one). Installs valgrind from Debian when missing.
set -euo pipefail
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")"
log() { printf '%s\n' "decode-instructions: $*" >&2; }

if ! command -v valgrind >/dev/null || ! command -v ffmpeg >/dev/null; then
  log "installing valgrind ffmpeg"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends valgrind ffmpeg >/dev/null
fi
swift build -c release --product DecodeOnce >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/decode-instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Valgrind cannot read the Swift toolchain's DWARF 5: count on a copy without debug info.
strip -g -o "$work/DecodeOnce" "$(swift build -c release --show-bin-path)/DecodeOnce"

dir=${TMPDIR:-/tmp}
dir=${dir%/}
make_clip() {  # NAME ARGS...: the clip as Benchmarks/Decode/Decode.swift makes it, once
  local path="$dir/playout-bench-$1"; shift
  [ -s "$path" ] || timeout 300 ffmpeg -nostdin -hide_banner -loglevel error -y "$@" "$path"
  echo "$path"
}
declare -A clips
clips["720p H.264"]=$(make_clip 720p.mp4 -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libx264 -pix_fmt yuv420p)
clips["1080p H.264"]=$(make_clip 1080p.mp4 -f lavfi -i testsrc2=size=1920x1080:rate=30:duration=2 -c:v libx264 -pix_fmt yuv420p)
clips["720p VP8"]=$(make_clip 720p.webm -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libvpx -b:v 2M)

count() {  # COMMAND...: instructions executed, every thread
  timeout 900 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
    | sed -n 's/.*I *refs: *//p' | tr -d ,
}
millions() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }

startup=$(count "$work/DecodeOnce" none - 1 slice)
printf '%-12s %-16s %10s %10s %8s   %10s %10s %8s\n' clip threads "C loop" Playout ratio \
  "ffmpeg*" "Playout*" ratio
for name in "720p H.264" "1080p H.264" "720p VP8"; do
  clip=${clips[$name]}
  for threads in 1 slice frame; do
    [ -z "$only" ] || [ "$only" = "$threads" ] || continue
    case "$threads" in
      1) args=(1 slice); label="1 thread" ;;
      slice) args=(2 slice); label="2 slice threads" ;;
      frame) args=(2 frame); label="2 frame threads" ;;
    esac
    log "$name, $label"
    reference=$(( $(count "$work/DecodeOnce" c "$clip" "${args[@]}") - startup ))
    playout=$(( $(count "$work/DecodeOnce" playout "$clip" "${args[@]}") - startup ))
    opening=$(( $(count "$work/DecodeOnce" open "$clip" "${args[@]}") - startup ))
    ffmpeg_args=(-nostdin -hide_banner -loglevel error -threads "${args[0]}" -thread_type "${args[1]}" -i "$clip")
    ffmpeg_all=$(count ffmpeg "${ffmpeg_args[@]}" -f null -)
    ffmpeg_opening=$(count ffmpeg "${ffmpeg_args[@]}" -frames:v 0 -f null -)
    ffmpeg=$((ffmpeg_all - ffmpeg_opening))
    loop=$((playout - opening))
    printf '%-12s %-16s %10s %10s %8s   %10s %10s %8s\n' "$name" "$label" "$(millions $reference)" \
      "$(millions $playout)" "$(ratio $playout $reference)" "$(millions $ffmpeg)" "$(millions $loop)" \
      "$(ratio $loop $ffmpeg)"
  done
done
echo
echo "Millions of instructions; C loop and Playout net of the process's start-up ($(millions $startup)),"
echo "* the decode loop after opening the input and the decoder."
