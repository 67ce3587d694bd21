import CompletionScripts
import DetectAnomalyCore
import DigestCore
import HealthSyncCore
import NotifyCore
import ProbeHTTPCore
import ProbePingCore
import SnapshotDeltaCore
import StoreSamplesCore

CompletionsCommand.main([
    ProbeHTTPCommand.spec, ProbePingCommand.spec, DetectAnomalyCommand.spec, StoreSamplesCommand.spec,
    DigestCommand.spec, NotifyCommand.spec, SnapshotDeltaCommand.spec, HealthSyncCommand.spec,
])
