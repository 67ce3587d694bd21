import FixtureServer

FixtureServerCommand.main()
