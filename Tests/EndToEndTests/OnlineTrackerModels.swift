import Foundation

// The OnlineTracker iOS client's models, field by field and type by type, as its API
// specification lists them (seed 001). Our views must decode into these unchanged.

struct OTStatusOverview: Decodable {
    let totalMonitors: Int
    let monitorsUp: Int
    let monitorsDown: Int
    let monitorsDegraded: Int
    let monitorsUnknown: Int
    let agentsTotal: Int
    let agentsPending: Int
    let overallUptime24h: Double
    let monitors: [OTMonitorSummary]
    enum CodingKeys: String, CodingKey {
        case totalMonitors = "total_monitors", monitorsUp = "monitors_up", monitorsDown = "monitors_down"
        case monitorsDegraded = "monitors_degraded", monitorsUnknown = "monitors_unknown", agentsTotal = "agents_total"
        case agentsPending = "agents_pending", overallUptime24h = "overall_uptime_24h", monitors
    }
}

struct OTMonitorSummary: Decodable {
    let id: Int
    let name: String
    let type: OTMonitorType
    let status: OTMonitorStatus
    let uptime24h: Double
    let lastCheck: String?
    enum CodingKeys: String, CodingKey { case id, name, type, status, uptime24h = "uptime_24h", lastCheck = "last_check" }
}

struct OTMonitor: Decodable {
    let id: Int
    let agentId: String?
    let type: OTMonitorType
    let name: String
    let description: String?
    let target: String
    let config: OTMonitorConfig?
    let checkInterval: Int
    let enabled: Bool
    let createdAt: String
    let latestStatus: OTLatestStatus?
    enum CodingKeys: String, CodingKey {
        case id, agentId = "agent_id", type, name, description, target, config, checkInterval = "check_interval"
        case enabled, createdAt = "created_at", latestStatus = "latest_status"
    }
}

struct OTMonitorConfig: Decodable {
    let expectedStatus: Int?
    let expectedBodyHash: String?
    let expectedContent: String?
    let timeoutSeconds: Int?
    let pingCount: Int?
    let pingOkThresholdMs: Int?
    let pingDegradedThresholdMs: Int?
    let httpOkThresholdMs: Int?
    let httpDegradedThresholdMs: Int?
    let sslOkThresholdDays: Int?
    let sslWarningThresholdDays: Int?
    enum CodingKeys: String, CodingKey {
        case expectedStatus = "expected_status", expectedBodyHash = "expected_body_hash", expectedContent = "expected_content"
        case timeoutSeconds = "timeout_seconds", pingCount = "ping_count", pingOkThresholdMs = "ping_ok_threshold_ms"
        case pingDegradedThresholdMs = "ping_degraded_threshold_ms", httpOkThresholdMs = "http_ok_threshold_ms"
        case httpDegradedThresholdMs = "http_degraded_threshold_ms", sslOkThresholdDays = "ssl_ok_threshold_days"
        case sslWarningThresholdDays = "ssl_warning_threshold_days"
    }
}

struct OTLatestStatus: Decodable {
    let status: OTMonitorStatus
    let responseTimeMs: Int?
    let checkedAt: String
    let details: String?
    let sslExpiryDays: Int?
    enum CodingKeys: String, CodingKey {
        case status, responseTimeMs = "response_time_ms", checkedAt = "checked_at", details, sslExpiryDays = "ssl_expiry_days"
    }
}

struct OTStatusHistoryPoint: Decodable {
    let timestamp: String
    let status: OTMonitorStatus
    let uptimePercent: Double
    let responseTimeAvgMs: Int?
    enum CodingKeys: String, CodingKey {
        case timestamp, status, uptimePercent = "uptime_percent", responseTimeAvgMs = "response_time_avg_ms"
    }
}

struct OTResultsPage: Decodable {
    let items: [OTMonitorResult]
    let total: Int
    let page: Int
    let perPage: Int
    let totalPages: Int
    enum CodingKeys: String, CodingKey { case items, total, page, perPage = "per_page", totalPages = "total_pages" }
}

struct OTMonitorResult: Decodable {
    let id: Int
    let checkedAt: String
    let status: OTMonitorStatus
    let responseTimeMs: Int?
    let details: String?
    let sslExpiryDays: Int?
    enum CodingKeys: String, CodingKey {
        case id, checkedAt = "checked_at", status, responseTimeMs = "response_time_ms", details, sslExpiryDays = "ssl_expiry_days"
    }
}

struct OTAgent: Decodable {
    let id: String
    let name: String?
    let status: OTAgentStatus
    let lastSeen: String?
    let createdAt: String
    let monitorCount: Int
    enum CodingKeys: String, CodingKey {
        case id, name, status, lastSeen = "last_seen", createdAt = "created_at", monitorCount = "monitor_count"
    }
}

enum OTMonitorType: String, Decodable { case ping, http, https, ssl }
enum OTMonitorStatus: String, Decodable { case up, down, degraded, unknown }
enum OTAgentStatus: String, Decodable { case pending, approved, rejected }

func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(text.utf8))
}
