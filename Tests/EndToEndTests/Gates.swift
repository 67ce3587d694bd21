import Foundation
import Testing

/// The one gate of the suite: a test (or part of one) that needs root, a network namespace,
/// nftables, ICMP sockets or the like calls this first and goes on only when it returns true.
///
/// - `holds`: whether what the test needs is there.
/// - `why`: what it needs, in words ("raw ICMP sockets need root").
/// - Returns true when the gate holds. When it does not, returns false (the caller skips) and
///   says so on stderr with the reason, so a skip is visible in the run's output; with
///   `VITALS_REQUIRE_GATES=1` it also records a failure, so in CI a skip cannot pass.
@discardableResult
func requireGate(_ holds: Bool, _ why: String) throws -> Bool {
    if holds { return true }
    let test = Test.current?.name ?? "a test"
    // `.ci/run` sets VITALS_REQUIRE_GATES=1: it runs as root on Debian, where root,
    // namespaces, nftables and ICMP are all there, so a gate that does not hold is a fault.
    if ProcessInfo.processInfo.environment["VITALS_REQUIRE_GATES"] == "1" {
        Issue.record("gate does not hold under VITALS_REQUIRE_GATES=1: \(why)")
    }
    FileHandle.standardError.write(Data("◇ skipped \(test): \(why)\n".utf8))
    return false
}
