import PlayoutCore
import PlayoutWebRTC
import Testing

/// The WHEP decisions on exact instants: no sockets, no sleeps.
@Suite("WHEPSessionStateMachine")
struct WHEPStateMachineTests {
    static let endpoint = try! WHEPURL("https://whep.example:8443/whep/stream")
    static let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    static let answer = "v=0\r\n…answer…\r\n"
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    func machine(token: String? = "secret", configuration: WHEPSessionStateMachine.Configuration = .init()) -> WHEPSessionStateMachine {
        WHEPSessionStateMachine(endpoint: Self.endpoint, offer: Self.offer, token: token, configuration: configuration, now: t0)
    }

    static func created(location: String?, links: [String] = []) -> WHEPResponse {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/sdp")]
        if let location { headers.append(("Location", location)) }
        headers += links.map { ("Link", $0) }
        return WHEPResponse(status: 201, reason: "Created", headers: headers, body: Array(answer.utf8))
    }

    func sentRequest(_ action: WHEPSessionStateMachine.Action) throws -> (WHEPRequest, MonotonicInstant) {
        guard case .send(let request, let deadline) = action else {
            Issue.record("expected a request, got \(action)")
            throw WHEPError(.cancelled, "no request")
        }
        return (request, deadline)
    }

    func error(_ action: WHEPSessionStateMachine.Action) -> WHEPError? {
        if case .failed(let error) = action { return error }
        return nil
    }

    @Test("the POST carries the offer, application/sdp and the bearer token, bounded by the request timeout")
    func post() throws {
        var machine = machine()
        let (request, deadline) = try sentRequest(machine.start(now: t0))
        #expect(request.method == "POST")
        #expect(request.url == Self.endpoint)
        #expect(request.header("content-type") == "application/sdp")
        #expect(request.header("Authorization") == "Bearer secret")
        #expect(request.body == Array(Self.offer.utf8))
        #expect(deadline == t0.advanced(by: WHEPSessionStateMachine.Configuration.defaultRequestTimeout))
        #expect(machine.start(now: t0) == .none, "start is once")
        var anonymous = self.machine(token: "")
        #expect(try sentRequest(anonymous.start(now: t0)).0.header("Authorization") == nil, "an empty token is none")
    }

