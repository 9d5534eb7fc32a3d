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
}

extension StoreCoordinator {
    /// The steps that opening `url` with `model` would migrate through, without writing
    /// anything (a dry run). Empty when the store is already at `model`. Throws a
    /// ``MigrationError`` for a change that can't be inferred.
    public static func plannedMigration(at url: URL, to model: Model, versions: [Model] = []) throws -> [MigrationStep] {
        guard let stored = try storedModel(path: url.path), stored.versionHash != model.versionHash else { return [] }
        return try migrationChain(from: stored, to: model, versions: versions).flatMap(\.steps)
    }

    /// The store's own model (from `strata_meta.model_json`), read-only; `nil` for a missing or empty file.
    static func storedModel(path: String) throws -> Model? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = attributes[.size] as? Int, size > 0 else { return nil }
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
            throw StoreError.sqlite(error)
        }
    }

    /// The migrations from `stored` to `model`: one inferred step, or one per version after the store's.
    static func migrationChain(from stored: Model, to model: Model, versions: [Model]) throws -> [LightweightMigration] {
        guard !versions.isEmpty else { return [try LightweightMigration(from: stored, to: model)] }
        guard let start = versions.firstIndex(where: { $0.versionHash == stored.versionHash }) else {
            throw MigrationError.unknownStoreVersion(storeVersion: stored.versionIdentifier, storeHash: stored.versionHash)
        }
        var chain: [LightweightMigration] = []
        var current = stored
        for next in versions[(start + 1)...] {
            chain.append(try LightweightMigration(from: current, to: next))
            current = next
        }
        if current.versionHash != model.versionHash { chain.append(try LightweightMigration(from: current, to: model)) }
        return chain
    }

    /// Migrates the store at `path` to `model` when it holds another version and `mode` allows:
    /// every step inferred first (a refusal writes nothing), then all of them in one
    /// `BEGIN IMMEDIATE … COMMIT` that also bumps the generation and sets a new nonce, so every
    /// section cache is rejected (`other-model`) and rebuilt. A crash leaves the old store or the
    /// new one, never a mix.
    static func migrateIfNeeded(path: String, model: Model, mode: MigrationMode, configuration: Connection.Configuration) throws {
        guard case .lightweight(let versions) = mode,
              let stored = try storedModel(path: path), stored.versionHash != model.versionHash else { return }
        let chain = try migrationChain(from: stored, to: model, versions: versions)
        KillPoint.hit("migration.begin")
        do {
            let db = try Connection(path: path, configuration: configuration)
            defer { db.close() }
            try db.transaction(.immediate) {
                let metadata = try readMetadata(db)
                let nonce = randomNonce()
                for migration in chain { try migration.run(on: db, generation: metadata.generation + 1, nonce: nonce) }
            }
            KillPoint.hit("migration.committed")
        } catch let error as SQLiteError {
            throw StoreError.sqlite(error)
        }
    }
}
