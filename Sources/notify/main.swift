import NotifyCore

NotifyCommand.main()
