import NotifyCore; NotifyCommand.main()
