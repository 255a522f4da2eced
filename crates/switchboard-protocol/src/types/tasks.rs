//! Tasks (2025-11-25, experimental): durable handles for long-running requests.
//!
//! A requestor adds `params.task` ([`TaskMetadata`]) to a request the receiver
//! declared task support for; the receiver answers at once with a
//! [`CreateTaskResult`], and the requestor polls `tasks/get`, blocks on
//! `tasks/result`, lists with `tasks/list` and cancels with `tasks/cancel`. Status
//! changes may be pushed with `notifications/tasks/status`. Messages that belong to a
//! task carry [`RelatedTaskMetadata`] under `_meta["io.modelcontextprotocol/related-task"]`.
//!
//! Source: 2025-11-25, "Basic utilities → Tasks" and its schema. In 2026-07-28 tasks
//! moved to the `io.modelcontextprotocol/tasks` extension with a different wire shape
//! (flat `taskId`, `ttlMs`, `resultType: "task"`); those members are kept in `extra`
//! but not modelled here.
//!
//! This module holds only the wire shapes; it must not know how tasks are stored,
//! scheduled or expired.

use serde::{Deserialize, Serialize};

use super::common::{meta, Cursor, Extra, Meta};

/// `tasks/get` (2025-11-25, both directions): params [`GetTaskRequestParams`],
/// result [`GetTaskResult`].
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (2025-11-25, both directions): params
/// [`GetTaskPayloadRequestParams`], result the original request's result
/// ([`GetTaskPayloadResult`]) or its error.
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25, both directions): params
/// [`crate::types::PaginatedRequestParams`], result [`ListTasksResult`].
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel` (2025-11-25, both directions): params [`CancelTaskRequestParams`],
/// result [`CancelTaskResult`]; a task already terminal gets -32602.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/update` (2026-07-28 tasks extension, client→server): the client's
/// input to a task that asked for it.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `notifications/tasks/status` (2025-11-25, both directions): params
/// [`TaskStatusNotificationParams`].
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";

/// `params.task` on a task-augmented request: `{ttl?}` (2025-11-25, schema
/// `TaskMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    /// Requested time to live from creation, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The status of a task (2025-11-25, schema `TaskStatus`). `working` and
/// `input_required` are live; `completed`, `failed` and `cancelled` are terminal.
/// A value this crate does not know is kept as [`TaskStatus::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor (e.g. an elicitation).
    InputRequired,
    /// Finished successfully (terminal).
    Completed,
    /// Finished with an error (terminal).
    Failed,
    /// Cancelled (terminal).
    Cancelled,
    /// A status from a newer revision, kept as sent.
    #[serde(untagged)]
    Other(String),
}

