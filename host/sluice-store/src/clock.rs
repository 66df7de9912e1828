//! Timestamps as the store writes them.

use std::time::SystemTime;

use time::OffsetDateTime;

/// The current time as RFC 3339 UTC with milliseconds, for example
/// `2026-11-30T08:15:02.123Z`: fixed width, so the text sorts as the time does (for years
/// 1000 to 9999). The store stamps sessions and audit entries with it; the agent loop may
/// use it for [`Message::created_at`](sluice_protocol::Message::created_at).
pub fn now_rfc3339() -> String {
    format_rfc3339(OffsetDateTime::from(SystemTime::now()))
}

/// `t` in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (milliseconds truncated, not rounded).
fn format_rfc3339(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix_nanos: i128) -> String {
        format_rfc3339(OffsetDateTime::from_unix_timestamp_nanos(unix_nanos).unwrap())
    }

    #[test]
    fn formats_fixed_width_utc_milliseconds() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_735_689_599_999_999_999), "2024-12-31T23:59:59.999Z");
        assert_eq!(at(1_700_000_000_007_000_000), "2023-11-14T22:13:20.007Z");
        let offset = OffsetDateTime::from_unix_timestamp(0)
            .unwrap()
            .to_offset(time::UtcOffset::from_hms(5, 30, 0).unwrap());
        assert_eq!(format_rfc3339(offset), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn now_parses_back_as_rfc3339() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 24, "{now}");
        let parsed =
            OffsetDateTime::parse(&now, &time::format_description::well_known::Rfc3339).unwrap();
        assert_eq!(format_rfc3339(parsed), now);
    }
}
