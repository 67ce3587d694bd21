import Foundation
import VitalsKit

/// Answers kept between API requests, each exactly as long as it stays true: an answer is
/// reused only while the store's generation is the one it was computed at (no write since)
/// and the clock is inside the span in which its time window holds the same samples. So a
/// kept answer is byte for byte the one a fresh computation would give; it only saves the
/// work. Each CGI request is its own process: the answers are kept in files, in a folder
/// beside the SQLite file (`DB.views/`, mode 0700), written atomically.
///
/// A file is one header line, `generation valid_from valid_until` (milliseconds; the answer
/// holds for `valid_from <= now < valid_until`), then the answer.
struct ViewCache {
    let directory: String

    /// The cache of the SQLite store at `database`.
    init(database: String) {
        directory = database + ".views"
    }

    /// What a computation gives: the answer, and until when (exclusive) it holds.
    struct Computed {
        var body: [UInt8]
        var validUntil: Int64
    }

    /// The answer named `key` at `now` for store generation `generation`: the kept one when
    /// it holds, else `compute()`'s, kept for the next request (a folder that cannot be written
    /// only means nothing is kept).
    func answer(_ key: String, generation: Int64, now: Int64, compute: () throws -> Computed) throws -> [UInt8] {
        let path = directory + "/" + key
        if let data = FileManager.default.contents(atPath: path), let newline = data.firstIndex(of: 0x0A) {
            let header = String(decoding: data[..<newline], as: UTF8.self).split(separator: " ").compactMap { Int64($0) }
            if header.count == 3, header[0] == generation, header[1] <= now, now < header[2] {
                return Array(data[(newline + 1)...])
            }
        }
        let computed = try compute()
        if computed.validUntil > now {
            if access(directory, F_OK) != 0 { mkdir(directory, 0o700) }
            let header = Array("\(generation) \(now) \(computed.validUntil)\n".utf8)
            try? AtomicFile.write(header + computed.body, to: path)
        }
        return computed.body
    }
}