impl TaskStatus {
    /// Whether the status is terminal (`completed`, `failed`, `cancelled`). An
    /// unknown status is not considered terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A task's state: `{taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl,
/// pollInterval?}` (2025-11-25, schema `Task`).
///
/// `ttl` is required but may be `null` (unlimited); `None` encodes as `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The receiver-chosen task id.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// A human-readable description of the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Time to live from creation in milliseconds; `null` (None) means unlimited.
    pub ttl: Option<i64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<i64>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The immediate answer to a task-augmented request: `{task, _meta?}` (2025-11-25,
/// schema `CreateTaskResult`). `_meta` may carry
/// `io.modelcontextprotocol/model-immediate-response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// The created task.
    pub task: Task,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params naming one task: `{taskId}` (2025-11-25, `GetTaskRequest.params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequestParams {
    /// The task to read.
    pub task_id: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to `tasks/get`: the task's members at the top level plus `_meta?`
/// (2025-11-25, schema `GetTaskResult` = `Result` ∧ `Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetTaskResult {
    /// The task; its `extra` holds the members neither `Task` nor `_meta` model.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/result`: `{taskId}` (2025-11-25, `GetTaskPayloadRequest.params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPayloadRequestParams {
    /// The task whose result is wanted.
    pub task_id: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to `tasks/result`: the original request's result, whatever its type
/// (2025-11-25, schema `GetTaskPayloadResult`: `_meta?` plus any members). Decode
/// `extra` further once the original method is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetTaskPayloadResult {
    /// `_meta`; should carry the related-task key.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The original result's members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to `tasks/list`: `{tasks, nextCursor?, _meta?}` (2025-11-25, schema
/// `ListTasksResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Cursor for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `tasks/cancel`: `{taskId}` (2025-11-25, `CancelTaskRequest.params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequestParams {
    /// The task to cancel.
    pub task_id: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to `tasks/cancel`: the task after cancellation, members at the top
/// level (2025-11-25, schema `CancelTaskResult` = `Result` ∧ `Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelTaskResult {
    /// The task; its `extra` holds unmodelled members.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `notifications/tasks/status`: the task's members at the top level plus
/// `_meta?` (2025-11-25, schema `TaskStatusNotificationParams` =
/// `NotificationParams` ∧ `Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// The task; its `extra` holds unmodelled members.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The value of `_meta["io.modelcontextprotocol/related-task"]`: `{taskId}`
/// (2025-11-25, schema `RelatedTaskMetadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task the message belongs to.
    pub task_id: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl RelatedTaskMetadata {
    /// Metadata naming `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        RelatedTaskMetadata {
            task_id: task_id.into(),
            extra: Extra::new(),
        }
    }

    /// Reads the related-task key from a `_meta` object; `None` when absent or not
    /// of this shape.
    pub fn from_meta(m: &Meta) -> Option<Self> {
        m.get(meta::RELATED_TASK)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Writes itself under the related-task key of `m`, replacing any value there.
    pub fn insert_into(&self, m: &mut Meta) {
        if let Ok(v) = serde_json::to_value(self) {
            m.insert(meta::RELATED_TASK.to_owned(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    fn task_json() -> Value {
        json!({
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000,
            "pollInterval": 5000
        })
    }

    #[test]
    fn create_task_result_round_trip() {
        let v = json!({
            "task": task_json(),
            "_meta": {"io.modelcontextprotocol/model-immediate-response": "working on it"}
        });
        let r: CreateTaskResult = round_trip(v);
        assert_eq!(r.task.status, TaskStatus::Working);
        assert_eq!(r.task.ttl, Some(60000));
        assert_eq!(r.task.poll_interval, Some(5000));
    }

    #[test]
    fn null_ttl_is_kept() {
        let v = json!({
            "taskId": "t", "status": "completed",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null
        });
        let t: Task = round_trip(v);
        assert_eq!(t.ttl, None);
        assert!(t.status.is_terminal());
    }

    #[test]
    fn flattened_results_keep_meta_and_unknown_members() {
        let mut v = task_json();
        v["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": "x"}});
        v["futureField"] = json!(3);
        let r: GetTaskResult = round_trip(v.clone());
        assert_eq!(r.task.extra["futureField"], json!(3));
        assert!(!r.task.extra.contains_key("_meta"));
        let related = RelatedTaskMetadata::from_meta(r.meta.as_ref().unwrap()).unwrap();
        assert_eq!(related.task_id, "x");
        let r: CancelTaskResult = round_trip(v.clone());
        assert_eq!(r.task.task_id, "786512e2-9e0d-44bd-8f29-789f320fe840");
        let n: TaskStatusNotificationParams = round_trip(v);
        assert_eq!(
            n.task.status_message.as_deref(),
            Some("The operation is now in progress.")
        );
    }

    #[test]
    fn statuses() {
        for (s, terminal) in [
            ("working", false),
            ("input_required", false),
            ("completed", true),
            ("failed", true),
            ("cancelled", true),
        ] {
            let st: TaskStatus = round_trip(json!(s));
            assert_eq!(st.is_terminal(), terminal, "{s}");
            assert!(!matches!(st, TaskStatus::Other(_)));
        }
        let st: TaskStatus = round_trip(json!("paused"));
        assert_eq!(st, TaskStatus::Other("paused".into()));
        assert!(!st.is_terminal());
    }

    #[test]
    fn params_and_lists() {
        let p: GetTaskRequestParams = round_trip(json!({"taskId": "a"}));
        assert_eq!(p.task_id, "a");
        let p: GetTaskPayloadRequestParams = round_trip(json!({"taskId": "b", "_meta": {}}));
        assert_eq!(p.meta, Some(Meta::new()));
        let p: CancelTaskRequestParams = round_trip(json!({"taskId": "c", "x": 1}));
        assert_eq!(p.extra["x"], json!(1));
        assert!(serde_json::from_value::<CancelTaskRequestParams>(json!({})).is_err());
        let l: ListTasksResult = round_trip(json!({"tasks": [task_json()], "nextCursor": "n"}));
        assert_eq!(l.tasks.len(), 1);
        assert_eq!(l.next_cursor.as_deref(), Some("n"));
        let m: TaskMetadata = round_trip(json!({"ttl": 1000}));
        assert_eq!(m.ttl, Some(1000));
        let m: TaskMetadata = round_trip(json!({}));
        assert_eq!(m.ttl, None);
    }

    #[test]
    fn payload_result_keeps_everything() {
        let v = json!({
            "content": [{"type": "text", "text": "done"}],
            "isError": false,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}
        });
        let r: GetTaskPayloadResult = round_trip(v);
        assert_eq!(r.extra.len(), 2);
    }

    #[test]
    fn related_task_meta_helpers() {
        let mut m = Meta::new();
        assert!(RelatedTaskMetadata::from_meta(&m).is_none());
        RelatedTaskMetadata::new("abc").insert_into(&mut m);
        assert_eq!(m[meta::RELATED_TASK], json!({"taskId": "abc"}));
        assert_eq!(RelatedTaskMetadata::from_meta(&m).unwrap().task_id, "abc");
    }
}
