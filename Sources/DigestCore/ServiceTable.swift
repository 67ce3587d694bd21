import VitalsKit

/// Every monitor seen in the input, by index, with its places and what each place's newest
/// sample said about it.
///
/// Monitor ids are interned from the raw bytes of each line (an open-addressing table keyed by
/// the bytes, no `String` per line); names and the newest samples' reasons and messages are kept
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
        /// Its places (within `--now`) and what judging its samples by the place rule keeps.
        var places = MonitorPlaces()
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
    func intern<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
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
    func noteName<Name: Collection<UInt8>>(_ service: UInt32, at: Int64, name: Name) {
        let index = Int(service)
        guard at >= entries[index].nameAt else { return }
        entries[index].nameAt = at
        if !entries[index].name.elementsEqual(name) {
            entries[index].name = Array(name)
        }
    }

    /// The index of the place `agent` (empty: local) among the monitor's, added when new.
    func place<Agent: Collection<UInt8>>(_ service: UInt32, agent: Agent) -> Int { entries[Int(service)].places.index(of: agent) }

    /// Whether a sample at `at` is the newest of its place so far (ties go to the later line).
    func isLatest(_ service: UInt32, place: Int, at: Int64) -> Bool { at >= entries[Int(service)].places.places[place].latestAt }

    /// Records the newest sample of a place: its status, reason and message.
    func noteLatest<Reason: Collection<UInt8>>(
        _ service: UInt32, place: Int, at: Int64, status: SampleStatus, reason: Reason?, message: [UInt8]
    ) {
        entries[Int(service)].places.noteLatest(place, at: at, status: status, reason: reason, message: message)
    }

    /// The place `place` of a monitor as the rule spells it: its agent, '' for local.
    func placeKey(_ service: UInt32, _ place: Int) -> String { entries[Int(service)].places.places[place].key }

    /// The monitor id as text.
    func monitor(_ service: Int) -> String { String(decoding: entries[service].monitor, as: UTF8.self) }
    /// The display name: the newest name, or the monitor id.
    func name(_ service: Int) -> String {
        entries[service].name.isEmpty ? monitor(service) : String(decoding: entries[service].name, as: UTF8.self)
    }
}
