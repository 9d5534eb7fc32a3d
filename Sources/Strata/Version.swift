public let strataVersion = "0.2.0"
