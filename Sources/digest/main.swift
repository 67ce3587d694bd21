import DigestCore

DigestCommand.main()
