#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (attribute names are libxml2's NUL-terminated strings, compared with memcmp(3);
// the identifiers of elements without a type are handed on as RawSample's views of libxml2's bytes are): kept.

/// The names an Apple Health export uses that `AppleHealthReader` acts on: the attributes it
/// reads, the top-level elements it counts, and HealthKit's identifiers for the elements that
/// carry no type attribute.
enum ExportVocabulary {
    /// The attributes the reader uses; every other is `other`.
    enum Attribute {
        case type, value, unit, sourceName, sourceVersion, device, creationDate, startDate, endDate
        case workoutActivityType, dateComponents, activeEnergyBurned, activeEnergyBurnedUnit
        case identifier, receivedDate, dateIssued, other
    }

    /// The attribute `name` (a NUL-terminated name from libxml2), told by its bytes without making a String.
    @inline(__always)
    static func attribute(_ name: UnsafePointer<UInt8>) -> Attribute {
        func equals(_ literal: StaticString) -> Bool {
            literal.withUTF8Buffer { text in
                memcmp(name, text.baseAddress!, text.count) == 0 && name[text.count] == 0
            }
        }
        switch name[0] {
        case UInt8(ascii: "t"): return equals("type") ? .type : .other
        case UInt8(ascii: "v"): return equals("value") ? .value : .other
        case UInt8(ascii: "u"): return equals("unit") ? .unit : .other
        case UInt8(ascii: "s"):
            if equals("startDate") { return .startDate }
            if equals("sourceName") { return .sourceName }
            if equals("sourceVersion") { return .sourceVersion }
            return .other
        case UInt8(ascii: "e"): return equals("endDate") ? .endDate : .other
        case UInt8(ascii: "d"):
            if equals("device") { return .device }
            if equals("dateComponents") { return .dateComponents }
            if equals("dateIssued") { return .dateIssued }
            return .other
        case UInt8(ascii: "c"): return equals("creationDate") ? .creationDate : .other
        case UInt8(ascii: "w"): return equals("workoutActivityType") ? .workoutActivityType : .other
        case UInt8(ascii: "a"):
            if equals("activeEnergyBurned") { return .activeEnergyBurned }
            if equals("activeEnergyBurnedUnit") { return .activeEnergyBurnedUnit }
            return .other
        case UInt8(ascii: "i"): return equals("identifier") ? .identifier : .other
        case UInt8(ascii: "r"): return equals("receivedDate") ? .receivedDate : .other
        default: return .other
        }
    }

    /// The top-level elements that are counted.
    enum Element { case record, correlation, workout, activitySummary, clinicalRecord, audiogram, visionPrescription }

    /// The identifiers given to elements that carry no type attribute (HealthKit's own names).
    static var workoutType: UnsafeBufferPointer<UInt8> { staticBytes("HKWorkoutTypeIdentifier") }
    static var activitySummaryType: UnsafeBufferPointer<UInt8> { staticBytes("HKActivitySummaryTypeIdentifier") }
    static var visionPrescriptionType: UnsafeBufferPointer<UInt8> { staticBytes("HKVisionPrescriptionTypeIdentifier") }

    private static func staticBytes(_ text: StaticString) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }
}
