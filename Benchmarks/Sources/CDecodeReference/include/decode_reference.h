#ifndef PLAYOUT_DECODE_REFERENCE_H
#define PLAYOUT_DECODE_REFERENCE_H

/// The minimal libavformat + libavcodec decode loop the Decode benchmarks measure against:
/// av_read_frame → avcodec_send_packet → avcodec_receive_frame over the first video stream of
/// `path`, with `threads` decoding threads (frame threading when `frame_threading` is non-zero,
/// else slice threading). Returns the frames decoded, or -1.
int reference_decode_file(const char *path, int threads, int frame_threading);

#endif
