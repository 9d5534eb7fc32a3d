public import Foundation

/// One cache's state against its store, as `strata cache list` shows it.
public struct CacheReport: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        /// The file is sound and describes the store as it is: a controller would serve it.
        case valid
        /// A sound file that no longer describes the store (reason: `other-store`, `other-model`,
        /// `other-request`, `entity-changed`).
        case stale
        /// Broken bytes (reason: a corrupt ``SectionCacheRejection`` code).
        case corrupt
    }

    public var name: String
    public var path: String
    public var bytes: Int64
    public var status: Status
    /// The ``SectionCacheRejection`` code when not valid.
    public var reason: String?
    public var entity: String?
    /// A one-line summary of the cached request.
    public var request: String?
    public var sections: Int?
    public var objects: Int?
    /// The store generation the cache was written at.
    public var generation: Int64?
    public var storeGeneration: Int64
}

/// What `strata cache verify` found for one cache.
public struct CacheVerification: Codable, Sendable, Equatable {
    public var name: String
    /// The cache's header check (valid, stale or corrupt).
    public var report: CacheReport
    /// True when the file is valid and its sections, counts and ordered IDs equal the request's
    /// result against the store now.
    public var matches: Bool
    /// The first differences, in words (at most `limit` of them).
    public var differences: [String]
}

/// Which caches `purge` removes.
public enum CachePurgeSelection: Sendable, Equatable {
    case named([String])
    case all
    /// Every cache that is not valid (stale or corrupt).
    case notValid
}

extension StoreInspector {
    /// The state of cache `name`.
    public func cacheReport(named name: String, directory: URL? = nil) throws(InspectionError) -> CacheReport {
        let caches = caches(directory: directory)
        let file: FileSystemPath
        do {
            file = try caches.path(forCacheNamed: name)
        } catch {
            throw .cache(error)
        }
        let path = file.description
        // The cache first: an unknown name is reported without opening the store.
        let read: Result<Data, SectionCacheRejection>
        do {
            read = .success(try caches.read(named: name))
        } catch .missing {
            throw .unknownCache(name: name)
        } catch {
            read = .failure(error)
        }
        let metadata = try metadata()
        let data: Data
        switch read {
        case .success(let bytes): data = bytes
        case .failure(let error):
            return CacheReport(name: name, path: path, bytes: fileSize(file), status: .corrupt, reason: error.rawValue,
                               storeGeneration: metadata.generation)
        }
        var report = CacheReport(name: name, path: path, bytes: Int64(data.count), status: .valid, storeGeneration: metadata.generation)
        let header: SectionCacheFile.Header
        do {
            header = try SectionCacheFile.header(of: data)
        } catch {
            report.status = .corrupt
            report.reason = error.rawValue
            return report
        }
        report.entity = header.request.entity
        report.request = header.request.summary
        report.sections = header.sectionCount
        report.objects = header.objectCount
        report.generation = header.stamp.generation
        let current = SectionCacheStamp(metadata, entities: Set(header.stamp.entities.keys))
        if let stale = header.stamp.staleness(against: current) {
            report.status = .stale
            report.reason = stale.rawValue
            return report
        }
        do {
            _ = try SectionCacheFile.decodeBody(data, header)
        } catch {
            report.status = .corrupt
            report.reason = error.rawValue
        }
        return report
    }

    /// Every cache of the store, by name.
    public func cacheReports(directory: URL? = nil) throws(InspectionError) -> [CacheReport] {
        _ = try metadata()                    // a Strata store, or an error: never list beside any file
        let names: [String]
        do {
            names = try caches(directory: directory).cacheNames()
        } catch {
            throw .cache(error)
        }
        var reports: [CacheReport] = []
        for name in names { reports.append(try cacheReport(named: name, directory: directory)) }
        return reports
    }

    /// The decoded file of cache `name` (header and body), or why it can't be decoded.
    public func cacheFile(named name: String, directory: URL? = nil) throws(InspectionError) -> Result<SectionCacheFile, SectionCacheRejection> {
        let data: Data
        do {
            data = try caches(directory: directory).read(named: name)
        } catch .missing {
            throw .unknownCache(name: name)
        } catch {
            return .failure(error)
        }
        do {
            return .success(try SectionCacheFile.decode(data))
        } catch {
            return .failure(error)
        }
    }

