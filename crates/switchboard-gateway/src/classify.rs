//! One classification of a message by its method into what the gateway does
//! with it: every place that used to match method strings (the session's fast
//! and slow paths, the stateless exchange, the upstream's dispatch) matches a
//! [`Route`] or a [`Notice`] instead. Method names come only from the protocol
//! crate's constants. Pure: no sessions, no upstreams, no I/O.

use switchboard_protocol::types as t;

use crate::catalog::pin::Kind;

/// What a downstream request is, for the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `initialize`: the session's handshake, answered by the session.
    Initialize,
    /// `ping`: answered by the gateway itself.
    Ping,
    /// `server/discover` (2026-07-28): answered from the upstream's result.
    Discover,
    /// `tools/call`, `prompts/get`: an entry used by name, judged by policy
    /// (allowlist, lock) before any upstream sees it.
    Use(Kind),
    /// `tools/list`, `prompts/list`, `resources/templates/list`: a list whose
    /// entries policy filters.
    List(Kind),
    /// `resources/list`: a list no policy filters (a gateway merges it).
    ListResources,
    /// `resources/read`: routed by its URI.
    Read,
    /// `completion/complete`: routed by its `ref` (a prompt's name or a
    /// resource's URI).
    Complete,
    /// `logging/setLevel`: kept per session where the upstream is shared.
    SetLevel,
    /// `resources/subscribe` (`true`) or `resources/unsubscribe` (`false`):
    /// counted per subscriber where the upstream is shared.
    Subscribe(bool),
    /// `subscriptions/listen` (2026-07-28): a stream of changes.
    Listen,
    /// Anything else (`tasks/*`, an unknown method): forwarded as is; the
    /// upstream answers.
    Forward,
}

impl Route {
    /// The route of a request for `method`.
    pub(crate) fn of(method: &str) -> Route {
        match method {
            t::INITIALIZE => Route::Initialize,
            t::PING => Route::Ping,
            t::SERVER_DISCOVER => Route::Discover,
            t::TOOLS_CALL => Route::Use(Kind::Tool),
            t::PROMPTS_GET => Route::Use(Kind::Prompt),
            t::TOOLS_LIST => Route::List(Kind::Tool),
            t::PROMPTS_LIST => Route::List(Kind::Prompt),
            t::RESOURCES_TEMPLATES_LIST => Route::List(Kind::ResourceTemplate),
            t::RESOURCES_LIST => Route::ListResources,
            t::RESOURCES_READ => Route::Read,
            t::COMPLETION_COMPLETE => Route::Complete,
            t::LOGGING_SET_LEVEL => Route::SetLevel,
            t::RESOURCES_SUBSCRIBE => Route::Subscribe(true),
            t::RESOURCES_UNSUBSCRIBE => Route::Subscribe(false),
            t::SUBSCRIPTIONS_LISTEN => Route::Listen,
            _ => Route::Forward,
        }
    }

    /// The kind of entry a request uses by name, for the requests policy
    /// refuses.
    pub(crate) fn used(self) -> Option<Kind> {
        match self {
            Route::Use(kind) => Some(kind),
            _ => None,
        }
    }

    /// The kind of entries a list request returns, for the lists policy
    /// filters.
    pub(crate) fn listed(self) -> Option<Kind> {
        match self {
            Route::List(kind) => Some(kind),
            _ => None,
        }
    }

    /// For a list request (the four lists), the member of its result that
    /// holds the entries: `tools`, `prompts`, `resources`,
    /// `resourceTemplates`.
    pub(crate) fn list_key(self) -> Option<&'static str> {
        match self {
            Route::List(Kind::Tool) => Some("tools"),
            Route::List(Kind::Prompt) => Some("prompts"),
            Route::List(Kind::ResourceTemplate) => Some("resourceTemplates"),
            Route::ListResources => Some("resources"),
            _ => None,
        }
    }

    /// Whether its 2026-07-28 result carries cache hints (`ttlMs`,
    /// `cacheScope`: required on the list results and `resources/read`,
    /// "Caching").
    pub(crate) fn cacheable(self) -> bool {
        self.list_key().is_some() || self == Route::Read
    }
}

