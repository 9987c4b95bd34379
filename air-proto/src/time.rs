//! Timestamps on the wire: RFC 3339 strings in UTC (`ISOTimeString` in the seeds).

use std::time::SystemTime;

/// An RFC 3339 / ISO 8601 UTC timestamp, e.g. `2026-05-26T10:00:00.000000Z`.
pub type IsoTime = String;

/// The current time as an [`IsoTime`] with microsecond precision.
pub fn now_iso() -> IsoTime {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}

/// True when `s` parses as an RFC 3339 timestamp.
pub fn is_iso_time(s: &str) -> bool {
    humantime::parse_rfc3339_weak(s).is_ok()
}
