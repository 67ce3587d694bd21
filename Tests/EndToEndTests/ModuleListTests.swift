import Foundation
import Testing

/// The modules as `Package.swift` declares them, each with what it may import, read from its text:
/// the C libraries (`.systemLibrary`), the targets named in it, and one core and one executable per
/// row of its `tools` table. Test targets are left out.
struct PackageModules {
    /// Each module's name, and the modules it depends on.
    var dependencies: [String: Set<String>] = [:]
    /// The tools table's rows: executable and core.
    var tools: [(tool: String, core: String)] = []

    init(_ text: String) throws {
        func quoted(_ list: Substring) -> Set<String> {
            Set(list.matches(of: #/"([\w-]+)"/#).map { String($0.output.1) })
        }
        for match in text.matches(of: #/\("([\w-]+)", "(\w+Core)", \[([^\]]*)\]\)/#) {
            let (tool, core) = (String(match.output.1), String(match.output.2))
            tools.append((tool, core))
            dependencies[core] = quoted(match.output.3).union(["VitalsKit"])
            dependencies[tool] = [core]
        }
        for match in text.matches(of: #/\.systemLibrary\(name: "(\w+)"/#) {
            dependencies[String(match.output.1)] = []
        }
        let cores = Set(tools.map(\.core))
        for match in text.matches(of: #/\.(?:target|executableTarget)\(name: "([\w-]+)"(?:, dependencies: \[([^\]]*)\]( \+ tools\.map)?)?/#)
        {
            // A later mention (a test target's dependency) names a module declared above.
            guard dependencies[String(match.output.1)] == nil else { continue }
            var uses = match.output.2.map(quoted) ?? []
            if match.output.3 != nil { uses.formUnion(cores) }
            dependencies[String(match.output.1)] = uses
        }
    }

    /// Every module's name.
    var names: Set<String> { Set(dependencies.keys) }
}

/// The module lists of the README (Layout) and ARCHITECTURE.md (the modules table) are the
/// package's, and each module's sources import only what ARCHITECTURE.md says it may.
@Suite("module lists")
struct ModuleListTests {
    let package: PackageModules

    init() throws {
        package = try PackageModules(try readPage("Package.swift"))
    }

    /// The lines of a Markdown section, up to the next `## `.
    static func section(_ title: String, of text: String) -> [Substring] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring("## " + title)) else { return [] }
        let rest = lines[(start + 1)...]
        return Array(rest.prefix { !$0.hasPrefix("## ") })
    }

    /// ARCHITECTURE.md's table: each module of the first column, with the modules of the last.
    func architectureTable() throws -> [String: Set<String>] {
        var table: [String: Set<String>] = [:]
        let cores = Set(package.tools.map(\.core))
        for line in Self.section("Modules and what each may import", of: try readPage("ARCHITECTURE.md")) where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let modules = cells[0].matches(of: #/`([\w-]+)`/#).map { String($0.output.1) }
            let last = cells[cells.count - 1]
            let named = Set(last.matches(of: #/`([\w-]+)`/#).map { String($0.output.1) }).subtracting(["Core"])
            for module in modules {
                if last.contains("its own `Core`") {
                    table[module] = Set(package.tools.filter { $0.tool == module }.map(\.core))
                } else if last.contains("every `Core`") {
                    table[module] = named.union(cores)
                } else {
                    table[module] = named
                }
            }
        }
        return table
    }

    @Test("ARCHITECTURE.md lists every module with what Package.swift lets it import")
    func architecture() throws {
        let table = try architectureTable()
        #expect(Set(table.keys) == package.names, "ARCHITECTURE.md vs Package.swift: \(Set(table.keys).symmetricDifference(package.names))")
        for (module, uses) in package.dependencies.sorted(by: { $0.key < $1.key }) {
            #expect(table[module] == uses, "\(module): ARCHITECTURE.md says \(table[module] ?? []), Package.swift \(uses)")
        }
    }

    @Test("the README's layout names every module of Package.swift, and no other")
    func readme() throws {
        var listed: Set<String> = []
        for line in Self.section("Layout", of: try readPage("README.md")) where line.hasPrefix("    Sources/") {
            let words = line.dropFirst(4).split(separator: "  ", maxSplits: 1, omittingEmptySubsequences: true)
            let names = words[0].dropFirst("Sources/".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            for name in names {
                if name == "<Tool>Core" {
                    listed.formUnion(package.tools.map(\.core))
                } else {
                    listed.insert(name)
                }
            }
            let description = words.count > 1 ? words[1] : ""
            if description.contains("Sources/<tool>") { listed.formUnion(package.tools.map(\.tool)) }
            if let executable = description.firstMatch(of: #/\(([\w-]+)\)$/#) { listed.insert(String(executable.output.1)) }
        }
        #expect(listed == package.names, "README Layout vs Package.swift: \(listed.symmetricDifference(package.names))")
    }

    @Test("each module's sources import only the modules its row names")
    func imports() throws {
        let table = try architectureTable()
        let root = Binaries.repositoryRoot.appendingPathComponent("Sources")
        // An executable's folder has dashes; its module name has underscores.
        let byModuleName = Dictionary(uniqueKeysWithValues: package.names.map { ($0.replacingOccurrences(of: "-", with: "_"), $0) })
        for module in package.names.sorted() {
            let folder = root.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: folder.path) else { continue }
            var imported: Set<String> = []
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for match in text.matches(of: #/(?m)^\s*(?:@\w+ )*(?:public |internal |package )?import (\w+)/#) {
                    if let name = byModuleName[String(match.output.1)] { imported.insert(name) }
                }
            }
            let allowed = table[module] ?? []
            #expect(
                imported.isSubset(of: allowed), "\(module) imports \(imported.subtracting(allowed).sorted()), which its row does not name")
        }
    }

    @Test("the parser of Package.swift finds the tools and their cores")
    func parser() throws {
        #expect(package.tools.count >= 8)
        #expect(package.dependencies["StoreSamplesCore"]?.contains("SQLiteStore") == true)
        #expect(package.dependencies["vitals-completions"]?.contains("DigestCore") == true)
        #expect(package.dependencies["CCurl"] == [])
        #expect(package.names.allSatisfy { !$0.hasSuffix("Tests") })
    }
}
