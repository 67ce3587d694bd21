import ProbeHTTPCore
ProbeHTTPCommand.main()
