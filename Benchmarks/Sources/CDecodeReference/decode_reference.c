#include "decode_reference.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

int reference_decode_file(const char *path, int threads, int frame_threading) {
    AVFormatContext *format = NULL;
    if (avformat_open_input(&format, path, NULL, NULL) < 0) return -1;
    if (avformat_find_stream_info(format, NULL) < 0) { avformat_close_input(&format); return -1; }
    int stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (stream < 0) { avformat_close_input(&format); return -1; }
    const AVCodec *codec = avcodec_find_decoder(format->streams[stream]->codecpar->codec_id);
    AVCodecContext *context = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(context, format->streams[stream]->codecpar);
    context->thread_count = threads;
    context->thread_type = frame_threading ? FF_THREAD_FRAME : FF_THREAD_SLICE;
    if (avcodec_open2(context, codec, NULL) < 0) { avcodec_free_context(&context); avformat_close_input(&format); return -1; }
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    int frames = 0;
    while (av_read_frame(format, packet) >= 0) {
        if (packet->stream_index == stream && avcodec_send_packet(context, packet) >= 0) {
            while (avcodec_receive_frame(context, frame) >= 0) frames++;
        }
        av_packet_unref(packet);
    }
    avcodec_send_packet(context, NULL);
    while (avcodec_receive_frame(context, frame) >= 0) frames++;
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&context);
    avformat_close_input(&format);
    return frames;
}
