import StoreSamplesCore
StoreSamplesCommand.main()
