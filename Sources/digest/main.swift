import DigestCore
DigestCommand.main()
