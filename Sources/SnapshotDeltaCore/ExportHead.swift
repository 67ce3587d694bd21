/// The prolog of an `export.xml`, read before libxml2 sees a byte: the document type
/// declaration is blanked out (its newlines kept, so line numbers stay true) and the
/// `HealthKit Export Version` its comment names is kept.
///
/// Every real export carries an internal DTD; iOS 16 exports (version 12) carry a malformed
/// one (an ATTLIST missing its `>`, stray declarations). The records never need it, entity
/// declarations in it are a risk, and a conforming parser must reject the malformed ones,
/// so it is removed rather than parsed: the internal subset ends at the first `]` followed by
/// optional blanks and `>`, outside comments.
enum ExportHead {
    /// What scanning the bytes read so far found.
    enum Outcome: Equatable {
        /// The prolog does not end within these bytes: read more.
        case needMore
        /// The prolog ends here: `bytes` (the input with the declaration blanked) go to the parser.
        case done(bytes: [UInt8], exportVersion: String?)
    }

    /// Scans the start of the input. With `atEnd`, whatever was read is all there is.
    static func scan(_ input: [UInt8], atEnd: Bool) -> Outcome {
        var bytes = input
        var version: String?
        var index = 0
        let count = bytes.count
        if count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        func starts(_ text: StaticString, at position: Int) -> Bool {
            let length = text.utf8CodeUnitCount
            guard position + length <= count else { return false }
            return text.withUTF8Buffer { pattern in
                for offset in 0..<length where bytes[position + offset] != pattern[offset] { return false }
                return true
            }
        }
        func find(_ text: StaticString, from position: Int) -> Int? {
            let length = text.utf8CodeUnitCount
            var at = position
            while at + length <= count {
                if starts(text, at: at) { return at }
                at += 1
            }
            return nil
        }
        func noteVersion(_ start: Int, _ end: Int) {
            let comment = String(decoding: bytes[start..<end], as: UTF8.self)
            if let range = comment.range(of: "HealthKit Export Version:") {
                let rest = comment[range.upperBound...].trimmingCharacters(in: .whitespaces)
                if !rest.isEmpty { version = rest }
            }
        }
        while true {
            while index < count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
            // Too little to tell what comes next: wait for more, unless there is no more.
            if count - index < 9, !atEnd { return .needMore }
            if index >= count || bytes[index] != UInt8(ascii: "<") { break }
            if starts("<?", at: index) {
                guard let end = find("?>", from: index + 2) else {
                    if atEnd { break }
                    return .needMore
                }
                index = end + 2
                continue
            }
            if starts("<!--", at: index) {
                guard let end = find("-->", from: index + 4) else {
                    if atEnd { break }
                    return .needMore
                }
                noteVersion(index + 4, end)
                index = end + 3
                continue
            }
            guard starts("<!DOCTYPE", at: index) else { break }
            // The declaration: up to '>' when there is no internal subset, else past "]" blanks ">".
            var cursor = index + 9
            var quote: UInt8 = 0
            var subsetStart: Int?
            while cursor < count {
                let byte = bytes[cursor]
                if quote != 0 {
                    if byte == quote { quote = 0 }
                } else if byte == 0x22 || byte == 0x27 {
                    quote = byte
                } else if byte == UInt8(ascii: "[") {
                    subsetStart = cursor + 1
                    break
                } else if byte == UInt8(ascii: ">") {
                    break
                }
                cursor += 1
            }
            guard cursor < count else {
                if atEnd { break }
                return .needMore
            }
            var end: Int?
            if let subsetStart {
                cursor = subsetStart
                while cursor < count {
                    if starts("<!--", at: cursor) {
                        guard let close = find("-->", from: cursor + 4) else {
                            cursor = count
                            break
                        }
                        noteVersion(cursor + 4, close)
                        cursor = close + 3
                        continue
                    }
                    if bytes[cursor] == UInt8(ascii: "]") {
                        var after = cursor + 1
                        while after < count, bytes[after] == 0x20 || bytes[after] == 0x0A || bytes[after] == 0x0D || bytes[after] == 0x09 {
                            after += 1
                        }
                        if after < count, bytes[after] == UInt8(ascii: ">") {
                            end = after + 1
                            break
                        }
                    }
                    cursor += 1
                }
            } else {
                end = cursor + 1
            }
            guard let end else {
                if atEnd { break }  // unterminated: libxml2 will say so
                return .needMore
            }
            for position in index..<end where bytes[position] != 0x0A { bytes[position] = 0x20 }
            index = end
        }
        return .done(bytes: bytes, exportVersion: version)
    }
}
