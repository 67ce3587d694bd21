import ProbePingCore
ProbePingCommand.main()
