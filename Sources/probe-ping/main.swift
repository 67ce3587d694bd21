import ProbePingCore

ProbePingCommand.main()
