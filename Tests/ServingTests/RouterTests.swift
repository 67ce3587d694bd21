import Testing
import VitalsKit

@testable import Serving

@Suite("the router: one table for every API")
struct RouterTests {
    /// A router over a worker that records what it was asked.
    func router() -> Router<Int> {
        var router = Router<Int>(notFound: "nothing here")
        router.add(["GET"], "/api/monitors/{id}") { _, values, worker in
            APIResponse(status: 200, body: Array("monitor \(values[0]) \(worker)".utf8))
        }
        router.add(["GET"], "/api/monitors/{id}/history") { _, values, _ in
            APIResponse(status: 200, body: Array("history \(values[0])".utf8))
        }
        router.add(["POST"], "/api/devices/register") { _, _, _ in APIResponse(status: 200, body: Array("register".utf8)) }
        router.add(["DELETE"], "/api/devices/{token}") { _, values, _ in APIResponse(status: 200, body: Array("delete \(values[0])".utf8)) }
        router.add(["GET"], "/boom") { _, _, _ in throw ToolError("disk on fire at /secret/path") }
        return router
    }

    func answer(_ method: String, _ path: String, query: String = "") -> (Int, String, [(String, String)]) {
        var logged: [String] = []
        let response = router().answer(APIRequest(method: method, rawPath: path, query: query), 7, log: { logged.append($0) })
        return (response.status, String(decoding: response.body, as: UTF8.self), response.headers)
    }

    @Test("a route's values are its path segments, each decoded on its own; GET brings HEAD")
    func values() {
        #expect(answer("GET", "/api/monitors/a%2Fb").1 == "monitor a/b 7")
        #expect(answer("HEAD", "/api/monitors/3/history").1 == "history 3")
        #expect(answer("GET", "//api//monitors/3/").1 == "monitor 3 7", "empty segments are dropped")
        #expect(answer("GET", "/api/monitors/x/../4").1 == "monitor 4 7", "dot segments resolve as RFC 3986 §5.2.4 says")
        #expect(
            answer("GET", "/api/monitors/%2E%2E/monitors/4").1 == "monitor 4 7",
            "an encoded .. is a .. segment once decoded, as nginx resolves it")
    }

    @Test("no route: 404 in the API's words; a route with another method: 405 naming the methods; literal routes win over values")
    func refusals() {
        let missing = answer("GET", "/api/nothing")
        #expect(missing.0 == 404 && missing.1 == #"{"error":"nothing here","reason":"not_found"}"# + "\n")
        let wrong = answer("POST", "/api/monitors/1")
        #expect(wrong.0 == 405 && wrong.2.contains { $0 == ("Allow", "GET, HEAD") })
        // DELETE /api/devices/register is the register route's 405, not a device called "register".
        let literal = answer("DELETE", "/api/devices/register")
        #expect(literal.0 == 405 && literal.2.contains { $0 == ("Allow", "POST") })
        #expect(answer("DELETE", "/api/devices/abcd").1 == "delete abcd")
        #expect(answer("GET", "/api/devices/abcd").2.contains { $0 == ("Allow", "DELETE") })
    }

    @Test("an error that is not an APIError is a 500 that says nothing of it; the log gets it")
    func internalErrors() {
        var logged: [String] = []
        let response = router().answer(APIRequest(method: "GET", rawPath: "/boom"), 0, log: { logged.append($0) })
        #expect(response.status == 500 && !String(decoding: response.body, as: UTF8.self).contains("secret"))
        #expect(logged == ["GET /boom: disk on fire at /secret/path"])
    }

    @Test("integer parameters: absent is the default; anything but digits in range is a 400 naming the parameter and range")
    func integers() throws {
        let request = APIRequest(method: "GET", rawPath: "/x", query: "hours=24&page=%2B1&per_page=101&empty=&plus=+5")
        #expect(try request.integer("hours", default: 72, in: 1...8760) == 24)
        #expect(try request.integer("missing", default: 72, in: 1...8760) == 72)
        for (name, range) in [("page", 1...10), ("per_page", 1...100), ("empty", 0...5), ("plus", 0...9)] {
            #expect(throws: APIError.self, "\(name)") { try request.integer(name, default: 1, in: range) }
        }
        do {
            _ = try request.integer("per_page", default: 25, in: 1...100)
        } catch {
            #expect(error.status == 400 && error.message == "per_page must be a whole number from 1 to 100")
            #expect(error.fields.first?.value == .string("per_page"))
        }
    }

    @Test("a request from FastCGI parameters: the path from REQUEST_URI as sent, the query decoded with + as space, a bearer token")
    func fromParameters() {
        let request = APIRequest(
            parameters: [
                "REQUEST_METHOD": "post", "REQUEST_URI": "/api/monitors/a%20b?x=1", "QUERY_STRING": "q=a+b%26c",
                "HTTP_AUTHORIZATION": "bEaReR  vt_abc ", "SCRIPT_FILENAME": "/bin/sh",
            ], body: [1, 2])
        #expect(request.method == "POST" && request.segments == ["api", "monitors", "a b"] && request.rawPath == "/api/monitors/a%20b")
        #expect(request.parameter("q") == "a b&c")
        #expect(request.bearerToken == "vt_abc")
        #expect(APIRequest(parameters: ["HTTP_AUTHORIZATION": "Basic dG9reW8="], body: []).bearerToken == nil)
        #expect(APIRequest(parameters: ["HTTP_AUTHORIZATION": "Bearer "], body: []).bearerToken == nil)
    }
}
