import SnapshotDeltaCore
SnapshotDeltaCommand.main()
