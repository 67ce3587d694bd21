import DetectAnomalyCore
DetectAnomalyCommand.main()
