import HealthSyncCore

HealthSyncCommand.main()
