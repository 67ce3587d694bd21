import SnapshotDeltaCore

SnapshotDeltaCommand.main()
