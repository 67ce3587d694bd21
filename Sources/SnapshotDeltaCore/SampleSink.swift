import VitalsKit

/// Where the readers hand each sample: the tally, and the sample archive when one is kept.
final class SampleSink {
    /// The per-type counts.
    let tally: Tally
    /// The per-sample archive, when samples are kept.
    let archive: SampleArchiveWriter?
    /// Problems in the records (bad dates, missing fields): any one means no snapshot.
    private(set) var recordErrors = 0
    private let diagnostics: Diagnostics
    /// The metadata entries of the current element, in order.
    private var metadata: [JSONField] = []
    /// Record errors reported in full before the rest are only counted.
    static let reportedErrors = 20

    init(tally: Tally, archive: SampleArchiveWriter?, diagnostics: Diagnostics) {
        self.tally = tally
        self.archive = archive
        self.diagnostics = diagnostics
    }

    /// Counts a sample (and archives it). Throws only when the archive cannot be written.
    @inline(__always)
    func add(_ sample: inout RawSample) throws {
        metadata.removeAll(keepingCapacity: true)
        archive?.forgetLast()
        guard let index = tally.index(of: sample.type) else {
            tally.ignore()
            return
        }
        tally.add(index, sample)
        if let archive { try archive.upsert(typeIndex: index, tally: tally, sample) }
    }

    /// Adds one metadata entry (key and value as the export wrote them) to the sample added last.
    func addMetadata(key: String, value: String) {
        metadata.append(JSONField(key, .string(value)))
    }

    /// Ends the element the metadata entries belonged to: archives them as one JSON object.
    func endElement() throws {
        guard !metadata.isEmpty else { return }
        defer { metadata.removeAll(keepingCapacity: true) }
        try archive?.attachMetadata(JSONValue.object(JSONObject(metadata)).jsonText)
    }

    /// Reports a record that cannot be counted; the take will not make a snapshot.
    func recordError(_ message: String, source: String, line: Int) {
        recordErrors += 1
        if recordErrors <= SampleSink.reportedErrors {
            diagnostics.error(message, source: source, line: line)
        }
    }

    /// Reports how many record errors were not shown.
    func summarizeErrors(source: String) {
        if recordErrors > SampleSink.reportedErrors {
            diagnostics.error("\(source): \(recordErrors - SampleSink.reportedErrors) more records with errors (not shown)")
        }
    }
}
