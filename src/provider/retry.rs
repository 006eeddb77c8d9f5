//! When and how long to wait before retrying a request: which failures are retryable,
//! exponential backoff with jitter, `Retry-After` (delta-seconds or HTTP-date), and a sleep
//! that a [`CancelToken`] interrupts at once.
//!
//! Retries happen only before a response body starts, or after a body that carried nothing
//! to show (an empty reply); `openai` and `net` decide what that means, this module only does
//! the arithmetic, the waiting, and the [`Retry`] report the caller shows (the provider never
//! prints).

use std::fmt;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::RetryPolicy;
use crate::cancel::CancelToken;

/// Waits before the quick retries of a server that refused or could not be resolved on first
/// contact: enough to ride out a server still starting, short enough that a dead endpoint is
/// reported within a few seconds instead of after the whole backoff schedule.
pub const FIRST_CONTACT_WAITS: [Duration; 2] =
    [Duration::from_millis(250), Duration::from_millis(750)];

/// One retry about to happen, reported to the caller before the wait so it can show a line
/// (text mode, a stream-json notice, the chat status line).
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// The attempt about to be made, the first request being attempt 1.
    pub attempt: u32,
    /// Attempts the policy allows in all (`max_retries + 1`).
    pub max_attempts: u32,
    pub wait: Duration,
    /// The failure being retried, as its error message.
    pub reason: String,
    /// Its HTTP status; `None` when no response arrived (a connection error, a timeout) or the
    /// reply was empty.
    pub status: Option<u16>,
}

impl fmt::Display for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; retrying in {} (attempt {} of {})",
            self.reason,
            describe_wait(self.wait),
            self.attempt,
            self.max_attempts
        )
    }
}

/// A wait as people read it: milliseconds under a second, else seconds with one decimal.
pub fn describe_wait(wait: Duration) -> String {
    if wait < Duration::from_secs(1) {
        format!("{} ms", wait.as_millis())
    } else if wait.subsec_millis() / 100 == 0 {
        format!("{} s", wait.as_secs())
    } else {
        format!("{}.{} s", wait.as_secs(), wait.subsec_millis() / 100)
    }
}

/// Statuses worth another try: timeouts, rate limits and server-side failures.
pub fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// The wait before retry number `attempt` (0-based). A server's `Retry-After` wins over the
/// backoff, capped by `policy.max_retry_after`.
pub fn delay(
    policy: &RetryPolicy,
    attempt: u32,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Duration {
    if let Some(wait) = retry_after.and_then(|value| parse_retry_after(value, now)) {
        return wait.min(policy.max_retry_after);
    }
    let base = policy
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(attempt.min(30)))
        .min(policy.max_backoff);
    // "Equal jitter": half fixed, half random, so concurrent clients spread out but the
    // wait still grows.
    let half = base / 2;
    half + half.mul_f64(jitter_fraction())
}

/// What is left of one request's retry time ([`RetryPolicy::max_total_wait`]): a server
/// that keeps failing is given up on after about that long, whatever `max_retries` allows.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    left: Duration,
}

impl Budget {
    pub fn new(policy: &RetryPolicy) -> Budget {
        Budget {
            left: policy.max_total_wait,
        }
    }

    /// The wait to make of `wait`, shortened to what is left; `None` once nothing is.
    pub fn take(&mut self, wait: Duration) -> Option<Duration> {
        if self.left.is_zero() {
            return None;
        }
        let wait = wait.min(self.left);
        self.left -= wait;
        Some(wait)
    }
}

/// `Retry-After` as delta-seconds or an HTTP-date; `None` when it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Some(Duration::from_secs_f64(seconds.min(1e9)));
        }
        return None;
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the Unix epoch for the three date formats HTTP/1.1 allows:
/// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`.
pub fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let (day, month, year, time) = match parts.as_slice() {
        [_, day, month, year, time, "GMT"] => (*day, *month, *year, *time),
        [_, date, time, "GMT"] => {
            let mut it = date.split('-');
            let (day, month, year) = (it.next()?, it.next()?, it.next()?);
            (day, month, year, *time)
        }
        [_, month, day, time, year] => (*day, *month, *year, *time),
        _ => return None,
    };
    let day: u64 = day.parse().ok()?;
    let month = month_number(month)?;
    let mut year: u64 = year.parse().ok()?;
    if year < 100 {
        // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
        year += if year < 70 { 2000 } else { 1900 };
    }
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 || year < 1970 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

