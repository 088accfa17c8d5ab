#ifndef PLAYOUT_CFFMPEG_SHIM_H
#define PLAYOUT_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/md5.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/// AVERROR(EAGAIN) and AVERROR_EOF are macros Swift cannot import.
static inline int playout_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int playout_averror_eof(void) { return AVERROR_EOF; }
/// AVERROR(EINVAL) and AVERROR_INVALIDDATA.
static inline int playout_averror_einval(void) { return AVERROR(EINVAL); }
static inline int playout_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
/// The zeroed padding libavcodec needs after packet data and extradata.
static inline int playout_input_buffer_padding(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }
/// FF_THREAD_FRAME and FF_THREAD_SLICE.
static inline int playout_thread_frame(void) { return FF_THREAD_FRAME; }
static inline int playout_thread_slice(void) { return FF_THREAD_SLICE; }
/// The text of an FFmpeg error code.
static inline void playout_error_string(int error, char *buffer, size_t size) { av_strerror(error, buffer, size); }

#endif
