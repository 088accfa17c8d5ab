# Playout — set-up, build, test and run in one command each (see README.md).
#
#   make demo   install what is missing, build, run the demo
#   make test   install what is missing, build everything (warnings are errors), run all tests
#
# Both start with `setup`, which installs the Debian packages Playout needs and is idempotent:
# it runs `apt-get update` only when a package is missing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# Debian packages: FFmpeg's libraries and CLI (interop tests), libsrtp2, OpenSSL's libcrypto
# (SRTP's ciphers), pkg-config, librsvg2-bin (rsvg-convert: the benchmark's SVG is rendered in
# tests); the telemetry servers the integration tests start themselves on loopback (InfluxDB 1.6,
# VictoriaMetrics for Influx v2 and Graphite, Prometheus and its promtool); GStreamer's
# gst-launch-1.0 with rtpbin, rtprtxsend, vp8enc and videotestsrc (the real feedback peer);
# libxml2, under Foundation's XMLParser (FoundationXML), which reads the analytics adapters' JUnit
# reports back in tests and in Samples/AnalyticsReport.
# GNU time: measures a child's peak memory (its own rusage from a spawning test is not the child's).
DEBIAN_PACKAGES := libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev \
                   libsrtp2-dev libssl-dev pkg-config ffmpeg librsvg2-bin libxml2 \
                   influxdb victoria-metrics prometheus \
                   gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
                   python3-aiortc python3-aiohttp gstreamer1.0-nice gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly \
                   python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-bad-1.0 \
                   chromium chromium-driver python3-selenium \
                   slurm-wlm munge curl python3-venv python3-yaml time

# Warnings are errors in our targets, and every import must be a declared dependency.
SWIFT_BUILD_FLAGS := -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PLAYOUT := .build/debug/playout

.PHONY: all setup build test samples demo bench fuzz tsan clean

all: build

setup:
	@missing=""; \
	for package in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing$$missing"; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else \
	  echo "setup: all Debian packages present"; \
	fi
	@command -v swift >/dev/null || { echo "setup: swift not found on PATH (Swift 6.2 or later is needed)"; exit 1; }

build: setup
	swift build $(SWIFT_BUILD_FLAGS)

# Builds every sample and checks its output against the "Expected output" block of its README.
samples: build
	$(CHECK_SAMPLES)

