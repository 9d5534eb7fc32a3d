import SwiftCompilerPlugin
import SwiftSyntaxMacros
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct StrataMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        EntityMacro.self,
        PersistedPropertyMacro.self,
        AttributeMacro.self,
        RelationshipMacro.self,
        TransientMacro.self,
        UniqueMacro.self,
    ]
}

/// The plug-in's entry point: swift-syntax's message loop, behind a filter for the compiler's
/// end-of-session message.
///
/// Swift 6.3's compiler ends a session with an empty message (an 8-byte header of 0), which
/// swift-syntax 602 reads as corrupted JSON: every compile job that loaded the plug-in printed
/// "Internal Error: DecodingError.dataCorrupted … unexpected end of file" (swift-syntax 603
/// reads it as the end). The filter passes every message through unchanged and turns the empty
/// one into the end of input, which 602 handles as a clean shutdown.
@main
enum StrataMacrosMain {
    static func main() throws {
        endInputAtEmptyMessage()
        try StrataMacrosPlugin.main()
    }

    /// Puts a pipe in front of standard input, fed by a thread that copies whole messages and
    /// closes the pipe at an empty message or the end of the real input.
    static func endInputAtEmptyMessage() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        let compiler = dup(0)
        guard compiler >= 0, dup2(ends[0], 0) >= 0 else { return }
        close(ends[0])
        let descriptors = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
        descriptors[0] = compiler
        descriptors[1] = ends[1]
        #if canImport(Darwin)
        var thread: pthread_t? = nil
        #else
        var thread = pthread_t()
        #endif
        let created = pthread_create(&thread, nil, { argument in
            #if canImport(Darwin)
            let descriptors = argument.assumingMemoryBound(to: Int32.self)
            #else
            let descriptors = argument!.assumingMemoryBound(to: Int32.self)
            #endif
            let (input, output) = (descriptors[0], descriptors[1])
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                var header: UInt64 = 0
                guard readFully(input, &header, 8) else { break }
                var remaining = Int(UInt64(littleEndian: header))
                guard remaining > 0, writeFully(output, &header, 8) else { break }
                var failed = false
                while remaining > 0 && !failed {
                    let chunk = min(remaining, buffer.count)
                    failed = !buffer.withUnsafeMutableBytes { bytes in
                        readFully(input, bytes.baseAddress!, chunk) && writeFully(output, bytes.baseAddress!, chunk)
                    }
                    remaining -= chunk
                }
                if failed { break }
            }
            close(output)
            return nil
        }, descriptors)
        // Detached: nobody joins the copier, which ends with the input or with the process. A
        // joinable thread left at exit is a leak to ThreadSanitizer, which printed a report for
        // every compile job that loaded the plug-in under `--sanitize=thread`.
        guard created == 0 else {
            // No copier: read the compiler directly, as without the filter.
            dup2(compiler, 0)
            close(ends[1])
            return
        }
        #if canImport(Darwin)
        if let thread { pthread_detach(thread) }
        #else
        pthread_detach(thread)
        #endif
    }
}

private func readFully(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
    var done = 0
    while done < count {
        let n = read(descriptor, buffer + done, count - done)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        done += n
    }
    return true
}

private func writeFully(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Bool {
    var done = 0
    while done < count {
        let n = write(descriptor, buffer + done, count - done)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        done += n
    }
    return true
}
