internal import CXML2

// Unsafe pointers here are C interop (libxml2's SAX callbacks hand over names and attributes as raw pointers): kept.

/// What an `XMLPushParser` tells as it reads. Names and values are libxml2's own bytes, valid
/// only during the call: no String is made for them unless the handler makes one.
public protocol XMLStreamHandler: AnyObject {
    /// An element starts: its local name (NUL-terminated UTF-8) and its attributes, five
    /// pointers each as libxml2's SAX2 gives them (local name, prefix, namespace URI, the
    /// value's first byte, one past its last byte).
    func startElement(_ name: UnsafePointer<UInt8>, attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<UInt8>?>?)
    /// The element started last ends.
    func endElement()
    /// An error (libxml2's level error or fatal; warnings are not told), with its line.
    func error(_ message: String, line: Int)
}

/// A streaming XML parser: libxml2's SAX2 push parser, fed chunk by chunk, with constant memory
/// whatever the document's size. No network, no DTD loading, no entity substitution. The only
/// importer of CXML2: every libxml2 call of the suite is in this file.
public final class XMLPushParser {
    private let context: xmlParserCtxtPtr
    private var handlerBox: Unmanaged<HandlerBox>

    /// The handler, as the callbacks' context holds it: unowned, with no reference counting on a
    /// callback (a weak reference cost 1.4% more instructions on a take of 100,000 records), so
    /// the handler must outlive the parser (it is the one that makes it and keeps it).
    private final class HandlerBox {
        unowned(unsafe) let handler: XMLStreamHandler
        init(_ handler: XMLStreamHandler) { self.handler = handler }
    }

    /// A parser telling `handler` (which must outlive it), given the document's first bytes:
    /// libxml2 takes at most four of `start` here, to tell the encoding; feed the rest from there
    /// (`consumed`). `source` is the name errors give. Nil when libxml2 cannot make a parser.
    public init?(handler: XMLStreamHandler, start: UnsafeBufferPointer<UInt8>, source: String) {
        xmlInitParser()
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = { context, name, _, _, _, _, attributeCount, _, attributes in
            guard let context, let name else { return }
            Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue().handler
                .startElement(name, attributeCount: Int(attributeCount), attributes: attributes)
        }
        sax.endElementNs = { context, _, _, _ in
            guard let context else { return }
            Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue().handler.endElement()
        }
        sax.serror = { context, error in
            guard let context, let error, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
            var text = error.pointee.message.map { String(cString: $0) } ?? "XML error"
            while text.last == "\n" || text.last == " " { text.removeLast() }
            Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue().handler.error(text, line: Int(error.pointee.line))
        }
        let box = Unmanaged.passRetained(HandlerBox(handler))
        let made = start.withMemoryRebound(to: CChar.self) { chars in
            xmlCreatePushParserCtxt(&sax, box.toOpaque(), chars.baseAddress, Int32(min(chars.count, 4)), source)
        }
        guard let made else {
            box.release()
            return nil
        }
        context = made
        handlerBox = box
        // No network, no DTD loading, no entity substitution: the defaults, stated.
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue))
        consumed = min(start.count, 4)
    }

    /// How many bytes of `start` the parser took when it was made.
    public let consumed: Int

    deinit {
        xmlFreeParserCtxt(context)
        handlerBox.release()
    }

    /// Parses `chunk`; false once libxml2 reports an error or was stopped.
    public func feed(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        var offset = 0
        // xmlParseChunk takes an int length: hand over at most 1 GiB at a time.
        while offset < chunk.count {
            let length = min(chunk.count - offset, 1 << 30)
            let code = chunk.withMemoryRebound(to: CChar.self) { chars in
                xmlParseChunk(context, chars.baseAddress! + offset, Int32(length), 0)
            }
            if code != 0 { return false }
            offset += length
        }
        return true
    }

    /// Tells the parser the document ended (it checks that every element was closed).
    public func end() {
        _ = xmlParseChunk(context, nil, 0, 1)
    }

    /// Stops parsing: no more callbacks, every later `feed` fails.
    public func stop() {
        xmlStopParser(context)
    }

    /// The line being read.
    public var line: Int { Int(xmlSAX2GetLineNumber(context)) }

    /// Whether the document read so far is well-formed.
    public var isWellFormed: Bool { context.pointee.wellFormed != 0 }
}
