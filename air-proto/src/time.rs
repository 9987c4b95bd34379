//! Timestamps on the wire: RFC 3339 strings in UTC (`ISOTimeString` in the seeds).

use std::time::SystemTime;

/// An RFC 3339 / ISO 8601 UTC timestamp, e.g. `2026-05-26T10:00:00.000000Z`.
pub type IsoTime = String;

/// The current time as an [`IsoTime`] with microsecond precision.
pub fn now_iso() -> IsoTime {
    iso(SystemTime::now())
}

/// A time as an [`IsoTime`] with microsecond precision.
pub fn iso(t: SystemTime) -> IsoTime {
    humantime::format_rfc3339_micros(t).to_string()
}

/// Parses an RFC 3339 timestamp: `Z` or a numeric offset (`+02:00`), with or without
/// fractional seconds.
pub fn parse(s: &str) -> Option<SystemTime> {
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Some(t);
    }
    let split = s.len().checked_sub(6)?;
    let (base, offset) = (s.get(..split)?, s.get(split..)?);
    let bytes = offset.as_bytes();
    if bytes.len() != 6 || bytes[3] != b':' || !matches!(bytes[0], b'+' | b'-') {
        return None;
    }
    let hours: u64 = offset.get(1..3)?.parse().ok()?;
    let minutes: u64 = offset.get(4..6)?.parse().ok()?;
    if hours > 23 || minutes > 59 {
        return None;
    }
    let shift = std::time::Duration::from_secs(hours * 3600 + minutes * 60);
    let local = humantime::parse_rfc3339_weak(&format!("{base}Z")).ok()?;
    // `+02:00` is two hours ahead of UTC: subtract to get UTC.
    if bytes[0] == b'+' {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

/// True when `s` parses as an RFC 3339 timestamp.
pub fn is_iso_time(s: &str) -> bool {
    parse(s).is_some()
}

/// `s` in the one form air stores: UTC with microseconds (`…T10:00:00.000000Z`), so
/// that timestamps compare correctly as text. `None` if `s` is not RFC 3339.
pub fn canonical(s: &str) -> Option<IsoTime> {
    Some(humantime::format_rfc3339_micros(parse(s)?).to_string())
}
