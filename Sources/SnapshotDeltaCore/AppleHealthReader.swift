import VitalsKit
import XMLStream

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (libxml2's SAX callbacks hand over element names and attribute values as raw pointers,
// read in place; the export's bytes are pushed to libxml2 from a buffer): kept.

/// Reads an Apple Health `export.xml` as a stream with libxml2's SAX2 push parser
/// (`XMLPushParser`): constant memory whatever the file size, the internal DTD removed
/// before parsing (see `ExportHead`), no entity expansion, no network.
///
/// Only the children of `HealthData` count: `Record` (by its type), `Correlation` (by its
/// type; the records inside it are repeated at top level and are not counted twice),
/// `Workout` (`HKWorkoutTypeIdentifier`), `ActivitySummary`
/// (`HKActivitySummaryTypeIdentifier`), `Audiogram` (by its type), `VisionPrescription`
/// (`HKVisionPrescriptionTypeIdentifier`) and `ClinicalRecord` (`ClinicalRecord:` and its
/// FHIR resource type). A parse error anywhere fails the whole read.
final class AppleHealthReader: XMLStreamHandler {
    /// The export's `HealthKit Export Version`, when its DTD comment said.
    private(set) var exportVersion: String?
    /// The export's `ExportDate`.
    private(set) var exportDate: Int64?
    /// Top-level elements that are not counted, by name.
    private(set) var uncounted: [String: Int] = [:]

    private let sink: SampleSink
    private let source: String
    private let diagnostics: Diagnostics
    private var parser: XMLPushParser?
    private var depth = 0
    private var sample = RawSample()
    private var fatal: String?
    private var fatalLine = 0
    private var thrown: Error?
    private var rootChecked = false

    /// The longest prolog read before the root element must start (a DTD is about 10 KB).
    static let maxHead = 64 << 20

    /// A reader handing its samples to `sink`.
    init(sink: SampleSink, source: String, diagnostics: Diagnostics) {
        self.sink = sink
        self.source = source
        self.diagnostics = diagnostics
    }

    /// Reads the whole input. Returns true when it parsed without an error (record errors
    /// are counted by the sink); reports what went wrong otherwise. Throws when the
    /// archive behind the sink fails.
    func read(_ input: LineReader) throws -> Bool {
        var head: [UInt8] = []
        var prolog: [UInt8]?
        while prolog == nil, let chunk = input.nextChunk() {
            head.append(contentsOf: chunk)
            if case .done(let bytes, let version) = ExportHead.scan(head, atEnd: false) {
                prolog = bytes
                exportVersion = version
            } else if head.count > AppleHealthReader.maxHead {
                diagnostics.error(
                    "\(source): no root element in the first \(AppleHealthReader.maxHead >> 20) MiB (the document type declaration does not end)"
                )
                return false
            }
        }
        if prolog == nil {
            if input.interrupted { return false }
            if let problem = input.readError {
                diagnostics.error("error reading \(source): \(problem)")
                return false
            }
            if case .done(let bytes, let version) = ExportHead.scan(head, atEnd: true) {
                prolog = bytes
                exportVersion = version
            }
        }
        guard let prolog, !prolog.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else {
            diagnostics.error("\(source): empty input, not an Apple Health export")
            return false
        }

        guard let made = prolog.withUnsafeBufferPointer({ XMLPushParser(handler: self, start: $0, source: source) }) else {
            diagnostics.error("\(source): libxml2 could not start a parser")
            return false
        }
        parser = made
        defer { parser = nil }
        if prolog.count > made.consumed {
            let ok = prolog.withUnsafeBufferPointer { bytes in
                feed(UnsafeBufferPointer(rebasing: bytes[made.consumed...]))
            }
            if !ok { return try finish(input) }
        }
        while let chunk = input.nextChunk() {
            if !feed(chunk) { return try finish(input) }
        }
        if input.interrupted || input.readError != nil { return try finish(input) }
        made.end()
        return try finish(input)
    }

    private func feed(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let parser else { return false }
        return parser.feed(chunk) && fatal == nil && thrown == nil
    }

    private func finish(_ input: LineReader) throws -> Bool {
        if let thrown { throw thrown }
        if input.interrupted { return false }
        if let problem = input.readError {
            diagnostics.error("error reading \(source): \(problem)")
            return false
        }
        if let fatal {
            diagnostics.error(fatal, source: source, line: fatalLine)
            return false
        }
        if let parser, !parser.isWellFormed {
            diagnostics.error("\(source): not well-formed XML")
            return false
        }
        if !rootChecked {
            diagnostics.error("\(source): no HealthData element: not an Apple Health export")
            return false
        }
        return true
    }

    // MARK: - What the parser tells

    func error(_ message: String, line: Int) {
        guard fatal == nil else { return }
        fatal = message
        fatalLine = line
        parser?.stop()
    }

    func startElement(_ name: UnsafePointer<UInt8>, attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?) {
        start(name, attributeCount, attributes)
    }

    func endElement() {
        end()
    }

    private var line: Int { parser?.line ?? 0 }

    // MARK: - Elements

    @inline(__always)
    private func start(_ name: UnsafePointer<UInt8>, _ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?) {
        depth += 1
        if depth == 2 {
            topLevel(name, count, attributes)
        } else if depth == 3 {
            if strcmp(name, "MetadataEntry") == 0 { metadataEntry(count, attributes) }
        } else if depth == 1 {
            rootChecked = true
            if strcmp(name, "HealthData") != 0, fatal == nil {
                fatal = "the root element is <\(String(cString: name))>, not <HealthData>: not an Apple Health export"
                fatalLine = line
                parser?.stop()
            }
        }
    }

    /// The end of an element: a top-level one hands its metadata entries to the sink.
    @inline(__always)
    private func end() {
        if depth == 2, thrown == nil {
            do {
                try sink.endElement()
            } catch {
                thrown = error
                parser?.stop()
            }
        }
        depth -= 1
    }

    /// A `MetadataEntry` child of a top-level element: its key and value.
    private func metadataEntry(_ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?) {
        guard let attributes else { return }
        var key: String?
        var value: String?
        for index in 0..<count {
            guard let attributeName = attributes[5 * index], let valueStart = attributes[5 * index + 3],
                let valueEnd = attributes[5 * index + 4]
            else { continue }
            let text = String(decoding: UnsafeBufferPointer(start: valueStart, count: valueEnd - valueStart), as: UTF8.self)
            if strcmp(attributeName, "key") == 0 { key = text } else if strcmp(attributeName, "value") == 0 { value = text }
        }
        if let key { sink.addMetadata(key: key, value: value ?? "") }
    }

    private func topLevel(_ name: UnsafePointer<UInt8>, _ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?) {
        let element: ExportVocabulary.Element
        if strcmp(name, "Record") == 0 {
            element = .record
        } else if strcmp(name, "Workout") == 0 {
            element = .workout
        } else if strcmp(name, "Correlation") == 0 {
            element = .correlation
        } else if strcmp(name, "ActivitySummary") == 0 {
            element = .activitySummary
        } else if strcmp(name, "ExportDate") == 0 {
            exportDateAttribute(count, attributes)
            return
        } else if strcmp(name, "Me") == 0 {
            return
        } else if strcmp(name, "ClinicalRecord") == 0 {
            element = .clinicalRecord
        } else if strcmp(name, "Audiogram") == 0 {
            element = .audiogram
        } else if strcmp(name, "VisionPrescription") == 0 {
            element = .visionPrescription
        } else {
            uncounted[String(cString: name), default: 0] += 1
            return
        }
        guard let attributes else {
            sink.recordError("<\(String(cString: name))> without attributes", source: source, line: line)
            return
        }

        sample = RawSample()
        var type: UnsafeBufferPointer<UInt8>?
        var startText: UnsafeBufferPointer<UInt8>?
        var endText: UnsafeBufferPointer<UInt8>?
        var createdText: UnsafeBufferPointer<UInt8>?
        var dayText: UnsafeBufferPointer<UInt8>?
        for index in 0..<count {
            guard let attributeName = attributes[5 * index], let valueStart = attributes[5 * index + 3],
                let valueEnd = attributes[5 * index + 4]
            else { continue }
            let text = UnsafeBufferPointer(start: valueStart, count: valueEnd - valueStart)
            switch ExportVocabulary.attribute(attributeName) {
            case .type: type = text
            case .startDate: startText = text
            case .endDate: endText = text
            case .creationDate: createdText = text
            case .sourceName: sample.source = text
            case .sourceVersion: sample.sourceVersion = text
            case .device: sample.device = DeviceText.stripped(text)
            case .value: if element == .record { sample.value = text }
            case .unit: if element == .record { sample.unit = text }
            case .workoutActivityType: if element == .workout { sample.value = text }
            case .dateComponents: dayText = text
            case .activeEnergyBurned: if element == .activitySummary { sample.value = text }
            case .activeEnergyBurnedUnit: if element == .activitySummary { sample.unit = text }
            case .identifier: if element == .clinicalRecord { sample.value = text }
            case .receivedDate:
                if element == .clinicalRecord {
                    startText = text
                    endText = text
                }
            case .dateIssued:
                if element == .visionPrescription {
                    startText = text
                    endText = text
                }
            case .other: break
            }
        }

        switch element {
        case .record, .correlation, .audiogram:
            guard let type, !type.isEmpty else {
                sink.recordError("<\(String(cString: name))> has no type", source: source, line: line)
                return
            }
            sample.type = type
        case .workout:
            sample.type = ExportVocabulary.workoutType
        case .activitySummary:
            sample.type = ExportVocabulary.activitySummaryType
            guard let dayText, let day = AppleDate.parseDay(dayText) else {
                sink.recordError("<ActivitySummary> without a valid dateComponents (YYYY-MM-DD)", source: source, line: line)
                return
            }
            sample.start = day.start
            sample.end = day.start + 86_400_000
            sample.calendarYear = day.year
        case .visionPrescription:
            sample.type = ExportVocabulary.visionPrescriptionType
            // A prescription's own type (glasses, contacts) is its value.
            sample.value = type
        case .clinicalRecord:
            break
        }
        if element != .activitySummary {
            guard let startText else {
                sink.recordError("<\(String(cString: name))> has no startDate", source: source, line: line)
                return
            }
            guard let start = date(startText, "startDate", of: name) else { return }
            sample.start = start
            sample.end = start
            if let endText {
                guard let end = date(endText, "endDate", of: name) else { return }
                sample.end = end
            }
        }
        if let createdText {
            guard let created = date(createdText, "creationDate", of: name) else { return }
            sample.created = created
        }
        do {
            if element == .clinicalRecord {
                // Named by the export's element and its FHIR resource type (the export does not
                // give HealthKit's clinical type identifier).
                var name = Array("ClinicalRecord:".utf8)
                if let type { name.append(contentsOf: type) }
                try name.withUnsafeBufferPointer { bytes in
                    sample.type = bytes
                    try sink.add(&sample)
                }
            } else {
                try sink.add(&sample)
            }
        } catch {
            thrown = error
            parser?.stop()
        }
    }

    /// A date attribute's instant, or nil after reporting that the element cannot be counted.
    private func date(_ text: UnsafeBufferPointer<UInt8>, _ attribute: String, of name: UnsafePointer<UInt8>) -> Int64? {
        if let instant = AppleDate.parse(text) { return instant }
        sink.recordError(
            "<\(String(cString: name))> has a \(attribute) that is not a date: '\(String(decoding: text, as: UTF8.self))'",
            source: source, line: line)
        return nil
    }

    private func exportDateAttribute(_ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?) {
        guard let attributes else { return }
        for index in 0..<count {
            guard let attributeName = attributes[5 * index], let valueStart = attributes[5 * index + 3],
                let valueEnd = attributes[5 * index + 4], ExportVocabulary.attribute(attributeName) == .value
            else { continue }
            exportDate = AppleDate.parse(UnsafeBufferPointer(start: valueStart, count: valueEnd - valueStart))
        }
    }
}