# The samples wait on real time (a few seconds of stream each) and use a fraction of a core, so
# they run at once: ≈ 20 s instead of ≈ 80 s one after another. ManyViewers (20 encoders in one
# process) and AudienceSwarm (24 viewers and their publisher) run first, alone, one after the
# other, so that each is the only sample with a CPU's worth of work.
define CHECK_SAMPLES
@outputs=$$(mktemp -d); trap 'rm -rf "$$outputs"' EXIT; \
run() { status=0; .build/debug/$$1 > "$$outputs/$$1.out" 2> "$$outputs/$$1.err" || status=$$?; echo $$status > "$$outputs/$$1.status"; }; \
names=$$(for dir in Samples/*/; do basename "$$dir"; done); \
run ManyViewers; run AudienceSwarm; \
for name in $$names; do case "$$name" in ManyViewers|AudienceSwarm) ;; *) run "$$name" & ;; esac; done; \
wait; \
for name in $$names; do \
  dir=Samples/$$name; \
  expected=$$(awk '/^## Expected output/{found=1} found && /^```$$/{if (inside) exit; inside=1; next} inside' "$$dir/README.md"); \
  actual=$$(cat "$$outputs/$$name.out"); \
  if [ "$$(cat "$$outputs/$$name.status")" != 0 ]; then \
    echo "sample $$name: exit status $$(cat "$$outputs/$$name.status")"; cat "$$outputs/$$name.err"; exit 1; \
  fi; \
  if [ "$$expected" != "$$actual" ]; then \
    echo "sample $$name: output differs from $$dir/README.md"; diff <(echo "$$expected") <(echo "$$actual") || true; cat "$$outputs/$$name.err"; exit 1; \
  fi; \
  echo "sample $$name: output as documented"; \
done
endef

# One build of everything, tests included (one planning, the test targets compiled beside the
# rest), then the samples, then the tests without building again. A failed run ends by repeating
# its issues (with their comments), so that a log's last lines say which test failed and why.
test: setup
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	$(CHECK_SAMPLES)
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; status=0; \
	swift test --skip-build 2>&1 | tee "$$log" || status=$$?; \
	if [ "$$status" != 0 ]; then \
	  echo "make test: swift test exited with status $$status; its issues again:"; \
	  awk '/recorded an issue/ { print; comments = 3; next } comments > 0 && /^↳/ { print; comments--; next } { comments = 0 }' "$$log" | cut -c1-600 | tail -n 24; \
	fi; \
	exit $$status

demo: build
	$(PLAYOUT) version
	$(PLAYOUT) demo

# Benchmarks live in their own package so their dependencies never slow the main build.
bench: setup
	cd Benchmarks && swift package --allow-writing-to-package-directory benchmark

# libFuzzer harnesses (Tests/Fuzz/PlayoutFuzz, one binary, the harness named by PLAYOUT_FUZZ),
# each run for FUZZ_RUNS executions from its seeds and a corpus kept in .build-fuzz/corpus/<name>.
# A crash leaves its input in .build-fuzz/; copy it to Tests/Fuzz/PlayoutFuzz/Crashers/<name>/ and
# the unit tests replay it forever after.
# `pipeline` drives one track's whole receive path (TrackPipeline and a real H.264 decoder), so
# the binary also links Playout's modules and FFmpeg.
FUZZ_HARNESSES ?= rtp rtcp rtx sdp sdp-answer h264 h265 vp8 vp9 opus g711 aac http-response http-request influx-line graphite pipeline publisher-rtcp dtls stun bundle
FUZZ_RUNS ?= 1000000
# (An object file name may hold a space, as swift-atomics' "Unmanaged extensions.swift.o" does, and
# a C target keeps its objects in a subfolder.)
FUZZ_MODULES := PlayoutFuzz Playout PlayoutWebRTC PlayoutHTTP PlayoutRTP PlayoutJitter PlayoutCodec PlayoutTelemetry PlayoutTelemetryBackends PlayoutSender PlayoutAnalytics PlayoutCore CSocket CSRTPCrypto Logging \
                CoreMetrics Prometheus Atomics _AtomicsShims
FFMPEG_LIBS = $(shell pkg-config --libs libavformat libavcodec libavutil libswscale libswresample)
fuzz: setup
	swift build --scratch-path .build-fuzz -c release -Xswiftc -sanitize=fuzzer,address --target PlayoutFuzz
	objects=(); for module in $(FUZZ_MODULES); do \
	  while IFS= read -r -d '' object; do objects+=("$$object"); done < <(find .build-fuzz/release/$$module.build -name '*.o' -print0); \
	done; \
	swiftc -sanitize=fuzzer,address "$${objects[@]}" -lsrtp2 -lssl -lcrypto $(FFMPEG_LIBS) -o .build-fuzz/playout-fuzz 2>/dev/null
	@for harness in $(FUZZ_HARNESSES); do \
	  mkdir -p .build-fuzz/corpus/$$harness Tests/Fuzz/PlayoutFuzz/Seeds/$$harness; \
	  echo "fuzz $$harness: $(FUZZ_RUNS) runs"; \
	  (cd .build-fuzz && PLAYOUT_FUZZ=$$harness ./playout-fuzz -runs=$(FUZZ_RUNS) -max_len=4096 -print_final_stats=1 \
	    corpus/$$harness ../Tests/Fuzz/PlayoutFuzz/Seeds/$$harness 2>&1 | grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done") || exit 1; \
	done

# ThreadSanitizer over the tests that start real threads: observables set and subscribed from
# several threads, the subscriber's observer delivery, UDP receive/send, log collection, and
# publisher → subscriber runs on loopback (intake, playout, feedback and delivery threads; the
# publisher taking RTCP; bandwidth limits set from other threads; the event loop's workers and observer
# thread with 200 subscribers). Built apart in
# .build-tsan; TSan's reports go to stderr and fail the target. Under TSan everything runs 5–15×
# slower, so a real-time test may miss a frame count: such failures are listed, not fatal here
# (make test holds them to the exact count).
TSAN_TESTS ?= ObservableTests|DisposableTests|ObserverDeliveryTests|UDPTests|LogCollectorTests|PublishSubscribeTests|PublisherFeedbackHostileTests|BandwidthLimitTests|EventLoopTests|WHEPSubscribeTests|BundleRouterTests|ICERealTimeTests
tsan: setup
	@mkdir -p .build-tsan; status=0; \
	TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 $${TSAN_OPTIONS:-}" \
	  swift test --scratch-path .build-tsan --sanitize=thread --filter '$(TSAN_TESTS)' 2>&1 | tee .build-tsan/tsan.log || status=$$?; \
	reports=$$(grep -c "WARNING: ThreadSanitizer" .build-tsan/tsan.log || true); \
	echo "tsan: $$reports report(s), swift test exit status $$status (log: .build-tsan/tsan.log)"; \
	if [ "$$status" != 0 ]; then grep -E "recorded an issue" .build-tsan/tsan.log | head -5 || true; fi; \
	[ "$$reports" = 0 ]

clean:
	rm -rf .build .build-fuzz .build-tsan Benchmarks/.build
