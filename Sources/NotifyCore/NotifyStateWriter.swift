import Foundation
import VitalsKit

/// The monitors' tracks written by hand, the rest of the state by JSONEncoder. The tracks are
/// nearly all of the file (2.6 MB of 2.7 for 1,000 monitors seen from 10 places), and
/// JSONEncoder took about 90 ms to write them: 70% of a server's CPU when its follower's notify
/// saved after each stored batch. Written here, in the keys and types the synthesized `Decodable`
/// reads (absent optionals left out, as `encodeIfPresent` does; maps in key order, as
/// `.sortedKeys` does), so `load` is unchanged and a state written either way reads the same
/// (NotifyStateWriterTests holds the two to each other).
enum NotifyStateWriter {
    /// Tells `NotifyState.encode(to:)` to leave the monitors out: `encode` adds them itself.
    static let monitorsApart = CodingUserInfoKey(rawValue: "vitals.notify.monitorsApart")!

    /// The state's JSON, with a final newline.
    static func encode(_ state: NotifyState) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.userInfo[monitorsApart] = true
        var bytes = Array(try encoder.encode(state))
        guard bytes.last == UInt8(ascii: "}") else { throw ToolError("the state did not encode as an object") }
        bytes.removeLast()
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        JSONText.appendLiteral(#""monitors":"#, to: &bytes)
        bytes.reserveCapacity(bytes.count + state.monitors.count * 320)
        appendTracks(state.monitors, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
        return bytes
    }

    static func appendTracks(_ tracks: [String: MonitorTrack], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, key) in tracks.keys.sorted().enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendTrack(tracks[key]!, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    static func appendTrack(_ track: MonitorTrack, to out: inout [UInt8]) {
        var object = JSONObjectBuilder(capacity: 320)
        object.string("name", track.name)
        object.string("confirmed", track.confirmed)
        object.int("lastAt", Int(track.lastAt))
        object.int("failStreak", track.failStreak)
        object.int("badStreak", track.badStreak)
        object.int("upStreak", track.upStreak)
        object.int("notFailingStreak", track.notFailingStreak)
        // Absent optionals are left out, as the synthesized encoding leaves them out.
        if let value = track.failStart { object.int("failStart", Int(value)) }
        if let value = track.badStart { object.int("badStart", Int(value)) }
        if let value = track.since { object.int("since", Int(value)) }
        if let value = track.endedSince { object.int("endedSince", Int(value)) }
        if let value = track.message { object.string("message", value) }
        if let value = track.reason { object.string("reason", value) }
        if let value = track.target { object.string("target", value) }
        if let value = track.monitorID { object.int("monitorID", value) }
        if let places = track.places { object.nested("places") { appendTracks(places, to: &$0) } }
        if let value = track.settleUntil { object.int("settleUntil", Int(value)) }
        if let value = track.intervalMs { object.int("intervalMs", Int(value)) }
        if let value = track.kind { object.string("kind", value) }
        if let value = track.dependsOn { object.value("dependsOn", .array(value.map { .string($0) })) }
        if let value = track.checks { object.nested("checks") { appendChecks(value, to: &$0) } }
        if let value = track.endedChecks { object.nested("endedChecks") { appendChecks(value, to: &$0) } }
        out.append(contentsOf: object.finish())
    }

    private static func appendChecks(_ checks: EpisodeChecks, to out: inout [UInt8]) {
        JSONText.appendLiteral(#"{"failed":"#, to: &out)
        JSONText.appendInt(checks.failed, to: &out)
        JSONText.appendLiteral(#","notUp":"#, to: &out)
        JSONText.appendInt(checks.notUp, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}
