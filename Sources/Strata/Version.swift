public let strataVersion = "0.1.0"
