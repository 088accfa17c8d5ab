#ifndef PLAYOUT_CFFMPEG_SHIM_H
#define PLAYOUT_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/// AVERROR(EAGAIN) and AVERROR_EOF are macros Swift cannot import.
static inline int playout_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int playout_averror_eof(void) { return AVERROR_EOF; }

#endif
