public import Strata

extension TestModels {
    /// Projects, tasks and notes, for the sync tests (Tests/StrataSyncTests and its replica child,
    /// Sources/StrataSyncReplica): `Project(code unique, title, budget)` ←cascade→
    /// `Task(title, points, done, project)` ←nullify→ `Note(text, task)`. Deleting a project
    /// deletes its tasks; deleting a task clears its notes' `task`. Two replicas that insert the
    /// same project code meet the unique-key rule.
    public static func syncProjects() -> Model {
        try! Model(version: "sync-projects-1", entities: [
            Entity("Project", attributes: [
                Attribute("code", .string, isOptional: false, isUnique: true),
                Attribute("title", .string, isOptional: false, defaultValue: .string("")),
                Attribute("budget", .int64, isOptional: false, defaultValue: .int64(0)),
            ], relationships: [Relationship("tasks", .toMany, to: "Task", inverse: "project", deleteRule: .cascade)]),
            Entity("Task", attributes: [
                Attribute("title", .string, isOptional: false, defaultValue: .string("")),
                Attribute("points", .int64, isOptional: false, defaultValue: .int64(0)),
                Attribute("done", .bool, isOptional: false, defaultValue: .bool(false)),
            ], relationships: [
                Relationship("project", .toOne, to: "Project", inverse: "tasks"),
                Relationship("notes", .toMany, to: "Note", inverse: "task", deleteRule: .nullify),
            ]),
            Entity("Note", attributes: [Attribute("text", .string, isOptional: false, defaultValue: .string(""))],
                   relationships: [Relationship("task", .toOne, to: "Task", inverse: "notes")]),
        ])
    }
}
