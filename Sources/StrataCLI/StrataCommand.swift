import ArgumentParser

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Strata: a Core Data–style persistence engine on SQLite.",
        subcommands: [Demo.self]
    )
}
