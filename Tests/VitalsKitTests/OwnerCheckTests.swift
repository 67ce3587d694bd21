import Foundation
import Testing

@testable import VitalsKit

@Suite("Owner and mode checks")
struct OwnerCheckTests {
    /// A status with only the owner and mode set, as stat(2) would give for them.
    private func status(uid: uid_t, mode: mode_t) -> stat {
        var info = stat()
        info.st_uid = uid
        info.st_mode = S_IFREG | mode
        return info
    }

    @Test("this user's file passes unless its mode has a forbidden bit; the refusal carries the permission bits")
    func modes() {
        let me = geteuid()
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o600), forbidding: 0o077) == nil)
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o644), forbidding: 0o022) == nil, "readable is not writable")
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o644), forbidding: 0o077) == .openMode(0o644))
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o620), forbidding: 0o022) == .openMode(0o620), "group write")
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o602), forbidding: 0o022) == .openMode(0o602), "others' write")
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o710), forbidding: 0o027) == nil, "the group may enter")
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o711), forbidding: 0o027) == .openMode(0o711))
        // The special bits are kept for the message, never counted as forbidden.
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o1777), forbidding: 0o022) == .openMode(0o1777))
        #expect(OwnerCheck.refusal(of: status(uid: me, mode: 0o2700), forbidding: 0o077) == nil)
        #expect(OwnerCheck.octal(0o644) == "0644" && OwnerCheck.octal(0o1777) == "01777" && OwnerCheck.octal(0) == "00")
    }

    @Test("another user's file is refused whatever its mode; root's only when root may not own it")
    func owners() {
        let me = geteuid()
        let other: uid_t = me == 65534 ? 65533 : 65534
        #expect(OwnerCheck.refusal(of: status(uid: other, mode: 0o600), forbidding: 0o077) == .foreignOwner(other))
        #expect(OwnerCheck.refusal(of: status(uid: other, mode: 0o666), forbidding: 0o022) == .foreignOwner(other), "the owner first")
        #expect(OwnerCheck.refusal(of: status(uid: 0, mode: 0o600), forbidding: 0o077) == nil)
        #expect(OwnerCheck.refusal(of: status(uid: 0, mode: 0o644), forbidding: 0o022) == nil)
        let rootsFile = OwnerCheck.refusal(of: status(uid: 0, mode: 0o700), forbidding: 0o022, rootMayOwn: false)
        #expect(rootsFile == (me == 0 ? nil : .foreignOwner(0)), "root's own spool is root's; another user's may not be")
    }
}
