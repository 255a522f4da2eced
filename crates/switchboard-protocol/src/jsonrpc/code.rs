//! Error codes: JSON-RPC 2.0's reserved ones and MCP's, by revision.
//!
//! Sources: JSON-RPC 2.0 §5.1; MCP base protocol and schema of each revision
//! (`URL_ELICITATION_REQUIRED` in 2025-11-25; `HEADER_MISMATCH`,
//! `MISSING_REQUIRED_CLIENT_CAPABILITY`, `UNSUPPORTED_PROTOCOL_VERSION` in 2026-07-28).

/// Invalid JSON was received (JSON-RPC 2.0). Answered with `id: null`.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object (JSON-RPC 2.0): bad `jsonrpc`, `id: null`,
/// both `result` and `error`, an empty batch, a batch where the revision has none.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (JSON-RPC 2.0). In 2026-07-28 also a
/// method gated by a server capability that was not advertised; HTTP status 404 there.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (JSON-RPC 2.0). MCP: unknown tool or prompt, bad
/// arguments, bad cursor, bad log level; in 2026-07-28 also resource not found and a
/// missing required `_meta` field.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error (JSON-RPC 2.0).
pub const INTERNAL_ERROR: i64 = -32603;

/// Resource not found (2024-11-05 to 2025-11-25, SHOULD). 2026-07-28 MUST NOT send it
/// (it uses [`INVALID_PARAMS`]) but clients SHOULD still accept it.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// `URLElicitationRequiredError` (2025-11-25 only), `data.elicitations[]` lists the
/// URL-mode elicitations the client must complete first.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// `HeaderMismatch` (2026-07-28): an `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
/// or `Mcp-Param-*` header is missing, malformed or disagrees with the body. HTTP 400.
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapability` (2026-07-28): the request needs a client
/// capability it did not declare; `data.requiredCapabilities` is a `ClientCapabilities`
/// object. HTTP 400.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersion` (2026-07-28): `data{supported: [..], requested}`. HTTP 400.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The JSON-RPC "server error" range reserved for implementation-defined errors
/// (JSON-RPC 2.0 §5.1). 2026-07-28 keeps -32000..=-32019 for legacy implementation use
/// and reserves -32020..=-32099 for the spec.
pub const SERVER_ERROR_RANGE: std::ops::RangeInclusive<i64> = -32099..=-32000;

/// The constant's name for a known code, e.g. `"INVALID_PARAMS"`, for logs.
pub fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "PARSE_ERROR",
        INVALID_REQUEST => "INVALID_REQUEST",
        METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
        INVALID_PARAMS => "INVALID_PARAMS",
        INTERNAL_ERROR => "INTERNAL_ERROR",
        RESOURCE_NOT_FOUND => "RESOURCE_NOT_FOUND",
        URL_ELICITATION_REQUIRED => "URL_ELICITATION_REQUIRED",
        HEADER_MISMATCH => "HEADER_MISMATCH",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "MISSING_REQUIRED_CLIENT_CAPABILITY",
        UNSUPPORTED_PROTOCOL_VERSION => "UNSUPPORTED_PROTOCOL_VERSION",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_specs() {
        assert_eq!(
            [
                PARSE_ERROR,
                INVALID_REQUEST,
                METHOD_NOT_FOUND,
                INVALID_PARAMS,
                INTERNAL_ERROR
            ],
            [-32700, -32600, -32601, -32602, -32603]
        );
        assert_eq!(RESOURCE_NOT_FOUND, -32002);
        assert_eq!(URL_ELICITATION_REQUIRED, -32042);
        assert_eq!(
            [
                HEADER_MISMATCH,
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                UNSUPPORTED_PROTOCOL_VERSION
            ],
            [-32020, -32021, -32022]
        );
        assert_eq!(name(-32022), Some("UNSUPPORTED_PROTOCOL_VERSION"));
        assert_eq!(name(1), None);
        assert!(SERVER_ERROR_RANGE.contains(&HEADER_MISMATCH));
    }
}
