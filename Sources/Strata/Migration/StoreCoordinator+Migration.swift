public import Foundation
internal import StrataSQLite

/// Whether opening a store made by another model version may migrate it.
public enum MigrationMode: Sendable {
    /// Refuse (``StoreError/modelMismatch(path:storeVersion:storeHash:modelVersion:modelHash:)``), touching nothing.
    case none
    /// Lightweight migration inferred from the store's model (which the store carries) to the
    /// opening model. With `versions` (oldest first, ending with the opening model's version),
    /// migrates progressively through each version after the store's.
    case lightweight(versions: [Model] = [])
    /// Like ``lightweight(versions:)``, but a step from one version to the next uses the mapping
    /// model whose source and destination are those versions, when `mappings` has one.
    case mapped(versions: [Model] = [], mappings: [MappingModel])

    var allowsMigration: Bool {
        if case .none = self { return false }
        return true
    }
}

/// One step of a migration chain: inferred, or a mapping model.
enum MigrationPlanStep {
    case lightweight(LightweightMigration)
    case mapping(MappingMigration)

    var steps: [MigrationStep] {
        switch self {
        case .lightweight(let migration): migration.steps
        case .mapping(let migration): migration.model.steps
        }
    }
}

extension StoreCoordinator {
    /// The steps that opening `url` with `model` would migrate through, without writing
    /// anything (a dry run). Empty when the store is already at `model`. Throws a
    /// ``MigrationError`` for a change that can't be inferred.
    public static func plannedMigration(at url: URL, to model: Model, versions: [Model] = []) throws -> [MigrationStep] {
        try plannedMigration(at: url, to: model, mode: .lightweight(versions: versions))
    }

    /// The steps that opening `url` with `model` and `mode` would migrate through (a dry run).
    public static func plannedMigration(at url: URL, to model: Model, mode: MigrationMode) throws -> [MigrationStep] {
        guard let stored = try storedModel(path: url.path), stored.versionHash != model.versionHash else { return [] }
        return try migrationChain(from: stored, to: model, mode: mode).flatMap(\.steps)
    }

    /// The store's own model (from `strata_meta.model_json`), read-only; `nil` for a missing or empty file.
    static func storedModel(path: String) throws -> Model? {
        guard let size = FileSystemPath(path).fileSize, size > 0 else { return nil }
        var configuration = Connection.Configuration()
        configuration.readOnly = true
        do {
            let db = try Connection(path: path, configuration: configuration)
            defer { db.close() }
            let statement = try db.prepare("SELECT model_json FROM strata_meta WHERE id = 1")
            guard try statement.step() else { throw StoreError.notAStrataStore(path: path) }
            return try Model(json: Data(statement.string(at: 0).utf8))
        } catch let error as SQLiteError {
            if .SQLITE_NOTADB ~= error.code { throw StoreError.notADatabase(path: path) }
            throw StoreError(error, path: path)
        }
    }

    /// The migrations from `stored` to `model`: one step, or one per version after the store's;
    /// each a mapping model when `mode` has one for the pair, else inferred.
    static func migrationChain(from stored: Model, to model: Model, mode: MigrationMode) throws -> [MigrationPlanStep] {
        let versions: [Model], mappings: [MappingModel]
        switch mode {
        case .none: return []
        case .lightweight(let list): (versions, mappings) = (list, [])
        case .mapped(let list, let maps): (versions, mappings) = (list, maps)
        }
        func step(_ from: Model, _ to: Model) throws -> MigrationPlanStep {
            if let mapping = mappings.first(where: { $0.source.versionHash == from.versionHash && $0.destination.versionHash == to.versionHash }) {
                return .mapping(try MappingMigration(mapping))
            }
            return .lightweight(try LightweightMigration(from: from, to: to))
        }
        guard !versions.isEmpty else { return [try step(stored, model)] }
        guard let start = versions.firstIndex(where: { $0.versionHash == stored.versionHash }) else {
            throw MigrationError.unknownStoreVersion(storeVersion: stored.versionIdentifier, storeHash: stored.versionHash)
        }
        var chain: [MigrationPlanStep] = []
        var current = stored
        for next in versions[(start + 1)...] {
            chain.append(try step(current, next))
            current = next
        }
        if current.versionHash != model.versionHash { chain.append(try step(current, model)) }
        return chain
    }