    /// Runs cache `name`'s request against the store (model from the store, request from the
    /// file) and compares sections, counts and ordered IDs.
    public func verifyCache(named name: String, directory: URL? = nil, limit: Int = 10) throws(InspectionError) -> CacheVerification {
        let report = try cacheReport(named: name, directory: directory)
        var differences: [String] = []
        guard case .success(var file) = try cacheFile(named: name, directory: directory) else {
            differences.append("the file is \(report.status.rawValue): \(report.reason ?? "?")")
            return CacheVerification(name: name, report: report, matches: false, differences: differences)
        }
        if !file.pendingKeys.isEmpty {
            // Keys its change records name are placed again from the store, as a controller would.
            do {
                file = try placingPendingKeys(file)
            } catch .sqlite(let message) {
                differences.append("the keys the change records name can't be placed: \(message)")
                return CacheVerification(name: name, report: report, matches: false, differences: differences)
            }
        }
        if report.status != .valid { differences.append("the file is \(report.status.rawValue): \(report.reason ?? "?")") }
        let fresh: SectionCacheFile
        do {
            fresh = try compute(file.request)
        } catch .sqlite(let message) {
            // The stored request can't run against the store's model: this cache is invalid, the rest go on.
            differences.append("the cached request can't run against the store: \(message)")
            return CacheVerification(name: name, report: report, matches: false, differences: differences)
        }
        if file.sections.count != fresh.sections.count {
            differences.append("\(file.sections.count) sections in the cache, \(fresh.sections.count) in the store")
        }
        for (index, (cached, stored)) in zip(file.sections, fresh.sections).enumerated() where differences.count < limit {
            if cached.name != stored.name || cached.count != stored.count || cached.value != stored.value {
                differences.append("section \(index): \(cached.name.debugDescription) with \(cached.count) in the cache, "
                                   + "\(stored.name.debugDescription) with \(stored.count) in the store")
            }
        }
        if file.keys.count != fresh.keys.count {
            differences.append("\(file.keys.count) objects in the cache, \(fresh.keys.count) in the store")
        }
        for (index, (cached, stored)) in zip(file.keys, fresh.keys).enumerated() where cached != stored {
            guard differences.count < limit else { break }
            differences.append("object \(index): key \(cached) in the cache, \(stored) in the store")
        }
        return CacheVerification(name: name, report: report, matches: differences.isEmpty, differences: Array(differences.prefix(limit)))
    }

    /// `file` with the keys its change records name (``SectionCacheFile/pendingKeys``) taken
    /// out and placed again where the store puts them now (one read transaction), as a results
    /// controller serving it does: the list the file stands for.
    public func placingPendingKeys(_ file: SectionCacheFile) throws(InspectionError) -> SectionCacheFile {
        let model = try model()
        let placed: SectionCacheFile? = try read { db in
            let plan = try FetchPlan(try file.request.fetchRequest(), schema: model.schema)
            guard let incremental = IncrementalRefreshPlan(plan) else { return nil }
            var base = file
            base.pendingKeys = []
            var statistics = SectionCacheRefreshStatistics()
            return try base.applying(Set(file.pendingKeys), incremental, arguments: plan.arguments,
                                     sectioned: file.request.sectionKeyPath != nil, on: db, stamp: file.stamp, statistics: &statistics)
        }
        guard let placed else { throw .sqlite("the cached request's order does not keep its sections together, or it has a window") }
        return placed
    }

    /// Removes the selected caches (nothing with `dryRun`); returns their names. Each removal is
    /// one `unlink`: safe while an app has the store open (it rebuilds at its next fetch).
    ///
    /// Every target is checked before anything is removed: each must be a regular file (a folder,
    /// a symbolic link or anything else under a cache's file name throws
    /// ``InspectionError/notACacheFile(name:path:)``, with nothing removed, dry run or not). If an
    /// `unlink` still fails after that (permissions, a file system gone read-only), the caches
    /// before it are already gone: ``InspectionError/purgeIncomplete(removed:failed:notRemoved:error:)``
    /// names the ones removed and the ones left.
    public func purgeCaches(_ selection: CachePurgeSelection, directory: URL? = nil, dryRun: Bool = false) throws(InspectionError) -> [String] {
        _ = try metadata()                    // a Strata store, or an error: never purge beside any file
        let caches = caches(directory: directory)
        let names: [String]
        switch selection {
        case .named(let requested):
            let existing: [String]
            do { existing = try caches.cacheNames() } catch { throw .cache(error) }
            if let unknown = requested.first(where: { !existing.contains($0) }) { throw .unknownCache(name: unknown) }
            names = requested
        case .all:
            do { names = try caches.cacheNames() } catch { throw .cache(error) }
        case .notValid:
            names = try cacheReports(directory: directory).filter { $0.status != .valid }.map(\.name)
        }
        for name in names {
            let file: FileSystemPath
            do { file = try caches.path(forCacheNamed: name) } catch { throw .cache(error) }
            let info: stat
            switch file.withCString({ POSIX.status(of: $0, followingLinks: false) }) {
            case .success(let found): info = found
            case .failure(let failure):
                if failure.code == ENOENT { continue }   // gone since it was listed: nothing to check
                throw .cache(.io(CacheFileError(operation: "lstat", path: file.description, code: failure.code)))
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notACacheFile(name: name, path: file.description) }
        }
        guard !dryRun else { return names }
        var removed: [String] = []
        for (index, name) in names.enumerated() {
            do {
                if try caches.deleteCache(named: name) { removed.append(name) }
            } catch {
                throw .purgeIncomplete(removed: removed, failed: name, notRemoved: Array(names[index...]), error: error)
            }
        }
        return removed
    }

    private func fileSize(_ path: FileSystemPath) -> Int64 { path.fileSize ?? 0 }
}
