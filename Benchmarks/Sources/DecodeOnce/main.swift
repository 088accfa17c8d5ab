// decode-once — decodes one file once, for counting instructions (decode-instructions.sh runs it
// under callgrind, where CPU-time noise does not exist).
//
// Usage: DecodeOnce playout|c|open|none PATH THREADS slice|frame
//   playout  Playout's demuxer + decoder      c     the C loop
//   open     only what Playout opens           none  nothing (the process's own start-up)
import DecodeLoops
import Glibc
import PlayoutCodec

let arguments = CommandLine.arguments
guard arguments.count == 5, let threads = Int(arguments[3]), ["slice", "frame"].contains(arguments[4]) else {
    print("usage: DecodeOnce playout|c|open|none PATH THREADS slice|frame")
    exit(2)
}
let (mode, path) = (arguments[1], arguments[2])
let configuration = FFmpegDecoder.Configuration(threadCount: threads, threading: arguments[4] == "frame" ? .frame : .slice)
switch mode {
case "playout": print(try playoutDecode(path, configuration: configuration))
case "c": print(referenceDecode(path, configuration: configuration))
case "open": try playoutOpen(path, configuration: configuration)
case "none": break
default:
    print("unknown mode \(mode)")
    exit(2)
}
