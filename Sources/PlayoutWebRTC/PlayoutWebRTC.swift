// Subscribing over WebRTC (issue 29): WHEP's offer/answer over HTTP (WHEP/), a full controlling ICE
// agent with STUN (ICE/), DTLS-SRTP on OpenSSL through memory BIOs (DTLS/). Each part is sans-IO:
// it takes datagrams, responses and the time, and returns what to send and when to wake; the
// receive path after SRTP is the existing one (PlayoutRTP and the subscription core).