/// The method a request names, as a metric label: one of MCP's own
/// (`&'static`, from the protocol crate), or `_OTHER` for any other name a
/// caller chose (labels stay bounded).
pub(crate) fn method_label(method: &str) -> &'static str {
    match method {
        t::INITIALIZE => t::INITIALIZE,
        t::PING => t::PING,
        t::SERVER_DISCOVER => t::SERVER_DISCOVER,
        t::TOOLS_LIST => t::TOOLS_LIST,
        t::TOOLS_CALL => t::TOOLS_CALL,
        t::PROMPTS_LIST => t::PROMPTS_LIST,
        t::PROMPTS_GET => t::PROMPTS_GET,
        t::RESOURCES_LIST => t::RESOURCES_LIST,
        t::RESOURCES_TEMPLATES_LIST => t::RESOURCES_TEMPLATES_LIST,
        t::RESOURCES_READ => t::RESOURCES_READ,
        t::RESOURCES_SUBSCRIBE => t::RESOURCES_SUBSCRIBE,
        t::RESOURCES_UNSUBSCRIBE => t::RESOURCES_UNSUBSCRIBE,
        t::COMPLETION_COMPLETE => t::COMPLETION_COMPLETE,
        t::LOGGING_SET_LEVEL => t::LOGGING_SET_LEVEL,
        t::SUBSCRIPTIONS_LISTEN => t::SUBSCRIPTIONS_LISTEN,
        t::TASKS_GET => t::TASKS_GET,
        t::TASKS_RESULT => t::TASKS_RESULT,
        t::TASKS_LIST => t::TASKS_LIST,
        t::TASKS_CANCEL => t::TASKS_CANCEL,
        t::TASKS_UPDATE => t::TASKS_UPDATE,
        t::SAMPLING_CREATE_MESSAGE => t::SAMPLING_CREATE_MESSAGE,
        t::ELICITATION_CREATE => t::ELICITATION_CREATE,
        t::ROOTS_LIST => t::ROOTS_LIST,
        _ => "_OTHER",
    }
}

/// What a server→client request asks of the client, for the capability
/// the client must have declared for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `sampling/createMessage`: needs `sampling`.
    Sampling,
    /// `elicitation/create`: needs `elicitation`.
    Elicitation,
    /// `roots/list`: needs `roots`.
    Roots,
    /// Anything else (`ping`): needs nothing.
    Other,
}

impl Ask {
    /// The class of a server→client request for `method`.
    pub(crate) fn of(method: &str) -> Ask {
        match method {
            t::SAMPLING_CREATE_MESSAGE => Ask::Sampling,
            t::ELICITATION_CREATE => Ask::Elicitation,
            t::ROOTS_LIST => Ask::Roots,
            _ => Ask::Other,
        }
    }
}

/// What a notification is, for the gateway (either direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// `notifications/initialized`.
    Initialized,
    /// `notifications/cancelled`.
    Cancelled,
    /// `notifications/progress`.
    Progress,
    /// `notifications/message`: a log message.
    Log,
    /// `notifications/{tools,prompts}/list_changed` (the kind whose list
    /// changed), `notifications/resources/list_changed` (`None`).
    ListChanged(Option<Kind>),
    /// `notifications/resources/updated`.
    ResourceUpdated,
    /// `notifications/subscriptions/acknowledged` (2026-07-28): a listen
    /// stream is open.
    Acknowledged,
    /// Anything else: passed on as is.
    Other,
}

impl Notice {
    /// The class of a notification for `method`.
    pub(crate) fn of(method: &str) -> Notice {
        match method {
            t::NOTIFICATION_INITIALIZED => Notice::Initialized,
            t::NOTIFICATION_CANCELLED => Notice::Cancelled,
            t::NOTIFICATION_PROGRESS => Notice::Progress,
            t::NOTIFICATION_MESSAGE => Notice::Log,
            t::NOTIFICATION_TOOLS_LIST_CHANGED => Notice::ListChanged(Some(Kind::Tool)),
            t::NOTIFICATION_PROMPTS_LIST_CHANGED => Notice::ListChanged(Some(Kind::Prompt)),
            t::NOTIFICATION_RESOURCES_LIST_CHANGED => Notice::ListChanged(None),
            t::NOTIFICATION_RESOURCES_UPDATED => Notice::ResourceUpdated,
            t::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => Notice::Acknowledged,
            _ => Notice::Other,
        }
    }
}

/// The lists an upstream announces changes of
/// (`notifications/{tools,prompts,resources}/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    /// Resources and resource templates.
    Resources,
}

impl ListKind {
    /// All three.
    pub(crate) const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// Its name in messages: `tools`, `prompts`, `resources`.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }

