import FixtureServer
FixtureServerCommand.main()