fn month_number(name: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let lower = name.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == lower)
        .map(|i| i as u64 + 1)
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm), for years from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A fraction in [0, 1) that differs between calls and processes. Not cryptographic: it
/// only has to keep clients from retrying in lockstep.
fn jitter_fraction() -> f64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            h.finish() | 1
        });
    }
    STATE.with(|state| {
        // xorshift64*
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// The wait was cut short by cancellation.
#[derive(Debug, PartialEq, Eq)]
pub struct Interrupted;

/// Sleeps for `duration` unless `cancel` fires first.
pub fn sleep(duration: Duration, cancel: &CancelToken) -> Result<(), Interrupted> {
    let (tx, rx) = mpsc::channel::<()>();
    let _guard = cancel.on_cancel(move || {
        let _ = tx.send(());
    });
    match rx.recv_timeout(duration) {
        Err(mpsc::RecvTimeoutError::Timeout) if !cancel.is_cancelled() => Ok(()),
        _ => Err(Interrupted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn policy() -> RetryPolicy {
        RetryPolicy::default()
    }

    #[test]
    fn the_retry_budget_shortens_the_last_wait_and_then_refuses() {
        let mut budget = Budget::new(&RetryPolicy {
            max_total_wait: Duration::from_secs(20),
            ..policy()
        });
        let mut waited = Duration::ZERO;
        let mut retries = 0;
        // The default backoff, whatever its jitter, fits about half a dozen retries.
        while let Some(wait) = budget.take(delay(&policy(), retries, None, SystemTime::now())) {
            waited += wait;
            retries += 1;
            assert!(retries < 20, "the budget never ran out");
        }
        assert_eq!(waited, Duration::from_secs(20));
        assert!((4..=10).contains(&retries), "{retries} retries");
    }

    #[test]
    fn a_retry_reads_as_reason_wait_and_attempt() {
        let retry = Retry {
            attempt: 2,
            max_attempts: 11,
            wait: Duration::from_millis(1500),
            reason: "provider: HTTP 503: busy".into(),
            status: Some(503),
        };
        assert_eq!(
            retry.to_string(),
            "provider: HTTP 503: busy; retrying in 1.5 s (attempt 2 of 11)"
        );
        assert_eq!(describe_wait(Duration::from_millis(300)), "300 ms");
        assert_eq!(describe_wait(Duration::from_secs(300)), "300 s");
        // The fail-fast budget of the issue: a dead endpoint is reported within 3 s.
        let quick: Duration = FIRST_CONTACT_WAITS.iter().sum();
        assert!(quick <= Duration::from_secs(1), "{quick:?}");
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 429, 500, 502, 503, 504, 599] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_doubles_from_500ms_with_jitter_and_caps_at_8s() {
        let now = SystemTime::now();
        for attempt in 0..12 {
            let full = Duration::from_millis(500)
                .saturating_mul(1 << attempt)
                .min(Duration::from_secs(8));
            for _ in 0..50 {
                let d = delay(&policy(), attempt, None, now);
                assert!(
                    d >= full / 2 && d <= full,
                    "attempt {attempt}: {d:?} vs {full:?}"
                );
            }
        }
        let huge = delay(&policy(), u32::MAX, None, now);
        assert!(huge <= Duration::from_secs(8));
    }

    #[test]
    fn retry_after_seconds_and_dates_win_over_backoff_and_are_capped() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(delay(&policy(), 5, Some("2"), now), Duration::from_secs(2));
        assert_eq!(delay(&policy(), 0, Some(" 0 "), now), Duration::ZERO);
        assert_eq!(
            delay(&policy(), 0, Some("3600"), now),
            Duration::from_secs(60)
        );
        assert_eq!(
            delay(&policy(), 0, Some("Sun, 06 Nov 1994 08:50:07 GMT"), now),
            Duration::from_secs(30)
        );
        assert_eq!(
            delay(&policy(), 0, Some("Sunday, 06-Nov-94 08:49:47 GMT"), now),
            Duration::from_secs(10)
        );
        assert_eq!(
            delay(&policy(), 0, Some("Sun Nov  6 08:49:42 1994"), now),
            Duration::from_secs(5)
        );
        // A date in the past means "now".
        assert_eq!(
            delay(&policy(), 0, Some("Sat, 05 Nov 1994 08:49:37 GMT"), now),
            Duration::ZERO
        );
        // Garbage falls back to the backoff.
        let d = delay(&policy(), 0, Some("soon"), now);
        assert!(d >= Duration::from_millis(250) && d <= Duration::from_millis(500));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn http_date_matches_known_epoch_values() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
        assert_eq!(parse_http_date("Tue, 32 Feb 2028 12:00:00 GMT"), None);
        assert_eq!(parse_http_date("not a date"), None);
    }

    #[test]
    fn sleep_returns_early_when_cancelled_from_another_thread() {
        let cancel = CancelToken::new();
        let (ready_tx, ready_rx) = mpsc::channel();
        let c = cancel.clone();
        let worker = std::thread::spawn(move || {
            ready_tx.send(()).unwrap();
            let start = Instant::now();
            let result = sleep(Duration::from_secs(600), &c);
            (result, start.elapsed())
        });
        ready_rx.recv().unwrap();
        cancel.cancel();
        let (result, elapsed) = worker.join().unwrap();
        assert_eq!(result, Err(Interrupted));
        assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
        assert_eq!(sleep(Duration::from_millis(1), &CancelToken::new()), Ok(()));
        assert_eq!(sleep(Duration::from_secs(600), &cancel), Err(Interrupted));
    }
}
