#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one rule behind every refusal of a file or folder that another user could read or change:
/// an agent's token file, healthsync's pairing and key, a spool folder, the responder's socket
/// folder, a follower's cursor folder. Each caller names the bits it forbids and words its own
/// error (what the file is for, and the chmod that mends it); the rule itself lives here.
///
/// None of these checks creates anything: they refuse what they were given, so a file made by
/// someone else, or opened up later, is never trusted.
public enum OwnerCheck {
    /// Why a file or folder is refused.
    public enum Refusal: Equatable, Sendable {
        /// Another user owns it: whatever its mode, they can change it (or chmod it).
        case foreignOwner(uid_t)
        /// Its mode gives others (or its group) some of the forbidden bits; the whole permission
        /// bits, setuid, setgid and sticky included, for the message.
        case openMode(mode_t)
    }

    /// Nil when `info` belongs to this user (or to root, when `rootMayOwn`: a file root made for
    /// this user is as trusted as root itself) and its mode has none of the `forbidding` bits,
    /// such as 0o022 (others may not write) or 0o077 (others may do nothing).
    public static func refusal(of info: stat, forbidding: mode_t, rootMayOwn: Bool = true) -> Refusal? {
        let me = geteuid()
        guard info.st_uid == me || (rootMayOwn && info.st_uid == 0) else { return .foreignOwner(info.st_uid) }
        let mode = info.st_mode & 0o7777
        return mode & forbidding == 0 ? nil : .openMode(mode)
    }

    /// A mode as chmod(1) takes it, with its leading zero: "0644", "01777".
    public static func octal(_ mode: mode_t) -> String {
        "0" + String(mode, radix: 8)
    }
}
