//! Pacing the reads of a burst. A server that writes each event on its own wakes a reader
//! that keeps up once per event or so, and every wake-up costs a context switch, a read and
//! an ACK: more than decoding the few events that read brings. When reads keep finding
//! their data already waiting, a short pause before the next read lets it take everything
//! that arrived meanwhile. A stream whose events come apart (a model's tokens, tens of
//! milliseconds apart) never pauses; during a burst a byte waits at most [`PAUSE`] longer.

use std::time::Duration;

/// A read that returned within this found its data waiting (or nearly).
const QUICK: Duration = Duration::from_micros(250);
/// Quick reads in a row that make a burst: more than a short reply (a tool call, a
/// sentence) takes, so that only a long stream is ever paced.
const BURST_READS: u32 = 32;
/// The pause before a read during a burst: far below what a person sees (a frame is 16 ms),
/// long enough for one read to take a few hundred small events.
pub const PAUSE: Duration = Duration::from_millis(1);

/// The reads of one exchange so far.
#[derive(Debug, Default)]
pub struct Pace {
    quick_reads: u32,
    pause_next: bool,
}

impl Pace {
    /// How long to wait before the next read.
    pub fn pause(&self) -> Option<Duration> {
        self.pause_next.then_some(PAUSE)
    }

    /// A read waited `waited` and returned `read` bytes into `room` free bytes.
    pub fn record(&mut self, waited: Duration, read: usize, room: usize) {
        self.quick_reads = match waited < QUICK && read > 0 {
            true => self.quick_reads.saturating_add(1),
            false => 0,
        };
        // A read that half filled the buffer had plenty waiting: reading again at once is
        // already efficient, and pausing would only slow a fast stream down.
        self.pause_next = self.quick_reads >= BURST_READS && read < room / 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOM: usize = 64 * 1024;

    fn after(reads: &[(u64, usize)]) -> Pace {
        let mut pace = Pace::default();
        for &(micros, read) in reads {
            pace.record(Duration::from_micros(micros), read, ROOM);
        }
        pace
    }

    #[test]
    fn only_a_run_of_quick_small_reads_pauses_the_next_one() {
        let burst = BURST_READS as usize;
        assert_eq!(
            after(&vec![(5, 300); burst - 1]).pause(),
            None,
            "a short reply"
        );
        assert_eq!(after(&vec![(5, 300); burst]).pause(), Some(PAUSE));
        assert_eq!(after(&vec![(5, 300); burst * 10]).pause(), Some(PAUSE));
    }

    #[test]
    fn a_read_that_waited_ends_the_burst() {
        // Tokens 20 ms apart: every read waits for its data.
        assert_eq!(after(&[(20_000, 40); 50]).pause(), None);
        let burst = BURST_READS as usize;
        let mut reads = vec![(5, 300); burst + 2];
        reads.push((900, 300));
        assert_eq!(after(&reads).pause(), None, "the burst is over");
        reads.extend(vec![(5, 300); burst - 1]);
        assert_eq!(
            after(&reads).pause(),
            None,
            "a new burst needs as many again"
        );
        reads.push((5, 300));
        assert_eq!(after(&reads).pause(), Some(PAUSE));
    }

    #[test]
    fn a_read_that_half_fills_the_buffer_or_finds_the_end_does_not_pause() {
        let mut reads = vec![(5, 300); BURST_READS as usize + 2];
        reads.push((5, ROOM / 2));
        assert_eq!(after(&reads).pause(), None, "plenty was waiting");
        reads.push((5, 300));
        assert_eq!(after(&reads).pause(), Some(PAUSE), "still a burst");
        reads.push((5, 0));
        assert_eq!(after(&reads).pause(), None, "the end of the stream");
    }
}
