//! Typed MCP messages of every revision (2024-11-05 to 2026-07-28).
//!
//! One Rust type per schema definition, named as in the revisions' `schema.json`
//! (`CallToolRequestParams`, `ListToolsResult`, `ServerCapabilities`, ...). A type
//! covers the union of its revisions: a field that exists only in some revisions is
//! an `Option` (or an empty-skipped collection), and the doc comment names the
//! revision that added it. Every struct keeps the members it does not model in an
//! `extra` map (`#[serde(flatten)]`), so nothing a newer peer sends is lost on a
//! round trip; `_meta` is kept as [`Meta`].
//!
//! These types are the second, explicit decoding step after [`crate::jsonrpc`]
//! classified a message; this module must not know about transports or sessions.

/// Defines a zero-sized marker type that serializes as one fixed string and
/// deserializes only from that string: the `type` member of a tagged MCP object.
macro_rules! const_tag {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The tag's wire value.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl ::serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, "the string {:?}", $value)
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        if v == $value {
                            Ok($name)
                        } else {
                            Err(E::invalid_value(::serde::de::Unexpected::Str(v), &self))
                        }
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

mod common;

pub use common::*;
mod capabilities;
pub use capabilities::*;
mod content;
pub use content::*;
mod tools;
pub use tools::*;
mod resources;
pub use resources::*;
mod prompts;
pub use prompts::*;
mod completion;
pub use completion::*;
mod logging;
pub use logging::*;
mod notifications;
pub use notifications::*;
mod roots;
pub use roots::*;
mod tasks;
pub use tasks::*;
mod listen;
pub use listen::*;
mod elicitation;
pub use elicitation::*;
mod sampling;
pub use sampling::*;
mod initialize;
pub use initialize::*;
mod discover;
pub use discover::*;
mod errors;
pub use errors::*;
mod mrtr;
pub use mrtr::*;
mod dispatch;
pub use dispatch::*;
