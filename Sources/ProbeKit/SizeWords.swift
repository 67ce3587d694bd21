/// Sizes in words: `1 MiB`, `512 KiB`, `300 bytes`.
public enum SizeWords {
    /// A short description of `bytes`.
    public static func describe(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
