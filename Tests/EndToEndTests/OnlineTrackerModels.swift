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
        case totalMonitors = "total_monitors"
        case monitorsUp = "monitors_up"
        case monitorsDown = "monitors_down"
        case monitorsDegraded = "monitors_degraded"
        case monitorsUnknown = "monitors_unknown"
        case agentsTotal = "agents_total"
        case agentsPending = "agents_pending"
        case overallUptime24h = "overall_uptime_24h"
        case monitors
    }
}

struct OTMonitorSummary: Decodable {
    let id: Int
    let name: String
    let type: OTMonitorType
    let status: OTMonitorStatus
    let uptime24h: Double
    let lastCheck: String?
    enum CodingKeys: String, CodingKey {
        case id, name, type, status
        case uptime24h = "uptime_24h"
        case lastCheck = "last_check"
    }
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
        case id
        case agentId = "agent_id"
        case type, name, description, target, config
        case checkInterval = "check_interval"
        case enabled
        case createdAt = "created_at"
        case latestStatus = "latest_status"
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
        case expectedStatus = "expected_status"
        case expectedBodyHash = "expected_body_hash"
        case expectedContent = "expected_content"
        case timeoutSeconds = "timeout_seconds"
        case pingCount = "ping_count"
        case pingOkThresholdMs = "ping_ok_threshold_ms"
        case pingDegradedThresholdMs = "ping_degraded_threshold_ms"
        case httpOkThresholdMs = "http_ok_threshold_ms"
        case httpDegradedThresholdMs = "http_degraded_threshold_ms"
        case sslOkThresholdDays = "ssl_ok_threshold_days"
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
        case status
        case responseTimeMs = "response_time_ms"
        case checkedAt = "checked_at"
        case details
        case sslExpiryDays = "ssl_expiry_days"
    }
}

struct OTStatusHistoryPoint: Decodable {
    let timestamp: String
    let status: OTMonitorStatus
    let uptimePercent: Double
    let responseTimeAvgMs: Int?
    enum CodingKeys: String, CodingKey {
        case timestamp, status
        case uptimePercent = "uptime_percent"
        case responseTimeAvgMs = "response_time_avg_ms"
    }
}

struct OTResultsPage: Decodable {
    let items: [OTMonitorResult]
    let total: Int
    let page: Int
    let perPage: Int
    let totalPages: Int
    enum CodingKeys: String, CodingKey {
        case items, total, page
        case perPage = "per_page"
        case totalPages = "total_pages"
    }
}

struct OTMonitorResult: Decodable {
    let id: Int
    let checkedAt: String
    let status: OTMonitorStatus
    let responseTimeMs: Int?
    let details: String?
    let sslExpiryDays: Int?
    enum CodingKeys: String, CodingKey {
        case id
        case checkedAt = "checked_at"
        case status
        case responseTimeMs = "response_time_ms"
        case details
        case sslExpiryDays = "ssl_expiry_days"
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
        case id, name, status
        case lastSeen = "last_seen"
        case createdAt = "created_at"
        case monitorCount = "monitor_count"
    }
}

enum OTMonitorType: String, Decodable { case ping, http, https, ssl }
enum OTMonitorStatus: String, Decodable { case up, down, degraded, unknown }
enum OTAgentStatus: String, Decodable { case pending, approved, rejected }

func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(text.utf8))
}
