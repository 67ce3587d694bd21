import StoreSamplesCore

StoreSamplesCommand.main()
