// Tests of the WebRTC parts, one file per part (ICE, DTLS, WHEP), each on a manual clock.