    @Test("201 with a relative or an absolute Location: answer, session URL, ICE servers", arguments: [
        ("/whep/session/abc", "https://whep.example:8443/whep/session/abc"),
        ("session/abc", "https://whep.example:8443/whep/session/abc"),
        ("https://edge.example/s/1", "https://edge.example/s/1"),
    ])
    func created(location: String, expected: String) throws {
        var machine = machine()
        _ = machine.start(now: t0)
        let link = #"<stun:stun.example.net:3478>; rel="ice-server", <turn:turn.example.net>; rel="ice-server"; username="u"; credential="c""#
        let action = machine.received(Self.created(location: location, links: [link, #"<https://x>; rel="next""#]), now: t0)
        guard case .established(let info) = action else { Issue.record("\(action)"); return }
        #expect(info.answer == Self.answer)
        #expect(info.sessionURL.description == expected)
        #expect(info.stunServers.map(\.host) == ["stun.example.net"])
        #expect(info.unsupportedICEServers.map(\.kind) == [.turn])
        #expect(info.attempts == 1)
        #expect(machine.notes.contains { $0.contains("TURN is not supported") })
    }

    @Test("201 without Location is an error; 201 without a body too")
    func missingLocation() {
        var machine = machine()
        _ = machine.start(now: t0)
        #expect(error(machine.received(Self.created(location: nil), now: t0))?.code == .missingLocation)
        var empty = self.machine()
        _ = empty.start(now: t0)
        #expect(error(empty.received(WHEPResponse(status: 201, headers: [("Location", "/s")]), now: t0))?.code == .invalidAnswer)
    }

    @Test("307 and 308 are followed with the same POST and body to the new Location", arguments: [307, 308])
    func redirect(status: Int) throws {
        var machine = machine()
        let (first, _) = try sentRequest(machine.start(now: t0))
        let later = t0.advanced(by: .milliseconds(40))
        let (second, deadline) = try sentRequest(machine.received(WHEPResponse(status: status, headers: [("Location", "/edge/7/whep")]), now: later))
        #expect(second.method == "POST")
        #expect(second.body == first.body)
        #expect(second.header("Authorization") == "Bearer secret")
        #expect(second.url.description == "https://whep.example:8443/edge/7/whep")
        #expect(deadline == later.advanced(by: .seconds(10)))
        guard case .established(let info) = machine.received(Self.created(location: "s/1"), now: later) else { Issue.record("not established"); return }
        #expect(info.sessionURL.description == "https://whep.example:8443/edge/7/s/1", "resolved against the redirected URL")
        #expect(info.endpoint == second.url)
        #expect(info.attempts == 2)
    }

    @Test("redirects are bounded, need a Location, and never go from https to http")
    func redirectBounds() throws {
        var machine = machine(configuration: .init(maximumRedirects: 2))
        _ = machine.start(now: t0)
        _ = try sentRequest(machine.received(WHEPResponse(status: 307, headers: [("Location", "/a")]), now: t0))
        _ = try sentRequest(machine.received(WHEPResponse(status: 308, headers: [("Location", "/b")]), now: t0))
        #expect(error(machine.received(WHEPResponse(status: 307, headers: [("Location", "/c")]), now: t0))?.code == .badRedirect)
        var noLocation = self.machine()
        _ = noLocation.start(now: t0)
        #expect(error(noLocation.received(WHEPResponse(status: 307), now: t0))?.code == .badRedirect)
        var downgrade = self.machine()
        _ = downgrade.start(now: t0)
        let refused = error(downgrade.received(WHEPResponse(status: 308, headers: [("Location", "http://whep.example/whep")]), now: t0))
        #expect(refused?.code == .badRedirect)
        #expect(refused?.message.contains("https to http") == true)
    }

    @Test("409 and 503 with Retry-After wait exactly that long, then post again", arguments: [409, 503])
    func retry(status: Int) throws {
        var machine = machine()
        _ = machine.start(now: t0)
        let answeredAt = t0.advanced(by: .milliseconds(30))
        let action = machine.received(WHEPResponse(status: status, headers: [("Retry-After", "3")]), now: answeredAt)
        let until = answeredAt.advanced(by: .seconds(3))
        #expect(action == .wait(until: until))
        #expect(machine.timerFired(now: until.advanced(by: .milliseconds(-1))) == .wait(until: until), "woken early: wait again")
        let (again, _) = try sentRequest(machine.timerFired(now: until))
        #expect(again.method == "POST" && again.body == Array(Self.offer.utf8))
        guard case .established(let info) = machine.received(Self.created(location: "/s"), now: until) else { Issue.record("not established"); return }
        #expect(info.attempts == 2)
    }

    @Test("Retry-After as an HTTP date is measured on the server's Date")
    func retryAtDate() {
        var machine = machine()
        _ = machine.start(now: t0)
        let response = WHEPResponse(status: 503, headers: [("Date", "Sun, 06 Nov 1994 08:49:30 GMT"), ("Retry-After", "Sun, 06 Nov 1994 08:49:35 GMT")])
        #expect(machine.received(response, now: t0) == .wait(until: t0.advanced(by: .seconds(5))))
    }

    @Test("a retry that would start past the retry window fails, naming the status; so does 503 without Retry-After")
    func retryDeadline() {
        var machine = machine(configuration: .init(retryWindow: .seconds(10)))
        _ = machine.start(now: t0)
        let late = error(machine.received(WHEPResponse(status: 503, reason: "Service Unavailable", headers: [("Retry-After", "11")]), now: t0))
        #expect(late?.code == .retryDeadlinePassed)
        #expect(late?.message.contains("503 Service Unavailable") == true)
        var plain = self.machine()
        _ = plain.start(now: t0)
        #expect(error(plain.received(WHEPResponse(status: 503), now: t0))?.code == .httpStatus(503))
        var garbled = self.machine()
        _ = garbled.start(now: t0)
        #expect(error(garbled.received(WHEPResponse(status: 409, headers: [("Retry-After", "soon")]), now: t0))?.message.contains("neither seconds nor an HTTP date") == true)
    }

    @Test("other statuses are one error naming the status, with the problem's title and detail", arguments: [
        (401, "application/problem+json", #"{"title":"Unauthorized","detail":"token expired"}"#, "answered 401 Unauthorized: Unauthorized: token expired (check --token)"),
        (403, "application/problem+json; charset=utf-8", #"{"title":"Forbidden"}"#, "answered 403 Forbidden: Forbidden (the token is not allowed"),
        (404, "text/plain", "no such stream\n", "answered 404 Not Found: no such stream (check the URL"),
        (404, "", "", "answered 404 Not Found (check the URL"),
        (500, "application/problem+json", "{not json", "answered 500 Internal Server Error"),
        (200, "application/sdp", "v=0", "answered 200 OK"),
    ])
    func statuses(status: Int, type: String, body: String, expected: String) {
        var machine = machine()
        _ = machine.start(now: t0)
        let reasons = [401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 500: "Internal Server Error", 200: "OK"]
        let headers: [(name: String, value: String)] = type.isEmpty ? [] : [("Content-Type", type)]
        let failure = error(machine.received(WHEPResponse(status: status, reason: reasons[status]!, headers: headers, body: Array(body.utf8)), now: t0))
        #expect(failure?.code == .httpStatus(status))
        #expect(failure?.message.contains(expected) == true, "\(failure?.message ?? "no error")")
        #expect(failure?.message.contains("{not json") != true)
    }

    @Test("close after 201: DELETE of the session URL with the token within 2 s; the outcome is kept")
    func deleteAtEnd() throws {
        var machine = machine()
        _ = machine.start(now: t0)
        _ = machine.received(Self.created(location: "/whep/session/9"), now: t0)
        let end = t0.advanced(by: .seconds(45))
        let (request, deadline) = try sentRequest(machine.close(now: end))
        #expect(request.method == "DELETE")
        #expect(request.url.description == "https://whep.example:8443/whep/session/9")
        #expect(request.header("Authorization") == "Bearer secret")
        #expect(request.body.isEmpty)
        #expect(deadline == end.advanced(by: .seconds(2)))
        #expect(machine.close(now: end) == .none, "one DELETE")
        #expect(machine.received(WHEPResponse(status: 200), now: end) == .closed)
        #expect(machine.deleteOutcome == .success(200))
        #expect(machine.close(now: end) == .closed)
    }

    @Test("a DELETE that fails in transport still closes, with the error kept; close before 201 sends nothing")
    func deleteFailure() throws {
        var machine = machine()
        _ = machine.start(now: t0)
        _ = machine.received(Self.created(location: "/s"), now: t0)
        _ = try sentRequest(machine.close(now: t0))
        let failure = WHEPError(.timedOut, "timed out")
        #expect(machine.transportFailed(failure, now: t0) == .closed)
        #expect(machine.deleteOutcome == .failure(failure))
        var early = self.machine()
        _ = early.start(now: t0)
        #expect(early.close(now: t0) == .closed)
        #expect(early.deleteOutcome == nil)
        var waiting = self.machine()
        _ = waiting.start(now: t0)
        _ = waiting.received(WHEPResponse(status: 503, headers: [("Retry-After", "1")]), now: t0)
        #expect(waiting.close(now: t0) == .closed)
        #expect(waiting.timerFired(now: t0.advanced(by: .seconds(2))) == .none)
    }

    @Test("retries are bounded by the number of posts, whatever the window")
    func retryAttempts() throws {
        var machine = machine(configuration: .init(retryWindow: .seconds(3600), maximumAttempts: 3))
        var now = t0
        _ = machine.start(now: now)
        for _ in 0..<2 {
            guard case .wait(let until) = machine.received(WHEPResponse(status: 503, headers: [("Retry-After", "1")]), now: now) else {
                Issue.record("expected a wait")
                return
            }
            now = until
            _ = try sentRequest(machine.timerFired(now: now))
        }
        #expect(error(machine.received(WHEPResponse(status: 503, headers: [("Retry-After", "1")]), now: now))?.code == .retryDeadlinePassed)
    }

    @Test("a transport failure of the POST is the error")
    func postFailure() {
        var machine = machine()
        _ = machine.start(now: t0)
        let failure = WHEPError(.connectionFailed, "refused")
        #expect(machine.transportFailed(failure, now: t0) == .failed(failure))
        #expect(machine.state == .failed(failure))
    }
}
