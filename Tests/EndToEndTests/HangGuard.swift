import Foundation
import Testing

/// A hang guard for a test: when one run of its body (one test case) has gone on for `minutes`
/// by itself, the test process says which test hangs and ends, failing the run.
///
/// Not Swift Testing's `.timeLimit`: that limit starts when the test starts, and a test started
/// beside many others waits for one of the test pool's threads (two on two cores), which tests
/// waiting on processes and servers hold; so on a loaded machine a whole suite of tests that
/// never hung went over it together (58 probe-http tests at once, each 154 s after its start,
/// while two busy loops and a build held the cores). This clock starts when the body runs, so
/// only a test that really hangs reaches it, however slow the machine or long the queue.
struct HangGuard: TestTrait, SuiteTrait, TestScoping {
    /// How long one test case may run by itself.
    let minutes: Int

    var isRecursive: Bool { true }

    /// Each test case is guarded on its own; a suite or a test as a whole is not.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> HangGuard? { testCase == nil ? nil : self }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let finished = DispatchSemaphore(value: 0)
        let name = test.displayName ?? test.name
        let minutes = self.minutes
        // A thread of its own: a dispatch queue could wait behind the very threads a hang holds.
        Thread.detachNewThread {
            guard finished.wait(timeout: .now() + .seconds(minutes * 60)) == .timedOut else { return }
            FileHandle.standardError.write(
                Data("EndToEndTests: \"\(name)\" has run \(minutes) min by itself: it hangs; ending the test run\n".utf8))
            exit(1)
        }
        defer { finished.signal() }
        try await function()
    }
}

extension Trait where Self == HangGuard {
    /// Ends the test run when one case of the test has run `minutes` by itself (see `HangGuard`).
    static func hangGuard(minutes: Int) -> Self { HangGuard(minutes: minutes) }
}
