public import Observation

// Observation (issue 49): `@Entity` objects are `Observable`. A read of an `@Entity` property
// registers the property with the `Observation` module (`withObservationTracking`, SwiftUI,
// `Observations`); a change of it fires that property's observers, and no others.
//
// Where changes come from, and how each reaches the registrar:
// - The property's own setter: `willSet` before the write, `didSet` after (`_observationMutation`).
// - Everything else (a merge of another context's save, another process's commit, a batch
//   request, a refresh, a rollback, `setValue(_:forKey:)`): the context's objects-did-change
//   event. The observation's listener compares each named object's values with those its
//   observers last heard of, slot by slot, and fires `willSet`/`didSet` for the properties that
//   differ, after the values changed (there is no "before" a merge for a reader to see).
//
// A registrar costs two allocations (about 250 ns; measured), so it is made lazily: on the first
// read of an `@Entity` property of an object in a context that observes (the container's main
// context, and any context whose ``ManagedObjectContext/observesObjects`` is set). Objects only
// written (an import) or read through `value(forKey:)`/`self[attribute:]` never get one.

extension ManagedObject: Observable {}

/// An object's registrar, and its values as its observers last heard of them.
@usableFromInline
final class ObservationBox {
    @usableFromInline let registrar = ObservationRegistrar()
    /// `nil` until the object's values were read (it was a fault when the box was made).
    var seen: RowSnapshot?

    init() {}
}

/// Called by an `@Entity` property's getter (generated): registers the read with the
/// `Observation` module when the object's context observes objects.
@inlinable @inline(__always)
public func _observationAccess<Subject: ManagedObject, Member>(_ subject: Subject, _ keyPath: @autoclosure () -> KeyPath<Subject, Member>) {
    // The registrar is used where it is stored (a copy of it was a retain and a release per read).
    if let box = subject.observationBox {
        box.registrar.access(subject, keyPath: keyPath())
    } else if subject.link.observesObjects {
        subject.makeObservationBox().registrar.access(subject, keyPath: keyPath())
    }
}

/// Called by an `@Entity` property's setter (generated): the write between `willSet` and
/// `didSet`, when the object has observers' registrar at all.
@inlinable @inline(__always)
public func _observationMutation<Subject: ManagedObject, Member>(_ subject: Subject, _ keyPath: @autoclosure () -> KeyPath<Subject, Member>,
                                                                  _ write: () -> Void) {
    guard let box = subject.observationBox else { return write() }
    let path = keyPath()
    box.registrar.willSet(subject, keyPath: path)
    write()
    box.registrar.didSet(subject, keyPath: path)
    subject.observersHeardOfCurrentValues()
}

/// Called by the generated ``ManagedObject/_notifyObservers(of:willSet:)``: one property's
/// `willSet` or `didSet`.
@inlinable
public func _observationNotify<Subject: ManagedObject, Member>(_ subject: Subject, _ keyPath: KeyPath<Subject, Member>, willSet: Bool) {
    guard let box = subject.observationBox else { return }
    if willSet { box.registrar.willSet(subject, keyPath: keyPath) } else { box.registrar.didSet(subject, keyPath: keyPath) }
}

extension ManagedObject {
    /// The object's registrar, made on its first `@Entity` property read (and with it the
    /// context's listener that tells observers of changes that do not come through a setter).
    @usableFromInline
    final func makeObservationBox() -> ObservationBox {
        if let box = observationBox { return box }
        let box = ObservationBox()
        observationBox = box
        link.withContext { context in
            // A fault is read now (the getter that asked reads it next anyway): what observers
            // hear of later is compared with these values. A read that fails is not swallowed
            // into a value: the baseline stays unset, and the getter's own read, just after,
            // stops with the error (an unfulfillable fault).
            if isFault { try? context.fulfill(self) }
            context.startObservingObjects()
        }
        box.seen = isFault ? nil : current
        return box
    }

    /// After a setter told its observers: the values they have heard of are the current ones.
    @usableFromInline
    final func observersHeardOfCurrentValues() {
        observationBox?.seen = isFault ? nil : current
    }

