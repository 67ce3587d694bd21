import ProbeHTTPCore

ProbeHTTPCommand.main()
