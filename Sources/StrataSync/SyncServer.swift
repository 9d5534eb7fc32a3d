internal import Foundation
internal import PostgresNIO
internal import Logging

/// Where the PostgreSQL database is: a `postgresql://` URL, as libpq reads it.
///
/// `postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, or a local socket folder in the `host`
/// query item: `postgresql://strata@localhost/strata?host=/tmp/pg` (the socket is
/// `/tmp/pg/.s.PGSQL.PORT`). TLS is not used (a local socket, or a private network).
public struct SyncServer: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The folder of the server's socket, when it is reached through one.
    public var socketDirectory: String?
    public var username: String
    public var password: String?
    public var database: String

    public init(host: String = "localhost", port: Int = 5432, socketDirectory: String? = nil, username: String,
                password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.socketDirectory = socketDirectory
        self.username = username
        self.password = password
        self.database = database
    }

    /// Reads a `postgresql://` (or `postgres://`) URL.
    /// - Throws: ``SyncError/serverUnavailable(_:)`` naming what is wrong with it.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), components.scheme == "postgresql" || components.scheme == "postgres" else {
            throw SyncError.serverUnavailable("'\(text)' is not a postgresql:// URL")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard let user = components.user, !user.isEmpty else {
            throw SyncError.serverUnavailable("'\(text)' names no user (postgresql://USER@HOST/DATABASE)")
        }
        guard !database.isEmpty else { throw SyncError.serverUnavailable("'\(text)' names no database (postgresql://USER@HOST/DATABASE)") }
        let socket = components.queryItems?.first { $0.name == "host" }?.value
        self.init(host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost", port: components.port ?? 5432,
                  socketDirectory: socket, username: user, password: components.password, database: database)
    }

    public var description: String {
        "postgresql://\(username)@\(host):\(port)/\(database)" + (socketDirectory.map { "?host=\($0)" } ?? "")
    }

    var configuration: PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketDirectory {
            configuration = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: .disable)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// A new connection. - Throws: ``SyncError/serverUnavailable(_:)``.
    func connect(logger: Logger) async throws -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(configuration: configuration, id: Int.random(in: 0..<Int.max), logger: logger)
        } catch {
            throw SyncError.serverUnavailable(String(reflecting: error))
        }
    }
}
