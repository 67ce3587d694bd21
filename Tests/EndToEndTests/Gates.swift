import Foundation
import Testing

/// Whether this run requires every gated test to run (`VITALS_REQUIRE_GATES=1`, as `.ci/run`
/// sets it: CI runs as root on Debian, where root, ICMP, network namespaces and nftables are all
/// there, so a gate that does not hold is a fault).
let gatesRequired = ProcessInfo.processInfo.environment["VITALS_REQUIRE_GATES"] == "1"

/// The one gate of the suite: a test (or part of one, such as one documented example) that needs
/// root, a network namespace, nftables, ICMP sockets or the like calls this first and goes on only
/// when it returns true.
///
/// - `holds`: whether what the test needs is there.
/// - `why`: what it needs, in words ("raw ICMP sockets need root").
/// - Returns true when the gate holds. When it does not, returns false (the caller skips that test
///   or that part) and says so on stderr with the reason, so a skip is visible in the run's output;
///   with `VITALS_REQUIRE_GATES=1` it also records a failure at the caller's line, so in CI a skip
///   cannot pass. It does not cancel the whole test: a gate may cover one part of a test.
///
///     guard try requireGate(runningAsRoot, "raw ICMP sockets need root") else { return }
@discardableResult
func requireGate(_ holds: Bool, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
    if holds { return true }
    let test = Test.current?.name ?? "a test"
    if gatesRequired {
        Issue.record("VITALS_REQUIRE_GATES=1, but this gate does not hold: \(why)", sourceLocation: sourceLocation)
    }
    FileHandle.standardError.write(Data("◇ skipped \(test): \(why)\n".utf8))
    return false
}
