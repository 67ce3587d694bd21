import DetectAnomalyCore

DetectAnomalyCommand.main()
