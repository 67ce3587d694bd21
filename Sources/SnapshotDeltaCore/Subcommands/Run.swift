import Foundation
import VitalsKit

/// One invocation's shared state and the subcommands' bodies.
struct Run {
    let options: ParsedOptions
    let context: ToolContext
    let path: String
    let now: @Sendable () -> Int64
    let rules: AnomalyRules

    var writer: RecordWriter { context.output }

    func write(_ object: JSONObject) throws { try writer.write(JSONValue.object(object).encoded()) }
}
