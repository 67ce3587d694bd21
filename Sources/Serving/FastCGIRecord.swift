/// The FastCGI wire format (FastCGI Specification 1.0, §3 and §8): 8-byte record headers, the
/// name-value pairs of PARAMS, and the records a responder writes back. Pure functions over
/// bytes, so the codec is tested without a socket.
enum FastCGI {
    /// The protocol version of every record.
    static let version: UInt8 = 1
    /// The most content one record can carry.
    static let maxContent = 65_535
    /// The content written per STDOUT record: the largest multiple of 8 that fits, so no padding.
    static let chunk = 65_528

    /// Record types (§8).
    enum RecordType: UInt8 {
        case beginRequest = 1
        case abortRequest
        case endRequest
        case params
        case stdin
        case stdout
        case stderr
        case data
        case getValues
        case getValuesResult
        case unknownType
    }

    /// BEGIN_REQUEST's role for a responder (the only role served).
    static let responderRole: UInt16 = 1
    /// BEGIN_REQUEST's flag: keep the connection open after the request.
    static let keepConnectionFlag: UInt8 = 1

    /// END_REQUEST's protocol status.
    enum ProtocolStatus: UInt8 {
        case requestComplete = 0
        case cantMultiplex
        case overloaded
        case unknownRole
    }

    /// A record header: type, request id, content and padding lengths.
    struct Header: Equatable {
        var type: UInt8
        var requestID: UInt16
        var contentLength: Int
        var paddingLength: Int

        /// The header at the start of `bytes` (8 bytes or more), or nil when the version is not 1.
        init?(_ bytes: ArraySlice<UInt8>) {
            let at = bytes.startIndex
            guard bytes.count >= 8, bytes[at] == FastCGI.version else { return nil }
            type = bytes[at + 1]
            requestID = UInt16(bytes[at + 2]) << 8 | UInt16(bytes[at + 3])
            contentLength = Int(bytes[at + 4]) << 8 | Int(bytes[at + 5])
            paddingLength = Int(bytes[at + 6])
        }

        init(type: UInt8, requestID: UInt16, contentLength: Int, paddingLength: Int) {
            self.type = type
            self.requestID = requestID
            self.contentLength = contentLength
            self.paddingLength = paddingLength
        }

        /// The whole record's length: header, content and padding.
        var recordLength: Int { 8 + contentLength + paddingLength }
    }

    /// Appends one record of `type` carrying `content` (at most `maxContent` bytes), padded to a
    /// multiple of 8 as the specification recommends.
    static func appendRecord(_ type: RecordType, requestID: UInt16, _ content: ArraySlice<UInt8>, to out: inout [UInt8]) {
        precondition(content.count <= maxContent)
        let padding = (8 - content.count % 8) % 8
        out += [
            version, type.rawValue, UInt8(requestID >> 8), UInt8(requestID & 0xFF),
            UInt8(content.count >> 8), UInt8(content.count & 0xFF), UInt8(padding), 0,
        ]
        out.append(contentsOf: content)
        if padding > 0 { out.append(contentsOf: repeatElement(0, count: padding)) }
    }

    /// Appends `bytes` as a stream of `type` records (none for empty bytes; the stream's closing
    /// empty record is the caller's).
    static func appendStream(_ type: RecordType, requestID: UInt16, _ bytes: [UInt8], to out: inout [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            appendRecord(type, requestID: requestID, bytes[offset..<end], to: &out)
            offset = end
        }
    }

    /// Appends an END_REQUEST record.
    static func appendEndRequest(
        requestID: UInt16, appStatus: UInt32 = 0, _ status: ProtocolStatus = .requestComplete, to out: inout [UInt8]
    ) {
        let body: [UInt8] = [
            UInt8(appStatus >> 24), UInt8((appStatus >> 16) & 0xFF), UInt8((appStatus >> 8) & 0xFF), UInt8(appStatus & 0xFF),
            status.rawValue, 0, 0, 0,
        ]
        appendRecord(.endRequest, requestID: requestID, body[...], to: &out)
    }

    /// The whole answer to request `requestID`: `head` and `body` as STDOUT records, the empty
    /// STDOUT record that ends the stream, and END_REQUEST.
    static func response(requestID: UInt16, head: [UInt8], body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(head.count + body.count + 64 + (head.count + body.count) / chunk * 8)
        // The head goes in the first record with as much of the body as fits.
        var first = head
        let taken = min(body.count, max(0, chunk - head.count))
        first.append(contentsOf: body[0..<taken])
        appendStream(.stdout, requestID: requestID, first, to: &out)
        if taken < body.count { appendStream(.stdout, requestID: requestID, Array(body[taken...]), to: &out) }
        appendRecord(.stdout, requestID: requestID, [], to: &out)
        appendEndRequest(requestID: requestID, to: &out)
        return out
    }

    /// Reads name-value pairs (§3.4): each length is one byte below 128, else four bytes with the
    /// top bit set. Nil when a length runs past the end.
    static func nameValuePairs(_ bytes: [UInt8]) -> [(name: [UInt8], value: [UInt8])]? {
        var pairs: [(name: [UInt8], value: [UInt8])] = []
        var index = 0
        func length() -> Int? {
            guard index < bytes.count else { return nil }
            if bytes[index] & 0x80 == 0 {
                index += 1
                return Int(bytes[index - 1])
            }
            guard index + 4 <= bytes.count else { return nil }
            let value = Int(bytes[index] & 0x7F) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            index += 4
            return value
        }
        while index < bytes.count {
            guard let nameLength = length(), let valueLength = length(),
                nameLength <= bytes.count - index, valueLength <= bytes.count - index - nameLength
            else { return nil }
            let name = Array(bytes[index..<(index + nameLength)])
            index += nameLength
            let value = Array(bytes[index..<(index + valueLength)])
            index += valueLength
            pairs.append((name, value))
        }
        return pairs
    }

    /// Encodes name-value pairs (for GET_VALUES_RESULT, and for tests that speak FastCGI).
    static func encodePairs(_ pairs: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        func length(_ count: Int) {
            if count < 128 {
                out.append(UInt8(count))
            } else {
                out += [UInt8((count >> 24) & 0x7F) | 0x80, UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            }
        }
        for (name, value) in pairs {
            length(name.utf8.count)
            length(value.utf8.count)
            out += Array(name.utf8) + Array(value.utf8)
        }
        return out
    }
}
