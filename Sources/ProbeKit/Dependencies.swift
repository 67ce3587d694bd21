import VitalsKit

extension TargetFields {
    /// `depends_on`: the monitors a target depends on, one id or an array of ids (notify holds back
    /// a target's failures while one of them is down); nil when absent or empty.
    public func dependsOn(selfID: String) throws(TargetProblem) -> [String]? {
        guard let value = value("depends_on") else { return nil }
        let items: [JSONValue]
        switch value {
        case .string: items = [value]
        case .array(let list): items = list
        default: throw TargetProblem("field 'depends_on' must be a monitor id or an array of ids, not \(value.typeName)")
        }
        var ids: [String] = []
        for item in items {
            guard case .string(let text) = item, let id = TargetIDs.normalize(text) else {
                throw TargetProblem("field 'depends_on' must hold monitor ids (non-empty strings), not \(item.jsonText)")
            }
            guard id != selfID else { throw TargetProblem("field 'depends_on' names the target itself ('\(id)')") }
            if !ids.contains(id) { ids.append(id) }
        }
        return ids.isEmpty ? nil : ids
    }
}

/// Cycles in the targets' `depends_on`, found when a target list is read (a cycle is an error then:
/// a monitor that is its own ancestor would hold back its own failures).
public enum DependencyCycles {
    /// The cycles among `ids` (each with its parents at the same index), each as the indices of the
    /// targets on it in order; parents not in the list are not followed. Each target is on at most one
    /// cycle reported.
    public static func find(ids: [String], parents: [[String]]) -> [[Int]] {
        var index: [String: Int] = [:]
        for (position, id) in ids.enumerated() where index[id] == nil { index[id] = position }
        // 0 unvisited, 1 on the current path, 2 done.
        var color = [UInt8](repeating: 0, count: ids.count)
        var path: [Int] = []
        var cycles: [[Int]] = []
        var onCycle = Set<Int>()
        func visit(_ node: Int) {
            color[node] = 1
            path.append(node)
            for parent in parents[node] {
                guard let next = index[parent] else { continue }
                if color[next] == 1, let start = path.firstIndex(of: next) {
                    let cycle = Array(path[start...])
                    if onCycle.isDisjoint(with: cycle) {
                        cycles.append(cycle)
                        onCycle.formUnion(cycle)
                    }
                } else if color[next] == 0 {
                    visit(next)
                }
            }
            path.removeLast()
            color[node] = 2
        }
        for node in ids.indices where color[node] == 0 { visit(node) }
        return cycles
    }

    /// Reports each target on a cycle of `targets` and `switchedOff` (read from one list) with its
    /// line, and drops its parents, so that it is probed and a cycle never holds a failure back.
    public static func refuse<Target: DependentTarget>(_ targets: inout [Target], _ switchedOff: inout [Target], diagnostics: Diagnostics) {
        let all = targets + switchedOff
        let ids = all.map(\.id)
        for cycle in find(ids: ids, parents: all.map(\.dependsOn)) {
            let words = words(cycle, ids: ids)
            for index in cycle {
                diagnostics.error(
                    "depends_on makes a cycle (\(words)); '\(ids[index])' is probed without its parents", source: all[index].source,
                    line: all[index].line)
                if index < targets.count { targets[index].dependsOn = [] } else { switchedOff[index - targets.count].dependsOn = [] }
            }
        }
    }

    /// The words for a cycle: `a -> b -> a`.
    public static func words(_ cycle: [Int], ids: [String]) -> String {
        (cycle + [cycle[0]]).map { ids[$0] }.joined(separator: " -> ")
    }
}

/// A target that may name parents: both probes' targets.
public protocol DependentTarget {
    /// Its monitor id.
    var id: String { get }
    /// The monitors it depends on.
    var dependsOn: [String] { get set }
    /// The file it was read from, for diagnostics.
    var source: String { get }
    /// Its line there.
    var line: Int { get }
}