    /// Migrates the store at `path` to `model` when it holds another version and `mode` allows.
    /// Every step is planned first (a refusal writes nothing). Consecutive inferred steps run in
    /// one `BEGIN IMMEDIATE … COMMIT`; a mapping step builds the new store beside the old and
    /// swaps it in. Each bumps the generation and sets a new nonce, so every section cache is
    /// rejected (`other-model`) and rebuilt. A crash leaves the store at the last version a step
    /// completed, never a mix; opening again resumes from there.
    static func migrateIfNeeded(path: String, model: Model, mode: MigrationMode, configuration: Connection.Configuration,
                                progress: (@Sendable (MigrationProgress) -> Void)? = nil) throws {
        guard mode.allowsMigration,
              let stored = try storedModel(path: path), stored.versionHash != model.versionHash else { return }
        let chain = try migrationChain(from: stored, to: model, mode: mode)
        KillPoint.hit("migration.begin")
        var index = 0
        while index < chain.count {
            if case .mapping(let mapping) = chain[index] {
                let step = index + 1, version = mapping.model.destination.versionIdentifier
                do {
                    try mapping.run(path: path, configuration: configuration, report: progress.map { report in
                        { done, total in report(MigrationProgress(step: step, stepCount: chain.count, version: version, objectsDone: done, objectsTotal: total)) }
                    })
                } catch let error as SQLiteError {
                    throw StoreError(error, path: path)
                }
                index += 1
                continue
            }
            var group: [LightweightMigration] = []
            while index < chain.count, case .lightweight(let migration) = chain[index] {
                group.append(migration)
                index += 1
            }
            do {
                let db = try Connection(path: path, configuration: configuration)
                defer { db.close() }
                try runLightweight(group, firstStep: index - group.count + 1, stepCount: chain.count, on: db, progress: progress)
            } catch let error as SQLiteError {
                throw StoreError(error, path: path)
            }
        }
    }

    /// Consecutive lightweight steps in one transaction on `db`, with one generation and nonce.
    private static func runLightweight(_ group: [LightweightMigration], firstStep: Int, stepCount: Int, on db: Connection,
                                       progress: (@Sendable (MigrationProgress) -> Void)?) throws {
        try db.transaction(.immediate) {
            let metadata = try readMetadata(db)
            let nonce = randomNonce()
            for (offset, migration) in group.enumerated() {
                let step = firstStep + offset
                try migration.run(on: db, generation: metadata.generation + 1, nonce: nonce, report: progress.map { report in
                    { done, total in
                        report(MigrationProgress(step: step, stepCount: stepCount, version: migration.destination.versionIdentifier,
                                                 objectsDone: done, objectsTotal: total))
                    }
                })
            }
        }
        KillPoint.hit("migration.committed")
    }

    /// Migrates the store open on `db` — the coordinator's own connection, so the store is opened
    /// once — when every step is lightweight. Returns `false`, having written nothing, when a step
    /// is a mapping model (it builds a new file beside the store and swaps it in, which an open
    /// connection would not see): the caller then migrates by path.
    static func migrateInPlace(_ db: Connection, path: String, model: Model, mode: MigrationMode,
                               progress: (@Sendable (MigrationProgress) -> Void)?) throws -> Bool {
        do {
            let statement = try db.prepare("SELECT model_json FROM strata_meta WHERE id = 1")
            guard try statement.step() else { throw StoreError.notAStrataStore(path: path) }
            let stored = try Model(json: Data(statement.string(at: 0).utf8))
            statement.reset()
            guard stored.versionHash != model.versionHash else { return true }
            let chain = try migrationChain(from: stored, to: model, mode: mode)
            var group: [LightweightMigration] = []
            for step in chain {
                guard case .lightweight(let migration) = step else { return false }
                group.append(migration)
            }
            KillPoint.hit("migration.begin")
            try runLightweight(group, firstStep: 1, stepCount: chain.count, on: db, progress: progress)
            return true
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        }
    }
}
