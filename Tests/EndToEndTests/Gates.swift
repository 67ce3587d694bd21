import Foundation
import Testing

/// Whether this run requires every gated test to run (`VITALS_REQUIRE_GATES=1`, as CI sets it,
/// running as root on a machine with ICMP, network namespaces and nftables).
let gatesRequired = ProcessInfo.processInfo.environment["VITALS_REQUIRE_GATES"] == "1"

/// The one check every gated test goes through: whether what it needs (ICMP permission, root,
/// network namespaces, nftables) is here. True: run the test. When the gate does not hold,
/// the test is skipped and says `why` (it is cancelled with that comment); with
/// `VITALS_REQUIRE_GATES=1` a gate that does not hold is a test failure naming `why`, and the
/// function returns false so the test ends there.
///
///     guard try requireGate(runningAsRoot, "raw ICMP sockets need root") else { return }
func requireGate(_ holds: Bool, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
    if holds { return true }
    if gatesRequired {
        Issue.record("VITALS_REQUIRE_GATES=1, but this test's gate does not hold: \(why)", sourceLocation: sourceLocation)
        return false
    }
    try Test.cancel("skipped: \(why)", sourceLocation: sourceLocation)
}