    /// Fires the observers of every property whose value differs from what they last heard of.
    /// A fault is read first (its values are needed to tell); one whose row is gone tells them
    /// nothing more.
    func notifyObserversOfChangedValues(in context: ManagedObjectContext) {
        guard let box = observationBox, state != .invalid else { return }
        if isFault {
            // Unreadable (its row gone, a page that fails its checksum): nothing is fired, and
            // no value is made up; whoever reads the object next gets the error.
            guard (try? context.fulfill(self)) != nil, !isFault else { return }
        }
        let now = current
        guard let seen = box.seen else {
            box.seen = now
            return
        }
        guard seen != now else { return }
        var names: [String] = []
        let attributes = info.attributes
        for index in attributes.indices where seen.attribute(index) != now.attribute(index) {
            names.append(attributes[index].name)
        }
        let toOnes = info.toOnes
        for index in toOnes.indices where seen.toOnes[index] != now.toOnes[index] {
            names.append(toOnes[index].name)
        }
        box.seen = now
        notifyObservers(of: names)
    }

    /// Tells the observers of `names`: every `willSet`, then every `didSet`.
    func notifyObservers(of names: [String]) {
        for name in names { _notifyObservers(of: name, willSet: true) }
        for name in names { _notifyObservers(of: name, willSet: false) }
    }
}

extension ManagedObjectContext {
    /// Whether the `@Entity` objects of this context tell the `Observation` module of reads and
    /// changes (`withObservationTracking`, SwiftUI, `Observations`). `true` for a
    /// ``PersistentContainer``'s main context (the one a UI reads, as SwiftData's `mainContext`);
    /// `false` for other contexts until set.
    ///
    /// Observing costs one registrar per object whose `@Entity` properties are read (two
    /// allocations on the object's first such read) and a call into the `Observation` module per
    /// read: fetching 30,000 flights and reading their 19 properties takes 1.5 times the
    /// instructions it takes unobserved (callgrind; see <doc:Performance>). A context that reads
    /// many objects for work nobody displays (an import, an export, a report) keeps it off.
    /// Objects already read keep their registrar when it is switched off.
    public var observesObjects: Bool {
        get { assertOnQueue(); return link.observesObjects }
        set { assertOnQueue(); link.observesObjects = newValue }
    }

    /// Listens to this context's own events, once, to tell observers of changes that do not come
    /// through a property's setter.
    func startObservingObjects() {
        guard objectObservation == nil else { return }
        objectObservation = addObserver { [unowned self] notification in
            self.notifyObservers(of: notification.event)
        }
    }

    private func notifyObservers(of event: ContextEvent) {
        guard case .objectsDidChange(let changes) = event else { return }
        // To-many relationships whose members a merge changed (their owners are not "updated").
        if !toManyObservationQueue.isEmpty {
            let queued = toManyObservationQueue
            toManyObservationQueue = []
            for (object, names) in queued where object.state != .invalid { object.notifyObservers(of: names) }
        }
        var seen = Set<ObjectIdentifier>()
        func look(at object: ManagedObject) {
            guard object.observationBox != nil, seen.insert(ObjectIdentifier(object)).inserted else { return }
            object.notifyObserversOfChangedValues(in: self)
        }
        for id in changes.updated.union(changes.refreshed) {
            if let object = registered[id] { look(at: object) }
        }
        // Rows another connection changed, which ones not known: every observed object of
        // those entities is compared.
        if !changes.entitiesChangedElsewhere.isEmpty {
            for object in Array(registered.values) {
                if changes.entitiesChangedElsewhere.contains(object.entityName) { look(at: object) }
                // Members may have joined or left (which ones is not known): observers of those
                // relationships are told, perhaps for nothing, never left out.
                guard object.observationBox != nil, object.state != .invalid else { continue }
                object.notifyObservers(of: object.info.toManys.filter { changes.entitiesChangedElsewhere.contains($0.destination) }.map(\.name))
            }
        }
    }
}
