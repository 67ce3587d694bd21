import HTTPTransport

/// Which address families to probe (a target's `ip`, and `--ip`).
public enum IPChoice: String, Sendable {
    case any
    case v4 = "4"
    case v6 = "6"
    /// One sample per family.
    case both
}

extension IPChoice {
    /// The words `--ip` takes, in the order help names them.
    public static let words = ["4", "6", "both", "any"]

    /// The probes a target with this choice makes: one (`any`, `4`, `6`) or one per family
    /// (`both`, as monitors `ID/ipv4` and `ID/ipv6`).
    public func probes(monitor: String) -> [(family: IPFamily, monitor: String)] {
        switch self {
        case .any: return [(.any, monitor)]
        case .v4: return [(.v4, monitor)]
        case .v6: return [(.v6, monitor)]
        case .both: return [(.v4, monitor + "/ipv4"), (.v6, monitor + "/ipv6")]
        }
    }
}
