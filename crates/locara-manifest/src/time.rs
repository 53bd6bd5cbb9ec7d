//! Timestamps Locara writes and says (a revocation's date, a manifest's validation time, a
//! certificate's expiry): RFC 3339 in UTC to the second, computed without a calendar
//! dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 in UTC, to the second, e.g. `2025-01-02T03:04:05Z`; a time before 1970
/// is the epoch.
#[must_use]
pub fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_utc_gives_the_calendar_date_and_time() {
        let at = |secs| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.
        assert_eq!(at(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(at(1_735_689_599), "2024-12-31T23:59:59Z");
    }
}