    /// The notification that announces a change of it.
    pub(crate) fn notification(self) -> &'static str {
        match self {
            ListKind::Tools => t::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Prompts => t::NOTIFICATION_PROMPTS_LIST_CHANGED,
            ListKind::Resources => t::NOTIFICATION_RESOURCES_LIST_CHANGED,
        }
    }

    /// The list that holds entries of `kind` (none holds the instructions).
    pub(crate) fn of(kind: Kind) -> Option<ListKind> {
        match kind {
            Kind::Tool => Some(ListKind::Tools),
            Kind::Prompt => Some(ListKind::Prompts),
            Kind::ResourceTemplate => Some(ListKind::Resources),
            Kind::Instructions => None,
        }
    }

    /// The list a `list_changed` notice is about (the kind of
    /// [`Notice::ListChanged`]: `None` for resources).
    pub(crate) fn changed(kind: Option<Kind>) -> ListKind {
        kind.and_then(ListKind::of).unwrap_or(ListKind::Resources)
    }

    /// Its place in a table of the three.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_method_has_its_route() {
        let table = [
            ("initialize", Route::Initialize),
            ("ping", Route::Ping),
            ("server/discover", Route::Discover),
            ("tools/call", Route::Use(Kind::Tool)),
            ("prompts/get", Route::Use(Kind::Prompt)),
            ("tools/list", Route::List(Kind::Tool)),
            ("prompts/list", Route::List(Kind::Prompt)),
            (
                "resources/templates/list",
                Route::List(Kind::ResourceTemplate),
            ),
            ("logging/setLevel", Route::SetLevel),
            ("resources/subscribe", Route::Subscribe(true)),
            ("resources/unsubscribe", Route::Subscribe(false)),
            ("subscriptions/listen", Route::Listen),
            ("resources/list", Route::ListResources),
            ("resources/read", Route::Read),
            ("completion/complete", Route::Complete),
            ("tasks/get", Route::Forward),
            ("Tools/Call", Route::Forward),
            ("tools/call ", Route::Forward),
            ("", Route::Forward),
        ];
        for (method, route) in table {
            assert_eq!(Route::of(method), route, "{method:?}");
        }
        assert_eq!(Route::of("tools/call").used(), Some(Kind::Tool));
        assert_eq!(Route::of("prompts/get").listed(), None);
        assert_eq!(Route::of("prompts/list").listed(), Some(Kind::Prompt));
        assert_eq!(Route::of("resources/read").used(), None);
        let keys = [
            ("tools/list", Some("tools")),
            ("prompts/list", Some("prompts")),
            ("resources/list", Some("resources")),
            ("resources/templates/list", Some("resourceTemplates")),
            ("tools/call", None),
            ("resources/read", None),
        ];
        for (method, key) in keys {
            assert_eq!(Route::of(method).list_key(), key, "{method}");
        }
        assert!(Route::of("resources/read").cacheable());
        assert!(Route::of("tools/list").cacheable());
        assert!(!Route::of("tools/call").cacheable());
        assert!(!Route::of("completion/complete").cacheable());
    }

    #[test]
    fn every_server_request_has_its_capability() {
        let table = [
            ("sampling/createMessage", Ask::Sampling),
            ("elicitation/create", Ask::Elicitation),
            ("roots/list", Ask::Roots),
            ("ping", Ask::Other),
            ("Roots/List", Ask::Other),
        ];
        for (method, ask) in table {
            assert_eq!(Ask::of(method), ask, "{method:?}");
        }
    }

    #[test]
    fn every_notification_method_has_its_class() {
        let table = [
            ("notifications/initialized", Notice::Initialized),
            ("notifications/cancelled", Notice::Cancelled),
            ("notifications/progress", Notice::Progress),
            ("notifications/message", Notice::Log),
            (
                "notifications/tools/list_changed",
                Notice::ListChanged(Some(Kind::Tool)),
            ),
            (
                "notifications/prompts/list_changed",
                Notice::ListChanged(Some(Kind::Prompt)),
            ),
            (
                "notifications/resources/list_changed",
                Notice::ListChanged(None),
            ),
            ("notifications/resources/updated", Notice::ResourceUpdated),
            (
                "notifications/subscriptions/acknowledged",
                Notice::Acknowledged,
            ),
            ("notifications/roots/list_changed", Notice::Other),
            ("notifications/elicitation/complete", Notice::Other),
            ("notifications/unknown", Notice::Other),
        ];
        for (method, class) in table {
            assert_eq!(Notice::of(method), class, "{method:?}");
        }
    }
}
