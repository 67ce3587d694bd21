import VitalsKit

/// The one router of every API: a table of routes, each a path pattern and the methods it takes.
/// A path no route matches is a 404 in the API's words; a path some route matches with a method
/// none of them takes is a 405 naming the methods that would do (GET always brings HEAD).
///
/// `Worker` is the per-thread state a handler works with (a store connection, say): the
/// responder gives each worker thread its own, so handlers never share one.
public struct Router<Worker>: Sendable {
    /// One segment of a route's pattern.
    public enum Segment: Sendable, Equatable {
        /// This exact text.
        case literal(String)
        /// Any one segment, handed to the handler (in order) among `values`.
        case value
    }

    /// What a handler receives: the request, the path's `.value` segments in order, and the worker.
    public typealias Handler = @Sendable (_ request: APIRequest, _ values: [String], _ worker: Worker) throws -> APIResponse

    struct Route: Sendable {
        let pattern: [Segment]
        let methods: [String]
        let handler: Handler
    }

    private var routes: [Route] = []
    /// The words of a 404.
    public let notFoundMessage: String

    /// An empty table whose 404s say `notFoundMessage`.
    public init(notFound notFoundMessage: String) {
        self.notFoundMessage = notFoundMessage
    }

    /// Adds a route: `path` is written as `/api/monitors/{id}/history`, where a `{name}` segment
    /// matches any one segment.
    public mutating func add(_ methods: [String], _ path: String, _ handler: @escaping Handler) {
        let pattern = path.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .value : .literal(String(part))
        }
        let allowed = methods.contains("GET") && !methods.contains("HEAD") ? methods + ["HEAD"] : methods
        routes.append(Route(pattern: pattern, methods: allowed, handler: handler))
    }

    /// The route and values for `request`, or the error that says why there is none. Among the
    /// routes whose pattern matches the path, those with the most literal segments decide:
    /// `DELETE /api/devices/register` is a 405 of the `register` route, not a device named so.
    func match(_ request: APIRequest) throws(APIError) -> (Route, [String]) {
        var best: [(Route, [String])] = []
        var bestLiterals = -1
        for route in routes where route.pattern.count == request.segments.count {
            var values: [String] = []
            var literals = 0
            var matches = true
            for (segment, text) in zip(route.pattern, request.segments) {
                switch segment {
                case .literal(let literal):
                    if literal != text { matches = false }
                    literals += 1
                case .value:
                    values.append(text)
                }
                if !matches { break }
            }
            guard matches, literals >= bestLiterals else { continue }
            if literals > bestLiterals {
                best.removeAll()
                bestLiterals = literals
            }
            best.append((route, values))
        }
        if let found = best.first(where: { $0.0.methods.contains(request.method) }) { return found }
        guard !best.isEmpty else { throw APIError.notFound(notFoundMessage) }
        var allowed: [String] = []
        for (route, _) in best { allowed += route.methods.filter { !allowed.contains($0) } }
        throw APIError.method(request.method, allowed: allowed)
    }

    /// Answers `request`: the handler's response, or the JSON error it threw. Anything thrown
    /// that is not an `APIError` is a 500 whose body says only that the server failed; `log`
    /// gets the details (the responder's standard error, the web server's error log).
    public func answer(_ request: APIRequest, _ worker: Worker, log: (String) -> Void) -> APIResponse {
        do {
            let (route, values) = try match(request)
            return try route.handler(request, values, worker)
        } catch let error as APIError {
            return error.response
        } catch {
            log("\(request.method) \(request.rawPath): \(error)")
            return APIError.internalError.response
        }
    }
}
