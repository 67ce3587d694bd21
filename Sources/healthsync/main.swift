import HealthSyncCore
HealthSyncCommand.main()
