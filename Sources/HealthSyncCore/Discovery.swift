import VitalsKit

/// Bonjour: the Health Sync servers on the local network (`_healthsync._tcp` on `.local`), as
/// avahi-browse(1) resolves them through the machine's avahi-daemon. The seed's server advertises
/// itself so; scripts/serve does the same with avahi-publish, with TXT records `txtvers=1`,
/// `path=/api/v1` and `sha256=` the SHA-256 of its certificate.
enum Discovery {
    /// The service type.
    static let serviceType = "_healthsync._tcp"

    /// One resolved service: a `=` line of `avahi-browse --parsable --resolve`.
    struct Service: Equatable {
        var interface: String
        var protocolName: String
        var name: String
        var domain: String
        var host: String
        var address: String
        var port: Int
        var txt: [String]

        /// A TXT value by key (`sha256=...`).
        func txt(_ key: String) -> String? {
            txt.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }

        /// The server's address for a URL: IPv6 in brackets, a link-local one with its interface.
        var url: String {
            guard address.contains(":") else { return "https://\(address):\(port)" }
            let scoped = address.lowercased().hasPrefix("fe80:") && !interface.isEmpty ? "\(address)%25\(interface)" : address
            return "https://[\(scoped)]:\(port)"
        }

        /// Preference among a server's addresses: IPv4, then routable IPv6, then link-local IPv6.
        var rank: Int { !address.contains(":") ? 0 : address.lowercased().hasPrefix("fe80:") ? 2 : 1 }
    }

    /// Browses and resolves with avahi-browse for at most `timeoutMs`; every service found.
    static func browse(timeoutMs: Int) throws -> [Service] {
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(
                ["avahi-browse", "--resolve", "--parsable", "--terminate", "--no-db-lookup", serviceType],
                timeoutMs: Int64(timeoutMs))
        } catch {
            throw ToolError(
                "--discover needs avahi-browse (Debian: apt-get install avahi-utils, with avahi-daemon running): \(error.reason)")
        }
        let errors = String(decoding: result.error, as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: "; ")
        if !result.succeeded && !result.timedOut {
            throw ToolError(
                "--discover: avahi-browse failed" + (errors.isEmpty ? "" : ": \(errors)")
                    + " (Bonjour on Linux needs a running avahi-daemon)")
        }
        return parse(String(decoding: result.output, as: UTF8.self))
    }

    /// The resolved services in avahi-browse's parsable output: `=;IFACE;PROTO;NAME;TYPE;DOMAIN;HOST;ADDRESS;PORT;TXT`,
    /// where names are escaped (`\032` is a space, `\059` a semicolon: `\` and three decimal digits)
    /// and TXT is a list of quoted strings (`"a=b" "c"`, `\"` and `\\` inside) that may hold `;` unescaped.
    static func parse(_ output: String) -> [Service] {
        var services: [Service] = []
        for line in output.split(whereSeparator: \.isNewline) where line.hasPrefix("=;") {
            // The first nine fields never hold an unescaped `;`; the tenth (TXT) may.
            var fields: [Substring] = []
            var rest = line[...]
            while fields.count < 9, let semicolon = rest.firstIndex(of: ";") {
                fields.append(rest[..<semicolon])
                rest = rest[rest.index(after: semicolon)...]
            }
            guard fields.count == 9, let port = Int(fields[8]), (1...65_535).contains(port) else { continue }
            services.append(
                Service(
                    interface: unescape(fields[1]), protocolName: String(fields[2]), name: unescape(fields[3]),
                    domain: unescape(fields[5]), host: unescape(fields[6]), address: String(fields[7]), port: port,
                    txt: txtStrings(rest)))
        }
        return services
    }

    /// avahi's escaping of names: `\DDD` (a byte in decimal) and `\` before any other character.
    static func unescape(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "\\"), let next = input.first else {
                bytes.append(byte)
                continue
            }
            let digits = input.prefix(3)
            if digits.count == 3, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(String(decoding: digits, as: UTF8.self)), value < 256
            {
                bytes.append(UInt8(value))
                input.removeFirst(3)
            } else {
                bytes.append(next)
                input.removeFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The TXT strings: each in double quotes, `\"` and `\\` escaped, separated by spaces.
    static func txtStrings(_ text: Substring) -> [String] {
        var strings: [String] = []
        var current: [UInt8]?
        var escaped = false
        for byte in text.utf8 {
            if var open = current {
                if escaped {
                    open.append(byte)
                    escaped = false
                    current = open
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    strings.append(String(decoding: open, as: UTF8.self))
                    current = nil
                } else {
                    open.append(byte)
                    current = open
                }
            } else if byte == UInt8(ascii: "\"") {
                current = []
            }
        }
        return strings
    }

    /// The services naming the certificate `sha256` in their TXT record, preferred addresses first.
    /// Several servers may answer on a network; the certificate is what tells this client's apart,
    /// and a service that only claims it fails the key pin on connecting (the caller tries the next).
    static func servers(showing sha256: String, timeoutMs: Int) throws -> [Service] {
        let services = try browse(timeoutMs: timeoutMs)
        guard !services.isEmpty else {
            throw ToolError(
                "--discover: Bonjour found no \(serviceType) service on the local network (is the server advertised? scripts/serve does it when avahi-daemon runs)"
            )
        }
        let matching = services.filter { $0.txt("sha256")?.lowercased() == sha256 }.sorted { $0.rank < $1.rank }
        guard !matching.isEmpty else {
            let found = services.map { "'\($0.name)' at \($0.address):\($0.port)" }.joined(separator: ", ")
            throw ToolError("--discover: no \(serviceType) service shows the paired server's certificate (found \(found))")
        }
        return matching
    }
}
