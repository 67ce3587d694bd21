import HTTPTransport

extension NetworkView {
    /// The interface a request left by: the one holding the local address it connected from,
    /// else the route to the address it tried (or to `host` when that is an address literal);
    /// nil when it got no address (a failed lookup).
    public func route(of result: HTTPResult, host: String) -> NetworkRoute? {
        if let local = result.localIP.flatMap(IPAddress.init), let route = route(fromLocal: local) { return route }
        if let remote = result.remoteIP.flatMap(IPAddress.init) ?? IPAddress(host) { return route(to: remote) }
        return nil
    }
}
