import VitalsKit

/// Every monitor seen in the input, by index, with what the newest sample said about it.
///
/// Monitor ids are interned from the raw bytes of each line (an open-addressing table keyed by
/// the bytes, no `String` per line); names and the newest sample's reason and message are kept
/// as bytes and turned into strings once, at the end.
final class ServiceTable {
    /// What the table knows about one monitor.
    struct Entry {
        /// The monitor id.
        var monitor: [UInt8]
        /// The human name from the newest sample that had one.
        var name: [UInt8] = []
        /// When that name was seen (its sample's `at`), to keep the newest.
        var nameAt = Int64.min
        /// The newest sample's `at` (within `--now`), its reason and its message.
        var latestAt = Int64.min
        /// The newest sample's reason (raw bytes of the string), empty when null.
        var latestReason: [UInt8] = []
        /// The newest sample's message, as a decoded string's bytes.
        var latestMessage: [UInt8] = []
    }

    /// The monitors in order of first appearance.
    private(set) var entries: [Entry] = []
    private var slots: [Int32]
    private var hashes: [UInt64] = []

    /// Creates an empty table.
    init() {
        slots = [Int32](repeating: -1, count: 1024)
    }

    /// The number of monitors.
    var count: Int { entries.count }

    /// The index of the monitor whose id is `bytes`, adding it when new.
    func intern(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let index = slots[slot]
            if index < 0 { break }
            if hashes[Int(index)] == hash, entries[Int(index)].monitor.elementsEqual(bytes) {
                return UInt32(index)
            }
            slot = (slot + 1) & mask
        }
        let index = Int32(entries.count)
        entries.append(Entry(monitor: Array(bytes)))
        hashes.append(hash)
        slots[slot] = index
        if entries.count * 2 > slots.count { rehash() }
        return UInt32(index)
    }

    private func rehash() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        let mask = slots.count - 1
        for (index, hash) in hashes.enumerated() {
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(index)
        }
    }

    /// Records a sample's name when it is the newest seen with a name.
    func noteName(_ service: UInt32, at: Int64, name: UnsafeBufferPointer<UInt8>) {
        let index = Int(service)
        guard at >= entries[index].nameAt else { return }
        entries[index].nameAt = at
        if !entries[index].name.elementsEqual(name) {
            entries[index].name = Array(name)
        }
    }

    /// Whether a sample at `at` is the newest so far (ties go to the later line).
    func isLatest(_ service: UInt32, at: Int64) -> Bool { at >= entries[Int(service)].latestAt }

    /// Records the newest sample's reason and message.
    func noteLatest(_ service: UInt32, at: Int64, reason: UnsafeBufferPointer<UInt8>?, message: [UInt8]) {
        let index = Int(service)
        entries[index].latestAt = at
        if let reason {
            if !entries[index].latestReason.elementsEqual(reason) { entries[index].latestReason = Array(reason) }
        } else {
            entries[index].latestReason.removeAll(keepingCapacity: true)
        }
        if entries[index].latestMessage != message { entries[index].latestMessage = message }
    }

    /// The monitor id as text.
    func monitor(_ service: Int) -> String { String(decoding: entries[service].monitor, as: UTF8.self) }
    /// The display name: the newest name, or the monitor id.
    func name(_ service: Int) -> String {
        entries[service].name.isEmpty ? monitor(service) : String(decoding: entries[service].name, as: UTF8.self)
    }
}
